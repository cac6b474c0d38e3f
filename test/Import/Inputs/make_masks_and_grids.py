"""Saves a module of mask, hash and geometry idioms, for
test/Import/masks-and-grids.test: torch.isin of token ids against special
ids (and inverted, and against one number), logical_xor and ^ of masks, a
hashed n-gram id built with shifts (`(a << 5) + (b >> 1)`, as byte-level
models hash n-grams into embedding tables), logaddexp2, float_power,
torch.pdist (p = 2 and 1), and F.affine_grid (2-d and 3-d, align_corners
or not) feeding F.grid_sample: a spatial transformer.

usage: make_masks_and_grids.py OUT

OUT receives traced.pt and scripted.pt (forward(x: f32 [2, 3, 8, 8],
ids: i64 [2, 16], theta: f32 [2, 2, 3]) -> tensors), their inputs as .npy
and expected/output<k>.npy.
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_traced_and_scripted  # noqa: E402


class MasksAndGrids(nn.Module):
    def forward(self, x: torch.Tensor, ids: torch.Tensor, theta: torch.Tensor):
        special = torch.tensor([0, 2, 7, 11])
        is_special = torch.isin(ids, special)
        previous = torch.roll(ids, 1, dims=1)
        hashed = ((ids << 5) + (previous >> 1)) % 1000
        grid = F.affine_grid(theta, [2, 3, 5, 6], align_corners=False)
        theta3 = torch.cat([theta, theta[:, :1]], dim=1)
        theta3 = torch.cat([theta3, theta3[:, :, :1]], dim=2)
        return (
            is_special, torch.isin(ids, special, invert=True), torch.isin(ids, 5),
            torch.logical_xor(is_special, ids > 8), is_special ^ (ids < 4),
            hashed, (ids * 7) >> 2,
            torch.logaddexp2(x, x * 0.5),
            torch.float_power(x.abs() + 0.5, 1.5), torch.float_power(x, 2),
            F.pdist(x[0, 0]), F.pdist(x[1, 2], p=1.0),
            grid, F.affine_grid(theta, [2, 1, 4, 4], align_corners=True),
            F.affine_grid(theta3, [2, 1, 2, 3, 4], align_corners=False),
            F.grid_sample(x, grid, align_corners=False),
        )


def main() -> None:
    torch.manual_seed(0)
    theta = torch.tensor([[[0.9, -0.2, 0.1], [0.3, 1.1, -0.2]],
                          [[1.2, 0.1, 0.0], [-0.1, 0.8, 0.3]]])
    save_traced_and_scripted(MasksAndGrids().eval(), sys.argv[1], {
        "x": torch.randn(2, 3, 8, 8), "ids": torch.randint(0, 20, (2, 16)), "theta": theta})


if __name__ == "__main__":
    main()
