"""Saves a module of rounding divisions, remainders and clamps of integer
and float tensors, for test/Import/rounding.test: `//`, `%`, torch.fmod,
torch.div with rounding_mode 'trunc' and 'floor' on int64 and int32
tensors of both signs and on floats, by tensors and by numbers, and
clamp of integers (a float bound makes the result float, as in torch).

usage: make_rounding.py OUT

OUT receives trace.pt, script.pt, x.npy, ids.npy and expected/output<i>.npy
(PyTorch's outputs; idioms_io.save_idioms).
"""

import os
import sys
from typing import List

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_idioms  # noqa: E402


class Rounding(nn.Module):
    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> List[torch.Tensor]:
        # x: f32 [2, 3, 4]; ids: i64 [2, 3] in [0, 4).
        a = (x * 10.0).long()
        b = (ids + 1)[:, :, None] * torch.tensor([1, -1, 2, -3])
        f = x * 7.5
        g = b.float() * 0.75
        n = (x * 1000.0).int()
        return [
            a // b,
            a % b,
            torch.fmod(a, b),
            torch.div(a, b, rounding_mode="trunc"),
            torch.div(a, b, rounding_mode="floor"),
            a % 3,
            (a + 100) // 7,
            torch.remainder(-a, 5),
            n % 4,
            n // -3,
            f // g,
            f % g,
            torch.fmod(f, g),
            torch.div(f, g, rounding_mode="trunc"),
            a.clamp(min=-3, max=6),
            a.clamp(max=2.5),
            torch.clamp(n, min=-100),
        ]


def main() -> None:
    ids = np.array([[0, 3, 1], [2, 2, 3]], dtype=np.int64)
    save_idioms(Rounding(), sys.argv[1], ids)


if __name__ == "__main__":
    main()
