"""Saves a scripted module whose control flow the import evaluates, for
test/Import/scripted-control.test: `if not self.training`, `if x.dtype in
[torch.float16, torch.bfloat16]`, an Optional[Tensor] argument left None
(Hugging Face's `attention_mask=None`) and an Optional carried through a
loop and tested with `is None` (T5's position_bias, computed by the first
block and reused by the next), built with in-place writes before, inside
and after ifs (T5's relative position buckets), and a scan loop writing
`out[:, t]` of a preallocated output (HF RWKV's time loop).

usage: make_scripted_control.py OUT

OUT receives script.pt, x.npy and expected/output0.npy (PyTorch's output
for mask None).
"""

import os
import sys
from typing import Optional

import numpy as np
import torch
from torch import nn


class ScriptedControl(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.doubled = False

    def make_bias(self, x: torch.Tensor) -> torch.Tensor:
        # In-place writes around ifs (T5's `relative_buckets += ...`): a
        # branch not taken writes b, a write of the if's result (b), a
        # branch taken that writes b and returns it, and a branch not
        # imported yet that reads b after the writes.
        b = torch.zeros_like(x)
        if self.doubled:
            b += x
        b += x * 0.5
        if not self.doubled:
            b.mul_(3.0)
        b.sub_(1.0)
        if self.doubled:
            b = b.contiguous()
        return b

    def block(self, x: torch.Tensor, bias: Optional[torch.Tensor]):
        if bias is None:
            bias = self.make_bias(x)
        return self.linear(x) + bias, bias

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        if x.dtype in [torch.float16, torch.bfloat16]:
            x = x.float()
        if not self.training:
            x = x * 2.0
        if mask is not None:
            x = x * mask
        bias: Optional[torch.Tensor] = None
        for _ in range(2):
            x, bias = self.block(x, bias)
        # A scan that fills a preallocated output along the sequence (HF
        # RWKV's time loop), read after the loop.
        out = torch.zeros_like(x)
        state = torch.zeros_like(x[:, 0])
        for t in range(x.size(1)):
            state = 0.5 * state + x[:, t]
            out[:, t] = state
        return out


def main() -> None:
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "expected"), exist_ok=True)
    torch.manual_seed(0)
    module = ScriptedControl().eval()
    x = np.random.RandomState(1).standard_normal((2, 3, 4)).astype(np.float32)
    np.save(os.path.join(out, "x.npy"), x)
    with torch.no_grad():
        np.save(os.path.join(out, "expected", "output0.npy"), module(torch.from_numpy(x)).numpy())
    torch.jit.save(torch.jit.script(module), os.path.join(out, "script.pt"))


if __name__ == "__main__":
    main()
