"""Saves a language model that mixes positions with 2-d convolutions,
traced, with PyTorch's logits, for test/TrainStep/conv2d.test: each block
lays the 32 positions out as a 4 x 8 grid of channels (ConvMixer-style)
and adds a depthwise 3 x 3 convolution, a grouped 3 x 3 one with
padding='same', patches of 1 x 2 (stride = kernel) spread back over their
positions with repeat_interleave, and a pointwise (1 x 1) one; average
pooling (padding not counted), max pooling and adaptive average pooling,
pooled grids interpolated back (bilinear, nearest) or max-unpooled, and
a U-Net-style
stride-2 convolution down and a grouped transposed one back up.

usage: make_conv2d_lm.py OUT

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


class ConvBlock(nn.Module):
    def __init__(self, dim, rows):
        super().__init__()
        self.rows = rows
        self.norm = nn.LayerNorm(dim)
        self.depthwise = nn.Conv2d(dim, dim, kernel_size=3, padding=1, groups=dim)
        self.grouped = nn.Conv2d(dim, dim, kernel_size=3, padding="same", groups=2, bias=False)
        self.patches = nn.Conv2d(dim, dim, kernel_size=(1, 2), stride=(1, 2))
        self.pointwise = nn.Conv2d(dim, dim, kernel_size=1)
        self.down = nn.Conv2d(dim, dim, kernel_size=2, stride=2)
        self.up = nn.ConvTranspose2d(dim, dim, kernel_size=3, stride=2, padding=1, output_padding=1, groups=2)
        self.block_scale = nn.Parameter(1.0 + 0.1 * torch.randn(dim * 4, 1))

    def forward(self, x):
        b, s, d = x.shape
        grid = self.norm(x).transpose(1, 2).reshape(b, d, self.rows, s // self.rows)
        y = F.gelu(self.depthwise(grid)) + 0.5 * self.grouped(grid)
        y = y + self.patches(grid).repeat_interleave(2, dim=-1)
        y = y + F.avg_pool2d(grid, 3, stride=1, padding=1, count_include_pad=False)
        y = y + F.max_pool2d(grid, 3, stride=1, padding=1)
        y = y + F.adaptive_avg_pool2d(grid, (2, 3)).mean(dim=(2, 3), keepdim=True)
        y = y + F.interpolate(F.avg_pool2d(grid, 2), scale_factor=2.0, mode="bilinear")
        y = y + F.interpolate(F.max_pool2d(grid, 2), scale_factor=2.0, mode="nearest")
        y = y + F.max_unpool2d(*F.max_pool2d(grid, 2, return_indices=True), 2)
        y = y + self.up(F.gelu(self.down(grid)))
        # Overlapping 2 x 2 blocks (F.unfold), scaled per channel and tap,
        # summed back (F.fold).
        blocks = F.unfold(grid, 2, padding=1)
        y = y + 0.25 * F.fold(blocks * self.block_scale, grid.shape[2:], 2, padding=1)
        y = self.pointwise(F.gelu(y))
        return x + y.reshape(b, d, s).transpose(1, 2)


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(BlocksLM(lambda dim: ConvBlock(dim, rows=4)), sys.argv[1])


if __name__ == "__main__":
    main()
