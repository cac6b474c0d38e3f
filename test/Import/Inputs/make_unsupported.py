"""Saves a scripted module whose forward uses an op titan does not import."""

import sys

import torch


class Unsupported(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.igamma(x, x) * 2


torch.jit.save(torch.jit.script(Unsupported()), sys.argv[1])
