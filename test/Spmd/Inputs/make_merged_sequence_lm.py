"""Saves a small language model whose MLP reads the hidden states with the
sequence merged into the batch, as OPT's decoder layer does
(`x.reshape(-1, x.size(-1))` ... `.view(shape)`), traced.

usage: make_merged_sequence_lm.py OUT

OUT receives model.pt (forward(tokens: int64 [batch, seq]) -> logits).
"""

import os
import sys

import torch
from torch import nn

# The shared tracing of the importer's tests (test/Import/Inputs).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Import", "Inputs"))
from traced_lm import save_traced_lm  # noqa: E402


class MergedSequenceLM(nn.Module):
    def __init__(self, vocab_size=256, dim=16):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)
        self.head = nn.Linear(dim, vocab_size)

    def forward(self, tokens):
        x = self.embed(tokens)
        shape = x.shape
        rows = x.reshape(-1, x.size(-1))
        rows = rows + self.fc2(torch.relu(self.fc1(rows)))
        return self.head(rows.view(shape))


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(MergedSequenceLM(), sys.argv[1])


if __name__ == "__main__":
    main()
