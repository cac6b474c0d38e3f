"""Saves a small language model that reads a boolean buffer (a per-position
feature mask, kept as torch.bool), traced.

usage: make_bool_buffer_lm.py OUT

OUT receives model.pt (forward(tokens: int64 [batch, seq]) -> logits).
"""

import os
import sys

import torch
from torch import nn

# The shared tracing of the importer's tests (test/Import/Inputs).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Import", "Inputs"))
from traced_lm import save_traced_lm  # noqa: E402


class BoolBufferLM(nn.Module):
    def __init__(self, vocab_size=256, dim=16, max_seq=64):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.register_buffer("keep", torch.rand(max_seq, dim, generator=torch.Generator().manual_seed(3)) > 0.3)
        self.head = nn.Linear(dim, vocab_size)

    def forward(self, tokens):
        x = self.embed(tokens)
        x = torch.where(self.keep[: tokens.shape[1]], x, torch.zeros_like(x))
        return self.head(torch.tanh(x))


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(BoolBufferLM(), sys.argv[1])


if __name__ == "__main__":
    main()
