"""Saves a module of NaN and infinity tests, integer abs and sums, flips
and diagonals, for test/Import/value-ops.test: isnan, isinf, nan_to_num
(default and given replacements) of a tensor holding NaN and both
infinities, abs and sum of int64 positions (a boolean sum is int64 too),
flip along one and two dims, diag of a vector (on, above and below the
main diagonal) and of a matrix, torch.diagonal of a 3-d tensor (dims 0 and
1, 2 and 1 above, 0 and 2 below), torch.meshgrid with 'ij' and 'xy'.

usage: make_value_ops.py OUT

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


class ValueOps(nn.Module):
    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> List[torch.Tensor]:
        # x: f32 [2, 3, 4]; ids: i64 [2, 3] in [0, 4).
        infinite = torch.where(x > 1.0, x / (x - x), x)
        odd = torch.where(x < -1.0, (x - x) / (x - x), infinite)
        return [
            torch.isnan(odd).float(),
            torch.isinf(odd).float(),
            torch.nan_to_num(odd),
            torch.nan_to_num(odd, nan=0.5, posinf=10.0, neginf=-10.0),
            (ids - 2).abs(),
            ids.sum(),
            ids.sum(1),
            (ids > 1).sum(-1),
            x.flip(1),
            x.flip([0, 2]),
            torch.diag(x[0, 0]),
            torch.diag(x[0, 0], 1),
            torch.diag(x[0, 0], -2),
            torch.diag(x[0]),
            torch.diag(x[0], 1),
            torch.diag(x[0], -1),
            torch.diagonal(x),
            torch.diagonal(x, 1, 2, 1),
            x.diagonal(-1, 0, 2),
            torch.meshgrid(x[0, 0], ids[0].float(), indexing="ij")[0] * 2.0,
            torch.meshgrid(x[0, 0], ids[0].float(), indexing="ij")[1],
            torch.meshgrid(x[0, 0], ids[0].float(), indexing="xy")[0],
            torch.meshgrid(x[0, 0], ids[0].float(), indexing="xy")[1],
        ]


def main() -> None:
    ids = np.array([[0, 3, 1], [2, 2, 3]], dtype=np.int64)
    save_idioms(ValueOps(), sys.argv[1], ids)


if __name__ == "__main__":
    main()
