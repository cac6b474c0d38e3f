"""Saves a small language model with dropout after the embeddings and on
the residual branch (nn.Dropout(0.25), as GPT-2's embd_pdrop and
resid_pdrop), traced in training mode.

usage: make_dropout_lm.py OUT

OUT receives model.pt (forward(tokens: int64 [batch, seq]) -> logits).
"""

import os
import sys
import warnings

import torch
from torch import nn


class DropoutLM(nn.Module):
    def __init__(self, vocab_size=256, dim=16, max_seq=64, p=0.25):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.pos = nn.Embedding(max_seq, dim)
        self.drop = nn.Dropout(p)
        self.fc = nn.Linear(dim, 4 * dim)
        self.proj = nn.Linear(4 * dim, dim)
        self.head = nn.Linear(dim, vocab_size)

    def forward(self, tokens):
        x = self.drop(self.embed(tokens) + self.pos(torch.arange(tokens.shape[1])))
        x = x + self.drop(self.proj(torch.tanh(self.fc(x))))
        return self.head(x)


def save_traced_lm(make_model, out: str) -> None:
    """Traces make_model() (seeded, in training mode) on a [2, 32] batch
    of tokens below 256 and saves it as OUT/model.pt."""
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    os.makedirs(out, exist_ok=True)
    batch = torch.randint(0, 256, (2, 32), generator=torch.Generator().manual_seed(1))
    torch.jit.trace(make_model().train(), batch, check_trace=False).save(
        os.path.join(out, "model.pt"))


if __name__ == "__main__":
    save_traced_lm(DropoutLM, sys.argv[1])
