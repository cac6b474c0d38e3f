"""Saves a language model that looks up two token streams in one padded
table, traced, for test/Runtime/two-stream-lookups.test: each row's
halves (BART's source and target in one forward) embedded by one
nn.Embedding(padding_idx=1), joined, mixed by a block and projected.

usage: make_two_stream_lm.py OUT

OUT receives model.pt (forward(tokens: int64 [batch, 32]) -> logits).
"""

import os
import sys
import warnings

import torch
import torch.nn.functional as F
from torch import nn


class TwoStreamLM(nn.Module):
    def __init__(self, vocab_size: int = 256, dim: int = 32) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim, padding_idx=1)
        self.mix = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab_size, bias=False)

    def forward(self, tokens):
        half = tokens.shape[1] // 2
        source, target = tokens[:, :half], tokens[:, half:]
        h = torch.cat([self.embedding(source), self.embedding(target)], dim=1)
        return self.head(h + F.gelu(self.mix(h)))


def main() -> None:
    warnings.filterwarnings("ignore")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    tokens = torch.randint(0, 256, (4, 32), generator=torch.Generator().manual_seed(1))
    torch.jit.trace(TwoStreamLM().eval(), tokens, check_trace=False).save(os.path.join(out, "model.pt"))


if __name__ == "__main__":
    main()
