"""Saves a module that selects elements and rows with torch.where(condition)
and torch.nonzero (a number known only at run time), computes on them and
scatters them back, traced and scripted, with PyTorch's outputs, for
test/Import/nonzero.test; and one whose cumulative sums run over 1500
positions (the blocked running sums).

usage: make_nonzero.py OUT

OUT receives traced.pt and scripted.pt (forward(x: f32 [4, 6, 5], s: f32
[2, 1500]) -> 6 tensors), x.npy, s.npy and expected/output<k>.npy.
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_traced_and_scripted  # noqa: E402


class Selections(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(5, 5)

    def forward(self, x: torch.Tensor, s: torch.Tensor):
        rows = x.reshape(-1, 5)
        # Rows whose sum is positive, as torch.nonzero's [n, 1]: a softmax
        # of each, added back.
        found = torch.nonzero(rows.sum(-1) > 0)
        picked = F.softmax(rows[found[:, 0]], dim=-1) * 2.0
        added = torch.zeros(24, 5).index_add(0, found[:, 0], picked)
        # Elements of a 3-d mask by their three coordinates, written back.
        i, j, k = torch.where(x > 0.5)
        written = torch.zeros_like(x)
        written[i, j, k] = torch.exp(x[i, j, k])
        # torch.argwhere's [n, 2], through transposes and back, its rows
        # normalized and projected, added back (rows found twice add).
        where = torch.argwhere(x[0] > 0).t().permute(1, 0).T.mT
        normed = F.layer_norm(x[0][where[:, 0]], [5])
        projected = torch.zeros(6, 5).index_add_(0, where[:, 0], self.proj(normed).transpose(0, 1).t())
        # index_fill at the rows found.
        ids = torch.where(x[1, :, 0] > 0)[0]
        filled = x[1].index_fill(0, ids, -1.0)
        # Running sums over 1500 positions: of floats, and the positions of
        # the positive entries (times the size of found's known dim, 1).
        sums = s.abs().cumsum(-1)
        positions = (s > 0).cumsum(-1) * found.size(1)
        return added, written, projected, filled, sums, positions


def main() -> None:
    torch.manual_seed(0)
    save_traced_and_scripted(Selections().eval(), sys.argv[1],
                             {"x": torch.randn(4, 6, 5), "s": torch.randn(2, 1500)})


if __name__ == "__main__":
    main()
