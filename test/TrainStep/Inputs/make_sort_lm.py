"""Saves a language model that sorts and rounds, traced, with PyTorch's
logits, for test/TrainStep/sorting.test: a mixture of experts that ranks
its 8 experts with torch.sort (descending) and keeps the first two (their
scores through the sorted values, their ids through the sorted indices,
scattered into gates); features sorted along the hidden dim feeding a
projection (the gradient goes back through the sort's gather); each
sequence's tokens reordered by the argsort of a learned score and put
back; and position buckets from torch.floor of a square root, torch.round,
torch.ceil and torch.trunc of hidden values (gradient 0, as PyTorch's).

usage: make_sort_lm.py OUT

OUT receives model.pt (forward(tokens: int64 [2, 32]) -> logits),
tokens.npy and logits.npy.
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Import", "Inputs"))
from traced_lm import save_traced_lm  # noqa: E402


class SortedMoE(nn.Module):
    def __init__(self, dim, experts=8, top_k=2):
        super().__init__()
        self.top_k = top_k
        self.router = nn.Linear(dim, experts, bias=False)
        self.up = nn.ModuleList(nn.Linear(dim, dim) for _ in range(experts))

    def forward(self, x):
        logits = self.router(x)
        scores, order = torch.sort(logits, dim=-1, descending=True)
        weights = F.softmax(scores[..., :self.top_k], dim=-1)
        gates = torch.zeros_like(logits).scatter(-1, order[..., :self.top_k], weights)
        out = torch.zeros_like(x)
        for e, up in enumerate(self.up):
            out = out + gates[..., e:e + 1] * F.gelu(up(x))
        return out


class SortLM(nn.Module):
    def __init__(self, vocab_size=256, dim=32, layers=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim)
        self.buckets = nn.Embedding(8, dim)
        self.norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(layers))
        self.moes = nn.ModuleList(SortedMoE(dim) for _ in range(layers))
        self.sorted_features = nn.Linear(dim, dim)
        self.score = nn.Linear(dim, 1)
        self.mix = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab_size)

    def forward(self, tokens):
        b, s = tokens.shape
        positions = torch.arange(s, dtype=torch.float32)
        bucket = torch.floor(torch.sqrt(positions) * 1.25).long()
        x = self.embedding(tokens) + self.buckets(bucket)[None]
        for norm, moe in zip(self.norms, self.moes):
            x = x + moe(norm(x))
        x = x + 0.1 * self.sorted_features(torch.sort(x, dim=-1)[0])
        # Each sequence in the order of a learned score, mixed, put back.
        order = torch.argsort(self.score(x)[..., 0], dim=1)
        rows = order[..., None].expand(b, s, x.shape[2])
        mixed = self.mix(torch.gather(x, 1, rows))
        x = x + torch.zeros_like(x).scatter_add(1, rows, mixed)
        steps = torch.round(x * 4.0) + torch.ceil(x) - torch.trunc(x * 2.0)
        x = x + 0.01 * steps
        return self.head(self.norm(x))


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(SortLM(), sys.argv[1])


if __name__ == "__main__":
    main()
