"""Saves a module of scatters, for test/Import/scatter.test: torch.scatter
(of a tensor and of a number), scatter_add, scatter_reduce ('sum' without
self, 'mean' with it, 'amax' and 'amin' with and without self), index_add, index_fill, and writes through an index
(`y[mask] = v`, `y[:, ids] += v`, index_put_ with accumulate), in place and
not, with repeated indices where PyTorch defines the result, on float and
integer tensors, a scatter and a gather along a dim of 300, and reads and
writes through two index tensors (`x[rows, cols]`).

usage: make_scatter.py OUT

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


class Scatters(nn.Module):
    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> List[torch.Tensor]:
        # x: f32 [2, 3, 4]; ids: i64 [2, 3] in [0, 4).
        column = ids[:, :, None]
        rows = (ids % 3)[:, :, None].expand(2, 3, 4)
        spread = (column + torch.arange(4)) % 4  # a permutation of each row
        # One element per index, along the last dim (MoE gates).
        gates = torch.zeros(2, 3, 4).scatter(2, column, x[:, :, :1])
        # Whole rows along dim 1, of a number.
        marked = x.scatter(1, rows, 1.0)
        # Elements along dim 0, with repeats that add up.
        added = x.scatter_add(0, ids[None, :, :].expand(2, 2, 3) % 2, x[:, :2, :3] * 2.0)
        summed = torch.ones(2, 3, 4).scatter_reduce(2, spread, x, "sum", include_self=False)
        mean = x.scatter_reduce(2, column.expand(2, 3, 2), x[:, :, 2:] * 3.0, "mean")
        # Rows along dim 0 with repeats, scaled by alpha.
        table = torch.zeros(4, 4).index_add(0, ids.flatten() % 4, x.reshape(6, 4), alpha=0.5)
        filled = x.index_fill(2, torch.tensor([0, 3]), -1.0)
        clipped = x * 1.0
        clipped[clipped > 0.5] = 0.5
        bumped = x * 1.0
        bumped[:, torch.tensor([2, 0])] += 1.0
        counts = torch.zeros(3, 4)
        counts.index_put_((ids[0] % 3,), x[0], accumulate=True)
        hot = torch.zeros(2, 3, 4, dtype=torch.long)
        hot.scatter_(2, column, 1)
        # Along a dim longer than titan's one-hot limit: the tensor viewed
        # as a column, written and read back.
        wide = torch.zeros(2, 3, 300).scatter_add(2, column * 70, x[:, :, :1])
        picked = torch.gather(wide * 2.0, 2, column * 70 + 1)
        # Several index tensors of adjacent dims, read and written.
        pairs = x[torch.tensor([1, 0]), ids[:, 0] % 3]
        cells = x[:, ids[0] % 3, ids[1]]
        corners = x[torch.tensor([-1, 0]), torch.tensor([-2, 1])]
        grid = torch.zeros(3, 4)
        grid[ids[0] % 3, ids[1]] = 1.0
        sums = torch.zeros(3, 4)
        sums.index_put_((ids[0] % 3, ids[1]), x[0, :, 0], accumulate=True)
        # Extrema of repeated indices: with self, without it (positions no
        # index names keep self), of whole rows, along dim 0, of integers.
        largest = x.scatter_reduce(2, column.expand(2, 3, 2), x[:, :, 2:] * 3.0, "amax")
        smallest = torch.zeros(2, 3, 4).scatter_reduce(2, column.expand(2, 3, 3) % 2, x[:, :, :3],
                                                       "amin", include_self=False)
        row_max = x.scatter_reduce(1, rows, x * 2.0, "amax", include_self=False)
        first_max = x.scatter_reduce(0, ids[None, :, :].expand(2, 2, 3) % 2, x[:, :2, :3] * 2.0,
                                     "amax")
        int_min = ids.scatter_reduce(1, ids % 3, ids * 2 - 3, "amin")
        return [gates, marked, added, summed, mean, table, filled, clipped, bumped,
                counts, hot, wide, picked, pairs, cells, corners, grid, sums,
                largest, smallest, row_max, first_max, int_min]


def main() -> None:
    ids = np.array([[0, 3, 1], [2, 2, 3]], dtype=np.int64)
    save_idioms(Scatters(), sys.argv[1], ids)


if __name__ == "__main__":
    main()
