"""Saves a module of order statistics, traced and scripted, with PyTorch's
outputs, for test/Import/order.test: torch.median (whole, along a dim,
keepdim, rows with NaN), nanmedian, kthvalue, quantile (a level, levels
in a tensor, the whole tensor, every interpolation, rows with NaN),
nanquantile, cummax / cummin (ties take the latest position, NaN
propagates), bucketize (right, out_int32), searchsorted (rows, side) and
aminmax.

usage: make_order.py OUT

OUT receives traced.pt and scripted.pt (forward(x: f32 [4, 6], v: f32
[10]) -> 38 tensors), x.npy, v.npy and expected/output<k>.npy.
"""

import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_traced_and_scripted  # noqa: E402


class Order(nn.Module):
    def forward(self, x: torch.Tensor, v: torch.Tensor):
        nan = torch.full_like(x, float("nan"))
        xn = torch.where(x > 1.0, nan, x)
        xn = torch.cat([xn[:3], nan[3:]])  # the last row all NaN
        ties = torch.round(x * 2.0)
        boundaries = torch.tensor([-1.0, -0.25, 0.0, 0.5, 1.5])
        rows = torch.sort(x, dim=1)[0]
        median_values, median_indices = torch.median(x, dim=1)
        nan_median, nan_median_indices = torch.median(xn, dim=1)
        nanmedian_values, nanmedian_indices = torch.nanmedian(xn[:3], dim=1)
        kth_values, kth_indices = torch.kthvalue(x, 2, dim=1)
        kth_kept, kth_kept_indices = torch.kthvalue(x, 3, 0, keepdim=True)
        running_max, running_max_at = torch.cummax(ties, 1)
        running_min, running_min_at = torch.cummin(x, 0)
        nan_max, nan_max_at = torch.cummax(xn, 1)
        low, high = torch.aminmax(x, dim=0)
        whole_low, whole_high = torch.aminmax(x)
        return (
            torch.median(x), median_values, median_indices,
            x.median(0, keepdim=True)[0],
            nan_median, nan_median_indices, nanmedian_values, nanmedian_indices,
            kth_values, kth_indices, kth_kept, kth_kept_indices,
            torch.quantile(x, 0.3, dim=1),
            torch.quantile(x, torch.tensor([0.25, 0.5, 0.9]), dim=0, keepdim=True),
            torch.quantile(x, 0.4),
            torch.quantile(x, 0.5, dim=1, interpolation="lower"),
            torch.quantile(x, 0.5, dim=1, interpolation="higher"),
            torch.quantile(x, 0.5, dim=1, interpolation="midpoint"),
            torch.quantile(x, 0.5, dim=1, interpolation="nearest"),
            torch.quantile(x, 0.3, dim=1, interpolation="nearest"),
            torch.quantile(xn, 0.5, dim=1),
            torch.nanquantile(xn, 0.5, dim=1),
            running_max, running_max_at, running_min, running_min_at, nan_max, nan_max_at,
            torch.bucketize(v, boundaries),
            torch.bucketize(v, boundaries, right=True, out_int32=True),
            torch.bucketize(torch.cat([v[:3], torch.tensor([float("nan")])]), boundaries),
            torch.searchsorted(rows, x[:, :3]),
            torch.searchsorted(rows, x[:, :3], side="right"),
            torch.searchsorted(boundaries, v, right=True),
            low, high, whole_low, whole_high,
        )


def main() -> None:
    torch.manual_seed(0)
    v = torch.tensor([-2.0, -1.0, -0.5, -0.25, 0.0, 0.2, 0.5, 1.0, 1.5, 3.0])
    save_traced_and_scripted(Order(), sys.argv[1], {"x": torch.randn(4, 6), "v": v})


if __name__ == "__main__":
    main()
