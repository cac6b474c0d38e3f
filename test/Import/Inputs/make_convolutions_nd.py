"""Saves a module of 2-d and 3-d convolutions, for
test/Import/convolutions-nd.test: ViT's patch embedding (stride = kernel),
one that drops the positions past the last whole patch, nn.Conv2d with
padding and bias, ConvNeXt's depthwise convolution, a grouped one with
per-dim stride, dilation and padding, a pointwise (1 x 1) one, F.conv2d
with padding='same' of an even dilated kernel, unbatched inputs, a
video patch embedding (Conv3d) and a Conv3d with padding; transposed
convolutions: an upsampling nn.ConvTranspose2d with output_padding, a
grouped one with per-dim stride, dilation and padding, a 1-d one whose
padding crops (batched and unbatched), nn.ConvTranspose3d and
F.conv_transpose2d with stride and dilation.

usage: make_convolutions_nd.py OUT

OUT receives traced.pt, scripted.pt, image.npy, video.npy and
expected/output<k>.npy (idioms_io.save_traced_and_scripted).
"""

import os
import sys
from typing import List

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_traced_and_scripted  # noqa: E402


class ConvolutionsNd(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.patches = nn.Conv2d(3, 8, kernel_size=4, stride=4)
        self.partial_patches = nn.Conv2d(3, 5, kernel_size=3, stride=3, bias=False)
        self.padded = nn.Conv2d(3, 4, kernel_size=3, padding=1)
        self.depthwise = nn.Conv2d(3, 3, kernel_size=5, padding=2, groups=3)
        self.grouped = nn.Conv2d(4, 6, kernel_size=(2, 3), stride=(2, 1), dilation=(1, 2),
                                 padding=(1, 0), groups=2)
        self.pointwise = nn.Conv2d(3, 2, kernel_size=1)
        self.same = nn.Parameter(torch.randn(2, 3, 2, 2))
        self.tubelets = nn.Conv3d(3, 4, kernel_size=2, stride=2)
        self.volume = nn.Conv3d(3, 2, kernel_size=(2, 3, 3), padding=(0, 1, 1), bias=False)
        # Transposed: upsampling by 2 (output_padding), grouped with per-dim
        # stride, dilation and padding, a crop (padding past the kernel),
        # 1-d and 3-d.
        self.upsample = nn.ConvTranspose2d(3, 4, kernel_size=3, stride=2, padding=1, output_padding=1)
        self.grouped_up = nn.ConvTranspose2d(4, 6, kernel_size=(2, 3), stride=(2, 1), dilation=(1, 2),
                                             padding=(1, 0), groups=2)
        self.cropped_up = nn.ConvTranspose1d(3, 2, kernel_size=2, stride=3, padding=2, bias=False)
        self.volume_up = nn.ConvTranspose3d(3, 2, kernel_size=2, stride=2)

    def forward(self, image: torch.Tensor, video: torch.Tensor) -> List[torch.Tensor]:
        # image: f32 [2, 3, 8, 8]; video: f32 [2, 3, 4, 4, 4].
        four = torch.cat([image, image[:, :1] * 0.5], dim=1)
        return [
            self.patches(image).flatten(2).transpose(1, 2),
            self.partial_patches(image),
            self.padded(image),
            self.depthwise(image),
            self.grouped(four),
            self.pointwise(image),
            F.conv2d(image, self.same, padding="same", dilation=2),
            F.conv2d(image[0], self.same),
            F.conv1d(image[0, :, 0], self.same[:, :, 0]),
            self.tubelets(video),
            self.volume(video),
            self.upsample(image),
            self.grouped_up(four),
            self.cropped_up(image[:, :, 0]),
            self.cropped_up(image[0, :, 1]),
            self.volume_up(video),
            F.conv_transpose2d(image, self.same.transpose(0, 1), stride=2, dilation=2),
        ]


def main() -> None:
    torch.manual_seed(0)
    module = ConvolutionsNd().eval()
    inputs = {"image": torch.randn(2, 3, 8, 8), "video": torch.randn(2, 3, 4, 4, 4)}
    save_traced_and_scripted(module, sys.argv[1], inputs)


if __name__ == "__main__":
    main()
