"""Saves a language model with multi-token prediction (DeepSeek-V3's MTP
module), traced, with PyTorch's logits, for
test/TrainStep/multi-token-prediction.test: a trunk of two blocks and a
head; an MTP module that joins the trunk's normed states with the
embedding of the next token (eh_proj of their concatenation), runs a
block and the shared head, and scores the token after next with
F.cross_entropy inside the model: with reduction 'mean' on [N, V]
logits, and with reduction 'sum' on [B, V, S] logits (classes along dim
1) ignoring the padding id, divided by the tokens counted. The model
returns the main logits and the weighted MTP loss, which titan adds to
its cross-entropy. With --smoothed both losses weigh the classes (a
buffer) and smooth the labels (0.1 and 0.2), which titan writes out.

usage: make_mtp_lm.py OUT [--smoothed]

OUT receives model.pt (forward(tokens: int64 [2, 32]) -> (logits,
loss)), tokens.npy and logits.npy.
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Import", "Inputs"))
from traced_lm import save_traced_lm  # noqa: E402


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 2 * dim)
        self.down = nn.Linear(2 * dim, dim)

    def forward(self, h):
        return h + self.down(F.gelu(self.up(self.norm(h))))


class MtpLM(nn.Module):
    def __init__(self, vocab_size=256, dim=32, pad_id=3, weight=0.3, smoothed=False):
        super().__init__()
        self.pad_id = pad_id
        self.weight = weight
        self.smoothing = (0.1, 0.2) if smoothed else (0.0, 0.0)
        classes = torch.rand(vocab_size) + 0.5 if smoothed else torch.ones(vocab_size)
        self.register_buffer("class_weights", classes)
        self.weighted = smoothed
        self.embedding = nn.Embedding(vocab_size, dim)
        self.layers = nn.ModuleList(Block(dim) for _ in range(2))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab_size, bias=False)
        self.hnorm = nn.LayerNorm(dim)
        self.enorm = nn.LayerNorm(dim)
        self.eh_proj = nn.Linear(2 * dim, dim, bias=False)
        self.mtp_block = Block(dim)

    def forward(self, tokens):
        b, s = tokens.shape
        h = self.embedding(tokens)
        for layer in self.layers:
            h = layer(h)
        logits = self.head(self.norm(h))
        # Position i of the MTP module predicts token i + 2 from the trunk's
        # state at i and the embedding of token i + 1.
        joined = torch.cat([self.hnorm(h[:, :-2]), self.enorm(self.embedding(tokens[:, 1:-1]))], -1)
        mtp = self.head(self.norm(self.mtp_block(self.eh_proj(joined))))
        targets = tokens[:, 2:]
        classes = self.class_weights if self.weighted else None
        mean = F.cross_entropy(mtp.reshape(-1, mtp.shape[-1]), targets.reshape(-1),
                               weight=classes, label_smoothing=self.smoothing[0])
        total = F.cross_entropy(mtp.transpose(1, 2), targets, ignore_index=self.pad_id, reduction="sum",
                                weight=classes, label_smoothing=self.smoothing[1])
        counted = (targets != self.pad_id).sum()
        loss = self.weight * 0.5 * (mean + total / counted)
        return logits, loss


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(MtpLM(smoothed="--smoothed" in sys.argv[2:]), sys.argv[1])


if __name__ == "__main__":
    main()
