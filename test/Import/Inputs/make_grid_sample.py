"""Saves a module of F.grid_sample, traced and scripted, with PyTorch's
outputs, for test/Import/grid-sample.test: every interpolation titan
samples with ('bilinear', 'nearest') under every padding mode ('zeros',
'border', 'reflection'), align_corners either way, at points that reach
past the plane (the grid is 1.6 x a normal sample); and one plane of
20 x 16 positions (past the one-hot gather's 256).

usage: make_grid_sample.py OUT

OUT receives traced.pt, scripted.pt (forward(x: f32 [2, 3, 5, 7], grid:
f32 [2, 4, 6, 2], big: f32 [1, 2, 20, 16], big_grid: f32 [1, 3, 5, 2])
-> 13 tensors), x.npy, grid.npy, big.npy, big_grid.npy and
expected/output<k>.npy.
"""

import os
import sys
from typing import List

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_traced_and_scripted  # noqa: E402


class GridSamples(nn.Module):
    def forward(self, x, grid, big, big_grid):
        outputs: List[torch.Tensor] = []
        for mode in ["bilinear", "nearest"]:
            for padding in ["zeros", "border", "reflection"]:
                for align in [False, True]:
                    outputs.append(F.grid_sample(x, grid, mode=mode, padding_mode=padding,
                                                 align_corners=align))
        outputs.append(F.grid_sample(big, big_grid, align_corners=False))
        return outputs


def main() -> None:
    torch.manual_seed(0)
    save_traced_and_scripted(GridSamples(), sys.argv[1],
                             {"x": torch.randn(2, 3, 5, 7), "grid": 1.6 * torch.randn(2, 4, 6, 2),
                              "big": torch.randn(1, 2, 20, 16),
                              "big_grid": torch.rand(1, 3, 5, 2) * 2 - 1})


if __name__ == "__main__":
    main()
