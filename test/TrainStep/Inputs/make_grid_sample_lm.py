"""Saves a language model that samples its hidden states with
F.grid_sample at points it computes, traced, with PyTorch's logits, for
test/TrainStep/grid-sample.test: each block views the normed hidden
states [b, s, 32] as 4 planes of 8 x s, samples them bilinearly (zeros
padding) and nearest (reflection, align_corners) at 8 x s points a linear
layer of the hidden states gives (tanh-bounded, 1.2 x), and projects the
samples back; the gradients reach both the planes and the points.

usage: make_grid_sample_lm.py OUT

OUT receives model.pt (forward(tokens: int64 [2, 32]) -> logits),
tokens.npy and logits.npy.
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Import", "Inputs"))
from traced_lm import BlocksLM, save_traced_lm  # noqa: E402


class SamplingBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.points = nn.Linear(dim, 16)
        self.out = nn.Linear(2 * dim, dim)

    def forward(self, x):
        h = self.norm(x)
        b, s, d = h.shape
        planes = h.transpose(1, 2).reshape(b, 4, d // 4, s)
        grid = 1.2 * torch.tanh(self.points(h)).reshape(b, s, 8, 2).transpose(1, 2)
        smooth = F.grid_sample(planes, grid, align_corners=False)
        nearest = F.grid_sample(planes, grid, mode="nearest", padding_mode="reflection",
                                align_corners=True)
        sampled = torch.cat([smooth, nearest], dim=1).reshape(b, 2 * d, s).transpose(1, 2)
        return x + self.out(sampled)


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(BlocksLM(SamplingBlock), sys.argv[1])


if __name__ == "__main__":
    main()
