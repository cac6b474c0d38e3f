"""Saves a scripted module whose parameter is int8 (not trainable, and not a
dtype titan holds parameters in), for errors.test.

usage: make_int8_parameter.py OUT.pt
"""
import sys

import torch
from torch import nn


class Quantized(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.codes = nn.Parameter(torch.zeros(3, dtype=torch.int8), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.codes.float()


torch.jit.script(Quantized()).save(sys.argv[1])
