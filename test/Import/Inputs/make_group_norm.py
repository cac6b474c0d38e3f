"""Saves a module of group norms, traced and scripted, for
test/Import/group-norm.test: nn.GroupNorm with an affine weight and bias
on [N, C, L] and on [N, C] (RWKV-5's ln_x over the heads of each token),
and without them, with another eps.

usage: make_group_norm.py OUT

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


class GroupNorms(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.heads = nn.GroupNorm(3, 3)
        self.channels = nn.GroupNorm(2, 4, affine=False, eps=1e-3)
        self.rows = nn.GroupNorm(2, 6)
        with torch.no_grad():
            for norm in (self.heads, self.rows):
                norm.weight.normal_()
                norm.bias.normal_()

    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> List[torch.Tensor]:
        # x: f32 [2, 3, 4].
        return [
            self.heads(x * 2.0 + 1.0),
            self.channels(x.transpose(1, 2)),
            self.rows(x.reshape(4, 6)),
        ]


def main() -> None:
    torch.manual_seed(0)
    save_idioms(GroupNorms(), sys.argv[1], np.array([[0, 3, 1], [2, 2, 3]], dtype=np.int64))


if __name__ == "__main__":
    main()
