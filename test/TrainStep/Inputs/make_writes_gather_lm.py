"""Saves a small language model whose gradients flow through writes into
slices and selects of a tensor it created (`h[:, 1:] = ...`, `h[:, 0] = ...`,
`h[..., 3] = ...`) and through torch.gather of a parameter by the tokens,
traced, with PyTorch's logits.

usage: make_writes_gather_lm.py OUT

OUT receives model.pt (forward(tokens: int64 [2, 32]) -> logits),
tokens.npy and logits.npy.
"""

import os
import sys

import torch
from torch import nn

# The shared tracing of the importer's tests (test/Import/Inputs).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Import", "Inputs"))
from traced_lm import save_traced_lm  # noqa: E402


class WritesGatherLM(nn.Module):
    def __init__(self, vocab_size=256, dim=16):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.gain = nn.Parameter(torch.rand(dim) + 0.5)
        self.scores = nn.Parameter(torch.randn(vocab_size, dim))
        self.head = nn.Linear(dim, vocab_size)

    def forward(self, tokens):
        x = self.embed(tokens)
        h = torch.zeros_like(x)
        h[:, 1:] = x[:, 1:] * self.gain + x[:, :-1]
        h[:, 0] = torch.tanh(x[:, 0])
        h[..., 3] = x[..., 2] * 2
        batch, seq = tokens.shape
        picked = torch.gather(self.scores[None].expand(batch, -1, -1), 1,
                              tokens[:, :, None].expand(batch, seq, self.scores.shape[1]))
        return self.head(torch.tanh(h + picked))


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(WritesGatherLM(), sys.argv[1])


if __name__ == "__main__":
    main()
