"""Saves a module of embedding bags, traced and scripted, with PyTorch's
outputs, for test/Import/embedding-bag.test: nn.EmbeddingBag in mode sum
with offsets given at run time (one bag empty), mean over a 2-d input
(its rows are the bags), max, per-sample weights, include_last_offset
and padding_idx.

usage: make_embedding_bag.py OUT

OUT receives traced.pt and scripted.pt (forward(ids: int64 [10],
offsets: int64 [4], rows: int64 [3, 4], w: f32 [10]) -> 6 tensors),
ids.npy, offsets.npy, rows.npy, w.npy and expected/output<k>.npy.
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_traced_and_scripted  # noqa: E402


class Bags(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.sum = nn.EmbeddingBag(12, 5, mode="sum")
        self.mean = nn.EmbeddingBag(12, 5, mode="mean")
        self.max = nn.EmbeddingBag(12, 5, mode="max")
        self.padded = nn.EmbeddingBag(12, 5, mode="mean", padding_idx=3)

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor, rows: torch.Tensor,
                w: torch.Tensor):
        return (
            self.sum(ids, offsets),
            self.mean(rows),
            self.max(ids, offsets),
            self.sum(ids, offsets, per_sample_weights=w),
            F.embedding_bag(ids, self.sum.weight, torch.cat([offsets, torch.tensor([10])]),
                            mode="mean", include_last_offset=True),
            self.padded(ids, offsets),
        )


def main() -> None:
    torch.manual_seed(0)
    ids = torch.tensor([1, 3, 5, 3, 0, 11, 7, 7, 2, 3])
    offsets = torch.tensor([0, 3, 3, 6])  # bag 1 is empty
    rows = torch.randint(0, 12, (3, 4))
    save_traced_and_scripted(Bags(), sys.argv[1],
                             {"ids": ids, "offsets": offsets, "rows": rows, "w": torch.rand(10)})


if __name__ == "__main__":
    main()
