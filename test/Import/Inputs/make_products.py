"""Saves a module of tensor products and small elementwise ops, traced and
scripted, with PyTorch's outputs, for test/Import/products.test:
torch.tensordot (a count of dims and explicit pairs), nn.Bilinear (with
and without bias, batched [B, T, *]), torch.kron (matrices, a vector with
a matrix), torch.trace (float and int64), torch.frac, torch.signbit
(-0.0 too), torch.isclose (equal_nan, infinities) and torch.rot90 (k 1, 2,
3, -1; other dims), torch.take (negative indices too), F.rrelu in eval
mode, torch.linalg.matrix_norm ('fro', 1, -1, inf, -inf; dims,
keepdim), torch.triu_indices / tril_indices (and the upper triangle of a
4x5 matrix read with them), torch.cartesian_prod and
torch.block_diag.

usage: make_products.py OUT

OUT receives traced.pt and scripted.pt (forward(x: f32 [3, 4, 5], ids:
int64 [4, 4]) -> 30 tensors), x.npy, ids.npy and expected/output<k>.npy.
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_traced_and_scripted  # noqa: E402


class Products(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bilinear = nn.Bilinear(5, 4, 3)
        self.plain = nn.Bilinear(5, 5, 2, bias=False)
        self.w = nn.Parameter(torch.randn(4, 5, 2))

    def forward(self, x: torch.Tensor, ids: torch.Tensor):
        # -0.0 computed (a scripted constant list holds 0.0 for it).
        special = torch.cat([x.flatten()[:6], torch.tensor([0.0]), x.new_zeros(1).neg(),
                             torch.tensor([float("inf"), float("-inf"), float("nan")])])
        other = torch.cat([x.flatten()[:6] + 1e-6, torch.tensor([0.0, 0.0, float("inf"),
                                                                 1.0, float("nan")])])
        return (
            torch.tensordot(x, self.w, dims=2),
            torch.tensordot(x, self.w, dims=([1, 2], [0, 1])),
            torch.tensordot(x, x, dims=([0], [0])),
            self.bilinear(x, x[:, :, :4]),
            self.plain(x[0], x[1]),
            torch.kron(x[0], x[1, :2, :3]),
            torch.kron(x[0, 0], x[1, :2]),
            torch.trace(x[0]),
            torch.trace(ids),
            torch.frac(x * 3),
            torch.signbit(special),
            torch.isclose(special, other, rtol=1e-4, atol=1e-5),
            torch.isclose(special, other, equal_nan=True),
            torch.rot90(x, 1, [1, 2]) + torch.rot90(x, -1, [2, 1]),
            torch.rot90(x, 2, [0, 2]),
            torch.rot90(x[0], 3, [0, 1]),
            torch.take(x, ids[:2] % 60),
            torch.take(x, torch.tensor([-1, 0, 59])),
            F.rrelu(x[0] - 0.2, 0.1, 0.3),
            torch.linalg.matrix_norm(x),
            torch.linalg.matrix_norm(x, 1),
            torch.linalg.matrix_norm(x, -1, dim=(0, 2), keepdim=True),
            torch.linalg.matrix_norm(x, float("inf")),
            torch.linalg.matrix_norm(x, float("-inf"), dim=(2, 1)),
            torch.linalg.norm(x[0], "fro"),
            torch.triu_indices(4, 5, 1),
            torch.tril_indices(3, 4, -1),
            x[0][torch.triu_indices(4, 5)[0], torch.triu_indices(4, 5)[1]],
            torch.cartesian_prod(x[0, 0, :3], x[1, 1, :2]),
            torch.cartesian_prod(ids[0, :2], ids[1, :3], ids[2, :2]),
            torch.block_diag(x[0, :2, :3], x[1, 0], x[2, 1, 1], x[2, :3, :1]),
        )


def main() -> None:
    torch.manual_seed(0)
    save_traced_and_scripted(Products(), sys.argv[1],
                             {"x": torch.randn(3, 4, 5), "ids": torch.randint(-5, 9, (4, 4))})


if __name__ == "__main__":
    main()
