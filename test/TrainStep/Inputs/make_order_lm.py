"""Saves a language model built on order statistics of its features,
traced, with PyTorch's logits, for test/TrainStep/order-statistics.test:
each block adds the features' median, their 0.3-quantile (between two
of them), their running maximum, the second smallest (kthvalue) and the
bucket of a learned score (bucketize, an embedding of it).

usage: make_order_lm.py OUT

OUT receives model.pt (forward(tokens: int64 [2, 32]) -> logits),
tokens.npy and logits.npy.
"""

import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "Import", "Inputs"))
from traced_lm import BlocksLM, save_traced_lm  # noqa: E402


class OrderBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, dim)
        self.score = nn.Linear(dim, 1)
        self.buckets = nn.Embedding(5, dim)
        self.register_buffer("boundaries", torch.tensor([-0.9, -0.2, 0.25, 0.8]))

    def forward(self, x):
        h = self.up(self.norm(x))
        y = 0.5 * torch.median(h, dim=-1, keepdim=True)[0]
        y = y + 0.5 * torch.quantile(h, 0.3, dim=-1, keepdim=True)
        y = y + 0.3 * torch.cummax(h, dim=-1)[0]
        y = y - 0.5 * torch.kthvalue(h, 2, dim=-1, keepdim=True)[0]
        y = y + self.buckets(torch.bucketize(self.score(h)[..., 0], self.boundaries))
        return x + y


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(BlocksLM(OrderBlock), sys.argv[1])


if __name__ == "__main__":
    main()
