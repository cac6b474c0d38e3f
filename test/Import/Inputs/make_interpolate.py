"""Saves a module of F.interpolate's modes, for test/Import/interpolate.test:
nearest (2x, to a size that is not a multiple, by a fractional scale
factor), nearest-exact, linear / bilinear / trilinear with and without
align_corners (up and down, by size and by scale factor), bicubic (a ViT's
position embeddings resized, with and without align_corners) and
nn.Upsample.

usage: make_interpolate.py OUT

OUT receives traced.pt and scripted.pt (forward(signal: f32 [2, 3, 7],
image: f32 [2, 3, 5, 6], volume: f32 [1, 2, 3, 4, 5]) -> tensors), the
inputs as .npy and expected/output<k>.npy.
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_traced_and_scripted  # noqa: E402


class Interpolate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.upsample = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.position_embeddings = nn.Parameter(torch.randn(1, 8, 4, 4))

    def forward(self, signal: torch.Tensor, image: torch.Tensor, volume: torch.Tensor):
        return (
            F.interpolate(image, scale_factor=2.0, mode="nearest"),
            F.interpolate(image, size=(7, 4), mode="nearest"),
            F.interpolate(signal, scale_factor=1.7, mode="nearest"),
            F.interpolate(image, size=(9, 11), mode="nearest-exact"),
            F.interpolate(signal, size=12, mode="linear"),
            F.interpolate(signal, size=4, mode="linear", align_corners=True),
            F.interpolate(image, scale_factor=1.5, mode="bilinear"),
            F.interpolate(image, size=(3, 4), mode="bilinear"),
            F.interpolate(image, size=(8, 9), mode="bilinear", align_corners=True),
            F.interpolate(volume, size=(4, 6, 3), mode="trilinear"),
            F.interpolate(self.position_embeddings, size=(6, 7), mode="bicubic"),
            F.interpolate(self.position_embeddings, scale_factor=1.75, mode="bicubic", align_corners=True),
            F.interpolate(image, size=(3, 3), mode="bicubic"),
            self.upsample(image),
        )


def main() -> None:
    torch.manual_seed(0)
    inputs = {"signal": torch.randn(2, 3, 7), "image": torch.randn(2, 3, 5, 6),
              "volume": torch.randn(1, 2, 3, 4, 5)}
    save_traced_and_scripted(Interpolate().eval(), sys.argv[1], inputs)


if __name__ == "__main__":
    main()
