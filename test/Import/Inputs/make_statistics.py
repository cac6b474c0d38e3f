"""Saves a module of covariance, integration, norm and matrix-building
ops, for test/Import/statistics.test: torch.cov (the default, a
correction of 0, frequency and importance weights, a 1-d tensor),
corrcoef (VICReg / Barlow Twins style statistics of a batch of
embeddings), trapezoid / trapz (spacing dx, sample points 1-d and of y's
shape) and cumulative_trapezoid, dist (p = 2, 1, inf), renorm, diag_embed
(offsets above and below, other dims), vander (decreasing and increasing,
of integers), combinations (with and without replacement), mvlgamma,
ldexp and narrow_copy.

usage: make_statistics.py OUT

OUT receives traced.pt and scripted.pt (forward(x: f32 [3, 6], v: f32 [4],
n: i64 [4]) -> tensors), their inputs as .npy and expected/output<k>.npy.
"""

import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_traced_and_scripted  # noqa: E402


class Statistics(nn.Module):
    def forward(self, x: torch.Tensor, v: torch.Tensor, n: torch.Tensor):
        weights = torch.tensor([1, 2, 1, 3, 1, 2])
        importance = torch.tensor([0.5, 1.0, 2.0, 1.0, 0.25, 1.5])
        points = torch.tensor([0.0, 0.5, 1.5, 2.0, 3.5, 4.0])
        return (
            torch.cov(x), torch.cov(x, correction=0),
            torch.cov(x, fweights=weights, aweights=importance),
            torch.cov(x, correction=0, aweights=importance),
            torch.cov(x[0]), torch.corrcoef(x), torch.corrcoef(x.T[:2] * 3.0),
            torch.trapz(x), torch.trapezoid(x, dx=0.5, dim=0),
            torch.trapezoid(x, points), torch.trapezoid(x, x.cumsum(1)),
            torch.cumulative_trapezoid(x), torch.cumulative_trapezoid(x, points, dim=1),
            torch.dist(x, x.flip(1)), torch.dist(x, v[:1], 1.0),
            torch.dist(x, x * 0.5, float("inf")),
            torch.renorm(x, 2.0, 0, 1.5), torch.renorm(x, 1.0, 1, 2.0),
            torch.diag_embed(v), torch.diag_embed(x, offset=1),
            torch.diag_embed(x, offset=-2, dim1=0, dim2=2),
            torch.vander(v), torch.vander(n, 3, increasing=True),
            torch.combinations(v), torch.combinations(n, 3, with_replacement=True),
            torch.mvlgamma(x.abs() + 2.0, 3), torch.ldexp(x, n[:1] + 1),
            x.narrow_copy(1, 2, 3),
        )


def main() -> None:
    torch.manual_seed(0)
    save_traced_and_scripted(Statistics().eval(), sys.argv[1], {
        "x": torch.randn(3, 6), "v": torch.randn(4), "n": torch.tensor([2, -1, 3, 0])})


if __name__ == "__main__":
    main()
