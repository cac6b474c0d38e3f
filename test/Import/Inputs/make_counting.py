"""Saves a module of counting ops, for test/Import/counting.test:
torch.histc (values on the bins' edges, below min and above max; the
router's tokens per expert as torchtitan counts them, `histc(ids, bins=E,
min=0, max=E)`), torch.bincount (of top-k expert ids up to minlength, with
and without weights; of positions whose range the import proves, longer
than minlength) and torch.linspace / logspace, traced and scripted.

usage: make_counting.py OUT

OUT receives traced.pt and scripted.pt (forward(x: f32 [2, 6, 8]) ->
tensors), x.npy and expected/output<k>.npy.
"""

import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_traced_and_scripted  # noqa: E402


class Counts(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.router = nn.Linear(8, 8, bias=False)

    def forward(self, x: torch.Tensor):
        probs = self.router(x).softmax(-1)
        weights, experts = torch.topk(probs, 2, dim=-1)
        flat = experts.reshape(-1)
        return (
            torch.histc(x, bins=7, min=-2.0, max=2.0),
            torch.histc(flat.float(), bins=8, min=0, max=8),
            torch.bincount(flat, minlength=8),
            torch.bincount(flat, weights=weights.reshape(-1), minlength=8),
            torch.bincount(torch.arange(12) % 5, minlength=3) + flat[:1],
            x[0, 0, :5] + torch.linspace(-1.5, 2.5, 5),
            torch.logspace(-2, 2, 9) + torch.logspace(0, 3, 4, base=2.0).sum(),
        )


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 6, 8)
    # Values on the bins' edges (each bin is 4/7 wide), at min and max,
    # and outside the range.
    x[0, 0, :6] = torch.tensor([-2.0, 2.0, -2.0 + 4.0 / 7.0, 0.0, -2.5, 3.0])
    save_traced_and_scripted(Counts().eval(), sys.argv[1], {"x": x})


if __name__ == "__main__":
    main()
