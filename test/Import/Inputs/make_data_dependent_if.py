"""Saves a scripted module whose ifs test values known only at run time,
for test/Import/data-dependent-if.test: Phi-3's LongRoPE switch between
two tables of factors on torch.max(position_ids) + 1 against the original
context length, and an `if not bool(...)` whose branches compute on tensors
of their own (one by an in-place write into a tensor it created).

usage: make_data_dependent_if.py OUT

OUT receives script.pt (forward(x: f32 [2, 5, 8], position_ids: i64
[2, 5]) -> y [2, 5, 8]), and for the inputs short/ (positions below the
original length, and a y below the limit) and long/ (positions past it,
and a y over the limit): x.npy, position_ids.npy and expected.npy.
"""

import os
import sys

import numpy as np
import torch
from torch import nn


class LongRopeSwitch(nn.Module):
    def __init__(self):
        super().__init__()
        self.long_factor = [1.0, 2.0, 4.0, 8.0]
        self.short_factor = [1.0, 1.5, 2.0, 2.5]
        self.original_max_position_embeddings = 6
        self.proj = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
        seq_len = torch.max(position_ids) + 1
        if seq_len > self.original_max_position_embeddings:
            ext_factors = torch.tensor(self.long_factor, dtype=torch.float32)
        else:
            ext_factors = torch.tensor(self.short_factor, dtype=torch.float32)
        inv_freq = 1.0 / (ext_factors * 10000.0 ** (torch.arange(0, 8, 2).float() / 8))
        freqs = position_ids.float()[:, :, None] * inv_freq[None, None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        h = self.proj(x) * emb.cos()
        if not bool(h.abs().max() > 1.0):
            y = torch.zeros_like(h)
            y.add_(h * 2.0)
        else:
            y = h / h.abs().max()
        return y


def main() -> None:
    out = sys.argv[1]
    torch.manual_seed(0)
    module = torch.jit.script(LongRopeSwitch().eval())
    os.makedirs(out, exist_ok=True)
    module.save(os.path.join(out, "script.pt"))
    cases = {"short": (torch.randn(2, 5, 8) * 0.1, torch.arange(5).repeat(2, 1)),
             "long": (torch.randn(2, 5, 8) * 4.0, torch.arange(5).repeat(2, 1) + 5)}
    for name, (x, positions) in cases.items():
        os.makedirs(os.path.join(out, name), exist_ok=True)
        np.save(os.path.join(out, name, "x.npy"), x.numpy())
        np.save(os.path.join(out, name, "position_ids.npy"), positions.numpy())
        with torch.no_grad():
            np.save(os.path.join(out, name, "expected.npy"), module(x, positions).numpy())


if __name__ == "__main__":
    main()
