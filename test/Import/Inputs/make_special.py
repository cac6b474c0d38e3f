"""Saves a module of special functions, traced and scripted, with
PyTorch's outputs, for test/Import/special.test: torch.erfc (large
arguments of both signs), torch.erfinv (near -1 and 1, and +-1 itself),
torch.lgamma and torch.digamma (small, large and negative arguments, 0
and negative integers), torch.special.ndtr, ndtri and entr, integer
inputs (promoted to float32), and erfcx, log_ndtr (far into both tails),
i0, i0e, i1 and i1e (large arguments of both signs).

usage: make_special.py OUT

OUT receives traced.pt and scripted.pt (forward(x: f32 [64]) -> 15
tensors), x.npy and expected/output<k>.npy.
"""

import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_traced_and_scripted  # noqa: E402


class Special(nn.Module):
    def forward(self, x: torch.Tensor):
        probabilities = torch.sigmoid(x * 3)
        # Away from the poles: 0 and the negative integers.
        gamma_arguments = torch.cat([x * 4 + 0.3, torch.tensor([0.5, 1.0, 2.0, 30.5, 1e-3])])
        return (
            torch.erfc(x * 4),
            torch.erfinv(probabilities * 2 - 1),
            torch.erfinv(torch.tensor([-1.0, 1.0, 0.999999, -0.9999])),
            torch.lgamma(gamma_arguments),
            torch.lgamma(torch.tensor([0.0, -1.0, -2.5, -3.7])),
            torch.digamma(gamma_arguments),
            torch.digamma(torch.tensor([0.0, -1.0, -2.0, -2.5])),
            torch.special.ndtr(x * 3) + torch.special.ndtri(probabilities * 0.98 + 0.01)
            + torch.special.entr(torch.cat([probabilities[:-3], torch.tensor([0.0, -1.0, 1.0])])),
            torch.lgamma(torch.arange(1, 9)),
            torch.special.erfcx(torch.cat([x * 4, torch.tensor([-6.0, 30.0, 300.0])])),
            torch.special.log_ndtr(torch.cat([x * 3, torch.tensor([-30.0, -8.0, 6.0, 12.0])])),
            torch.i0(x * 5),
            torch.special.i0e(torch.cat([x * 5, torch.tensor([-50.0, 200.0])])),
            torch.special.i1(x * 5),
            torch.special.i1e(torch.cat([x * 5, torch.tensor([-50.0, 200.0])])),
        )


def main() -> None:
    torch.manual_seed(0)
    save_traced_and_scripted(Special(), sys.argv[1], {"x": torch.randn(64)})


if __name__ == "__main__":
    main()
