"""Saves a module of the activations and statistics that models written by
hand use and that titan decomposes into its own ops (leaky_relu, elu, selu,
softplus, mish, hardswish, log1p, glu, var, std, layer_norm over two
dims) or imports as one (erf),
traced and scripted, with PyTorch's outputs as the oracle.

usage: make_activations.py OUT

OUT receives trace.pt, script.pt, x.npy (f32 [2, 3, 4]), ids.npy and
expected/output<i>.npy for each output of forward.
"""

import math
import os
import sys
from typing import List

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_idioms  # noqa: E402


class Activations(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mish = nn.Mish()
        self.softplus = nn.Softplus(beta=2.0, threshold=5.0)
        # Identity in eval mode, which titan warns about.
        self.drop = nn.Dropout(0.2)
        # Over the last two dims, with a weight and bias of their shape.
        self.norm = nn.LayerNorm([3, 4])
        with torch.no_grad():
            self.norm.weight.copy_(torch.linspace(0.5, 1.5, 12).reshape(3, 4))
            self.norm.bias.copy_(torch.linspace(-0.2, 0.3, 12).reshape(3, 4))

    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> List[torch.Tensor]:
        # Magnitudes up to ~30: softplus and mish past their thresholds,
        # elu's exponential far below zero.
        big = self.drop(x) * 12.0
        return [
            F.leaky_relu(big, 0.2),
            F.leaky_relu(x),
            F.elu(big, alpha=0.7),
            F.selu(x),
            F.softplus(big),
            self.softplus(big),
            self.mish(big),
            F.hardswish(big),
            torch.log1p(x.abs()),
            F.glu(x, -1),
            F.glu(x, dim=1 - 2),
            x.var(-1, keepdim=True),
            x.var(dim=(0, 2), unbiased=False),
            x.std(1),
            torch.var(x),
            torch.std(x, dim=0, keepdim=True),
            torch.erf(x * 2.0),
            # GELU written out with erf, as older codebases (BERT's) do.
            x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0))),
            self.norm(x),
        ]


if __name__ == "__main__":
    save_idioms(Activations(), sys.argv[1],
                np.zeros((2, 3), dtype=np.int64))
