"""Saves a small language model whose gradients depend on things that stop
them, traced, with PyTorch's logits: nn.Embedding(padding_idx=p) (the
padding row gets no gradient; p is the first token of the batch, so the
batch uses it), a normalization by a detached norm, a gain the model reads
only detached and a module it never calls (those two parameters get no
gradient at all, so torch.optim.AdamW leaves them as they are), and
F.normalize of hidden states zeroed at the padding positions (the norm of
a zero vector has gradient 0 in torch).

usage: make_padding_detach_lm.py OUT

OUT receives model.pt (forward(tokens: int64 [2, 32]) -> logits),
tokens.npy and logits.npy.
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

# The shared tracing of the importer's tests (test/Import/Inputs).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Import", "Inputs"))
from traced_lm import batch_of, save_traced_lm  # noqa: E402


class PaddingDetachLM(nn.Module):
    def __init__(self, padding_idx, vocab_size=256, dim=64):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim, padding_idx=padding_idx)
        self.proj = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab_size)
        self.gain = nn.Parameter(torch.rand(dim) + 0.5)
        self.unused = nn.Linear(dim, dim)

    def forward(self, tokens):
        hidden = self.embed(tokens)
        hidden = hidden + torch.tanh(self.proj(hidden))
        hidden = hidden / hidden.norm(dim=-1, keepdim=True).detach().clamp(min=1e-6)
        hidden = hidden * self.gain.detach()
        # Zero vectors at the padding positions: their norm's gradient is 0.
        kept = hidden * (tokens != self.embed.padding_idx)[..., None]
        hidden = hidden + F.normalize(kept, dim=-1)
        return self.head(hidden)


def main() -> None:
    torch.manual_seed(0)
    padding_idx = int(batch_of(256)[0, 0])
    save_traced_lm(PaddingDetachLM(padding_idx), sys.argv[1])


if __name__ == "__main__":
    main()
