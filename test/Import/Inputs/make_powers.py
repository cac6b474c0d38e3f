"""Saves a module of powers by constant exponents, traced and scripted,
with PyTorch's outputs, for test/Import/powers.test: fractional exponents
of positive, zero and negative bases (NaN where PyTorch gives NaN, 0 and
inf at 0), whole exponents of either sign up to 64 and beyond (signs of
negative bases kept), F.local_response_norm's ** 0.75, and integer tensors
(whole powers stay int64, a fractional one is float32); vector norms of
orders 1, inf, -inf, 0, 3 and F.normalize's 1.5.

usage: make_powers.py OUT

OUT receives traced.pt and scripted.pt (forward(x: f32 [4, 6], ids: int64
[4, 6]) -> 13 tensors), x.npy, ids.npy and expected/output<k>.npy.
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_traced_and_scripted  # noqa: E402


class Powers(nn.Module):
    def forward(self, x: torch.Tensor, ids: torch.Tensor):
        positive = x.abs() + 0.5
        return (
            torch.pow(positive, 0.75) + positive ** 1.5 - positive ** -1.25,
            torch.nan_to_num(x ** 0.3, nan=-7.0),
            torch.nan_to_num(torch.relu(x) ** -0.25, posinf=9.0),
            x ** 5.0 - x ** 4 + x ** -3,
            torch.tanh(x) ** 67.0 + (positive / 2) ** 70.0,
            torch.tanh(x) ** 66.5,
            F.local_response_norm(x.reshape(1, 4, 6), 3),
            ids ** 3 + ids ** 0,
            ids ** 0.5,
            torch.linalg.vector_norm(x, ord=1, dim=-1)
            + torch.linalg.vector_norm(x, ord=float("inf"), dim=-1)
            + torch.linalg.vector_norm(x, ord=float("-inf"), dim=-1),
            torch.linalg.vector_norm(x, ord=0, dim=0, keepdim=True),
            x.norm(p=3, dim=1),
            F.normalize(x, p=1.5, dim=-1),
        )


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(4, 6)
    x[0, :3] = 0.0
    save_traced_and_scripted(Powers(), sys.argv[1],
                             {"x": x, "ids": torch.randint(0, 9, (4, 6))})


if __name__ == "__main__":
    main()
