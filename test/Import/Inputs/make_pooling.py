"""Saves a module of pooling layers, for test/Import/pooling.test: average
and max pooling in 1, 2 and 3 spatial dims with strides, padding (counted
in the average or not), a divisor, dilation and ceil_mode's partial windows (their
average over the positions in the input and its padding, or in the input); adaptive average pooling to sizes that tile the input, that
do not, and to 1 (global pooling); unbatched inputs; max pooling with
indices (padding, ceil_mode, ties in rounded values, 1-d, 3-d) and
adaptive max pooling (with indices, global, 3-d).

usage: make_pooling.py OUT

OUT receives traced.pt and scripted.pt (forward(signal: f32 [2, 3, 10],
image: f32 [2, 3, 7, 8], video: f32 [1, 2, 4, 6, 6]) -> tensors), the
inputs as .npy and expected/output<k>.npy (idioms_io.save_traced_and_scripted).
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_traced_and_scripted  # noqa: E402


class Pooling(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.avg = nn.AvgPool2d(3, stride=2, padding=1)
        self.avg_exclusive = nn.AvgPool2d((3, 2), stride=(2, 1), padding=(1, 1), count_include_pad=False)
        self.max = nn.MaxPool2d(2)
        self.max_padded = nn.MaxPool2d(3, stride=2, padding=1, dilation=(1, 2))
        self.global_pool = nn.AdaptiveAvgPool2d(1)
        self.adaptive = nn.AdaptiveAvgPool2d((3, 4))

    def forward(self, signal: torch.Tensor, image: torch.Tensor, video: torch.Tensor):
        # Max pooling undone: overlapping windows (an element two windows
        # chose), 1-d, 3-d, and a plane of 320 positions.
        pooled, where = F.max_pool2d(image, 3, stride=2, padding=1, return_indices=True)
        pooled1, where1 = F.max_pool1d(signal, 2, return_indices=True)
        pooled3, where3 = F.max_pool3d(video, 2, return_indices=True)
        tall, where_tall = F.max_pool2d(image.repeat(1, 1, 3, 2), 2, return_indices=True)
        unpooled = (F.max_unpool2d(pooled, where, 3, stride=2, padding=1, output_size=[7, 8]),
                    F.max_unpool1d(pooled1, where1, 2), F.max_unpool3d(pooled3, where3, 2),
                    F.max_unpool2d(tall, where_tall, 2))
        return unpooled + (
            self.avg(image), self.avg_exclusive(image), self.max(image), self.max_padded(image),
            F.avg_pool2d(image, 2, divisor_override=3),
            F.max_pool2d(image, 3, stride=2, ceil_mode=True),
            F.avg_pool2d(image, 3, stride=2, padding=1, ceil_mode=True),
            F.avg_pool2d(image, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
            self.global_pool(image).flatten(1), self.adaptive(image),
            F.avg_pool1d(signal, 4, stride=3), F.max_pool1d(signal, 3, stride=2, padding=1),
            F.adaptive_avg_pool1d(signal, 4), F.adaptive_avg_pool1d(signal, 5),
            F.max_pool1d(signal[0], 2),
            F.avg_pool3d(video, 2), F.max_pool3d(video, (2, 3, 3)), F.adaptive_avg_pool3d(video, (1, 2, 3)),
        ) + F.max_pool2d(image, 3, stride=2, padding=1, dilation=1, ceil_mode=True,
                         return_indices=True) + F.max_pool2d(torch.round(image), 2,
                                                             return_indices=True) + \
            F.max_pool1d(signal, 3, stride=2, return_indices=True) + \
            F.max_pool3d(video, (2, 2, 3), return_indices=True) + \
            F.adaptive_max_pool2d(image, (3, 5), return_indices=True) + \
            F.adaptive_max_pool1d(torch.round(signal), 4, return_indices=True) + \
            (F.adaptive_max_pool2d(image, 1).flatten(1), F.adaptive_max_pool3d(video, (2, 3, 4))) + \
            self.blocks(image)

    def blocks(self, image: torch.Tensor):
        # Sliding blocks: F.unfold with padding and stride per dim, dilated,
        # unbatched; F.fold of overlapping blocks (summed), strided with
        # padding, and fold(unfold(x)) (each position times its blocks).
        columns = F.unfold(image, (2, 3), padding=1, stride=(1, 2))
        return (columns, F.unfold(image, 2, dilation=2), F.unfold(image[0], 3, stride=2, padding=1),
                F.fold(columns[..., :15] * 0.5, (4, 5), (2, 3), padding=1, stride=(1, 2)),
                F.fold(F.unfold(image, 3, padding=1), (7, 8), 3, padding=1),
                F.fold(columns[0, :, :6], (2, 4), (2, 3), padding=1, stride=(1, 2)))


def main() -> None:
    torch.manual_seed(0)
    inputs = {"signal": torch.randn(2, 3, 10), "image": torch.randn(2, 3, 7, 8),
              "video": torch.randn(1, 2, 4, 6, 6)}
    save_traced_and_scripted(Pooling().eval(), sys.argv[1], inputs)


if __name__ == "__main__":
    main()
