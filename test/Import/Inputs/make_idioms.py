"""Saves a module that uses the indexing, tiling, list and mask idioms of
models written by others, traced and scripted, with PyTorch's outputs as the
oracle.

usage: make_idioms.py OUT

OUT receives trace.pt, script.pt, x.npy (f32 [2, 3, 4]), ids.npy (i64 [2, 3])
and expected/output<i>.npy for each output of forward.
"""

import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_idioms  # noqa: E402


class Idioms(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        # Hugging Face's Conv1D: a [in, out] weight applied with addmm.
        self.nf = 6
        self.weight = nn.Parameter(torch.randn(4, 6, generator=gen))
        self.bias = nn.Parameter(torch.randn(6, generator=gen))
        self.register_buffer("table", torch.randn(10, 4, generator=gen))
        angles = torch.randn(10, 2, generator=gen)
        self.register_buffer("freqs", torch.polar(torch.ones_like(angles), angles))
        # A plain tensor attribute: tracing records it as a constant.
        self.mask = torch.tril(torch.ones(3, 3, dtype=torch.bool))

    def forward(self, x: torch.Tensor, ids: torch.Tensor):
        size_out = x.size()[:-1] + (self.nf,)
        y = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight, beta=0.5, alpha=2.0).view(size_out)
        rows = self.table[ids]
        columns = x[:, :, ids[0]]
        picked = torch.index_select(x, 2, ids[0])
        rotations = torch.view_as_real(self.freqs[ids])
        tiled = y.repeat(2, 1, 1, 1)
        spread = x.repeat_interleave(2, dim=1)
        flat = x.repeat_interleave(2)
        window = y.narrow(2, -4, 3)
        count = len(x.shape) + x.dim() + x.numel()
        outer = torch.outer(torch.arange(3).float(), self.bias) * count
        scaled = x * torch.tensor(x.size(-1) ** 0.5, dtype=x.dtype)
        constant = torch.tensor([[1.0, 2.0], [3.0, 4.0]]) + 1
        masked = x[:, :, :3].masked_fill(self.mask, 0.0)
        viewed = rows.reshape_as(x).view_as(x)
        causal = torch.ones(3, 3, dtype=torch.bool).tril()
        band = torch.ones(3, 3, dtype=torch.bool).triu(-1)
        data = x[0, :, :3] > 0
        combined = (causal & band) | (data & ~causal)
        logical = torch.logical_or(torch.logical_and(x[0, :, :3], causal), data)
        clipped = torch.clamp(x, min=-0.5, max=0.5) + x.clamp_min(0.1) + x.clamp_max(ids[0, 0].float())
        magnitudes = x.abs() + x.square()
        created = x.new_zeros(2, 2) + x.new_full((2, 2), 2.5) + x.new_ones((2, 2))
        return (y, rows, columns, picked, rotations, tiled, spread, flat, window, outer, scaled, constant, masked,
                viewed, combined, logical, clipped, magnitudes, created)


def main() -> None:
    save_idioms(Idioms(), sys.argv[1], np.array([[1, 0, 3], [2, 9, 2]], dtype=np.int64))


if __name__ == "__main__":
    main()
