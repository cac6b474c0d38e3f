"""Saves a module of 1-d convolutions, for test/Import/convolutions.test:
nn.Conv1d with padding and bias, Mamba's depthwise causal convolution
(groups = channels, padding K - 1, the first L outputs kept), a grouped
convolution with stride and dilation, and F.conv1d with padding='same' of
an even kernel (the odd position padded at the end).

usage: make_convolutions.py OUT

OUT receives trace.pt, script.pt, x.npy, ids.npy and expected/output<i>.npy
(PyTorch's outputs; idioms_io.save_idioms).
"""

import os
import sys
from typing import List

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_idioms  # noqa: E402


class Convolutions(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(3, 5, kernel_size=3, padding=1)
        self.depthwise = nn.Conv1d(3, 3, kernel_size=4, groups=3, padding=3)
        self.grouped = nn.Conv1d(4, 6, kernel_size=2, groups=2, stride=2, dilation=2, bias=False)
        self.same = nn.Parameter(torch.randn(2, 3, 2))

    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> List[torch.Tensor]:
        # x: f32 [2, 3, 4] as [batch, channels, length].
        wide = torch.cat([x, x * 0.5], dim=1)[:, :4]
        return [
            self.conv(x),
            self.depthwise(x)[..., :4],
            self.grouped(torch.cat([wide, wide], dim=2)),
            F.conv1d(x, self.same, padding="same"),
        ]


def main() -> None:
    torch.manual_seed(0)
    ids = np.array([[0, 3, 1], [2, 2, 3]], dtype=np.int64)
    save_idioms(Convolutions(), sys.argv[1], ids)


if __name__ == "__main__":
    main()
