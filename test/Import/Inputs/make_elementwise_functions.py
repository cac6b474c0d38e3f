"""Saves a module of the elementwise functions titan writes with its own
ops in lib/Import/AtenMathOps.cpp, traced and scripted, with PyTorch's
outputs, for test/Import/elementwise-functions.test: atan, asin, acos,
atan2 (all four quadrants and the axes), asinh, acosh, atanh, log1p (of
small values too), logaddexp (with infinities), xlogy, xlog1py, hypot,
copysign, heaviside, sinc, deg2rad, rad2deg, softsign, tanhshrink,
hardshrink, softshrink, prelu (one weight and one per channel),
logcumsumexp (with -inf) and scripted math.atan / math.log1p of numbers.

usage: make_elementwise_functions.py OUT

OUT receives traced.pt and scripted.pt (forward(x: f32 [2, 6, 8],
edges: f32 [12]) -> tensors), x.npy, edges.npy and expected/output<k>.npy.
"""

import math
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_traced_and_scripted  # noqa: E402


class ElementwiseFunctions(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(6, 8))
        self.channel_weights = nn.Parameter(torch.rand(6) * 0.5)
        self.one_weight = nn.Parameter(torch.tensor([0.25]))

    def forward(self, x: torch.Tensor, edges: torch.Tensor):
        h = x * self.w
        unit = torch.tanh(h) * 0.99
        small = h * 1e-5
        masked = torch.where(h > 1.0, torch.full_like(h, -float("inf")), h)
        return (
            torch.atan(h * 3.0), torch.atan(edges), torch.arctan(small),
            torch.asin(unit), torch.acos(unit), torch.asin(edges.clamp(-1.0, 1.0)),
            torch.acos(edges.clamp(-1.0, 1.0)),
            torch.atan2(h, x), torch.atan2(edges, edges.flip(0)), torch.atan2(h, 2.0 * torch.ones_like(h)),
            torch.asinh(h * 4.0), torch.asinh(small), torch.acosh(1.0 + h.abs() * 3.0),
            torch.atanh(unit), torch.atanh(small),
            torch.log1p(h.abs()), torch.log1p(small), torch.log1p(edges.abs()),
            torch.logaddexp(masked, h * 2.0), torch.logaddexp(masked, masked),
            torch.xlogy(torch.where(h > 0, h, torch.zeros_like(h)), x.abs() + 0.1),
            torch.special.xlog1py(h, x.abs()),
            # x = 0 with y NaN (log of a negative edge) or -inf (log of 0).
            torch.xlogy(torch.zeros_like(edges), edges.log()),
            torch.hypot(h, x), torch.hypot(edges, edges),
            torch.copysign(h, x), torch.heaviside(torch.round(h), x),
            torch.sinc(h), torch.sinc(edges), torch.deg2rad(h * 90.0), torch.rad2deg(h),
            F.softsign(h), F.tanhshrink(h), F.hardshrink(h), F.hardshrink(h, 1.0),
            F.softshrink(h), F.softshrink(h, 1.5),
            F.prelu(h, self.channel_weights), F.prelu(h[0, 0], self.one_weight),
            torch.logcumsumexp(h, dim=-1), torch.logcumsumexp(masked, dim=1),
            h * math.atan(0.5) + math.log1p(1e-3),
        )


def main() -> None:
    torch.manual_seed(0)
    module = ElementwiseFunctions().eval()
    edges = torch.tensor([0.0, -0.0, 1.0, -1.0, 1e-7, -3e-8, 1e10, -1e10, 2.5, -0.5,
                          float("inf"), -float("inf")])
    inputs = {"x": torch.randn(2, 6, 8), "edges": edges}
    save_traced_and_scripted(module, sys.argv[1], inputs)


if __name__ == "__main__":
    main()
