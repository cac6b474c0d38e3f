"""Saves a module that sorts and rounds, traced and scripted, with
PyTorch's outputs, for test/Import/sorting.test: torch.sort (ascending,
descending, along inner and outer dims, stable with ties, of int64),
argsort, msort, NaN among the sorted values; torch.round (halves to
even, decimals of either sign), floor, ceil, trunc and fix of values of
both signs, infinities and NaN, rounding of an int64 tensor, scripted
math.floor of a number that sizes a slice; torch.sign of floats (NaN, -0
and infinities among them) and int64, torch.gather from an int64
tensor, and torch.topk with k > 16 (the first k of a sort).

usage: make_sorting.py OUT

OUT receives traced.pt and scripted.pt (forward(x: f32 [3, 6, 5],
ids: int64 [3, 7]) -> 25 tensors), x.npy, ids.npy and
expected/output<k>.npy.
"""

import math
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_traced_and_scripted  # noqa: E402


class Sorting(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(6, 5))

    def forward(self, x: torch.Tensor, ids: torch.Tensor):
        h = x * self.w
        values, indices = torch.sort(h, dim=-1)
        down, down_indices = torch.sort(h, dim=1, descending=True)
        ranked = torch.argsort(h, dim=-1, descending=True)
        int_values, int_indices = torch.sort(ids, dim=-1, stable=True)
        # Ties: quarters of h, sorted stably along dim 1.
        tied, tied_indices = torch.sort(torch.round(h * 2.0) / 2.0, dim=1, stable=True)
        columns = torch.msort(h)
        # NaN sorts last ascending, first descending.
        with_nan = torch.where(h > 1.0, torch.full_like(h, float("nan")), h)
        nan_up, nan_up_indices = torch.sort(with_nan, dim=-1, stable=True)
        nan_down = torch.argsort(with_nan, dim=1, descending=True)
        # Halves of both signs round to even; infinities and NaN stay.
        special = torch.tensor([0.5, 1.5, 2.5, -0.5, -2.5, 3.4999, -7.5,
                                float("inf"), float("-inf"), float("nan")])
        scaled = h * 3.7
        half = math.floor(h.size(2) / 2)
        return (values, indices, down, down_indices, ranked, int_values,
                int_indices, tied, tied_indices, columns, nan_up,
                nan_up_indices, nan_down,
                torch.round(special), torch.round(scaled, decimals=1),
                torch.round(scaled * 40.0, decimals=-1), torch.floor(scaled),
                torch.ceil(scaled), torch.trunc(scaled) + torch.fix(-scaled),
                torch.round(ids) + torch.floor(ids) + h[..., :half].sum().round().long(),
                torch.sign(torch.cat([special, -h.flatten()[:5]])), torch.sign(ids),
                torch.gather(ids, 1, int_indices),
                torch.topk(h.reshape(3, 30), 20)[0], torch.topk(h.reshape(3, 30), 18, largest=False)[1])


def main() -> None:
    torch.manual_seed(0)
    module = Sorting()
    save_traced_and_scripted(module, sys.argv[1], {"x": torch.randn(3, 6, 5), "ids": torch.randint(-4, 4, (3, 7))})

if __name__ == "__main__":
    main()
