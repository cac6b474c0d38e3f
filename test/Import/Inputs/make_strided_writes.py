"""Saves a module that writes through strided slices in place (the PyTorch
tutorial's sinusoidal positions built in forward, `pe[:, 0::2] = sin(...)`;
two strided dims with offsets and an end before the tensor's; steps whose
last window runs past the end), traced and scripted, with PyTorch's
outputs as the oracle.

usage: make_strided_writes.py OUT

OUT receives trace.pt, script.pt, x.npy (f32 [2, 3, 4]), ids.npy and
expected/output<i>.npy for each output of forward.
"""

import math
import os
import sys
from typing import List

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_idioms  # noqa: E402


class StridedWrites(nn.Module):
    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> List[torch.Tensor]:
        length, dim = x.size(1), x.size(2)
        position = torch.arange(length, dtype=torch.float32).unsqueeze(1)
        frequencies = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32)
                                * (-math.log(10000.0) / dim))
        pe = torch.zeros(length, dim)
        pe[:, 0::2] = torch.sin(position * frequencies)
        pe[:, 1::2] = torch.cos(position * frequencies)
        a = x * 2.0
        a[:, 1::2, 1:4:2] = x[:, 1::2, 0:2] * 10.0
        b = torch.zeros(2, 3, 5)
        b[..., 1::3] = x[..., :2]
        c = torch.ones(2, 3, 4)
        c[:, ::2] = x[:, ::2] - 1.0
        return [pe, a, b, c, x + pe]


if __name__ == "__main__":
    save_idioms(StridedWrites(), sys.argv[1], np.zeros((2, 3), dtype=np.int64))
