"""Saves a module whose lookups read input ids, ids computed from them and
positions, for test/Import/computed-ids.test.

usage: make_computed_ids.py OUT

OUT receives trace.pt and script.pt of ComputedIds (x f32 [2, 3, 4], ids
i64 [2, 3] in [0, 4)), expected/output<i>.npy, PyTorch's outputs, and
gather_activation.pt (a gather from x * 2, traced).
"""

import os
import sys
from typing import List

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_idioms  # noqa: E402


class ComputedIds(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.register_buffer("table", torch.arange(40, dtype=torch.float32).view(10, 4))

    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> List[torch.Tensor]:
        return [
            self.emb(ids),                    # the input: checked when read
            self.emb(ids + 1),                # computed: checked
            x.gather(2, ids[:, :, None]),     # an index into x's last dim
            self.table[ids],                  # the input again
            self.table[ids * 2],              # computed: checked
            self.emb(torch.arange(3)),        # proven positions
        ]


class GatherActivation(nn.Module):
    """torch.gather from a tensor the model computes: no table to name."""

    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        return (x * 2).gather(2, ids[:, :, None])


def main() -> None:
    torch.manual_seed(0)
    ids = np.array([[0, 3, 1], [2, 2, 3]], dtype=np.int64)
    save_idioms(ComputedIds(), sys.argv[1], ids)
    x = torch.zeros(2, 3, 4)
    torch.jit.save(torch.jit.trace(GatherActivation(), (x, torch.from_numpy(ids))),
                   os.path.join(sys.argv[1], "gather_activation.pt"))


if __name__ == "__main__":
    main()
