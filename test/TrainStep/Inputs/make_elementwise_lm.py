"""Saves a language model built of the elementwise functions titan writes
with its own ops (lib/Import/AtenMathOps.cpp), traced, with PyTorch's
logits, for test/TrainStep/elementwise-functions.test: an attention-free
mixer whose running scores are a logcumsumexp over causally masked
(-inf) positions, atan and atan2 features, asinh / acosh / atanh, log1p,
xlogy and xlog1py, hypot, copysign, sinc, softsign, tanhshrink,
softshrink, hardshrink, a per-channel prelu and logaddexp.

usage: make_elementwise_lm.py OUT

OUT receives model.pt (forward(tokens: int64 [2, 32]) -> logits),
tokens.npy and logits.npy.
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Import", "Inputs"))
from traced_lm import BlocksLM, save_traced_lm  # noqa: E402


class ElementwiseBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.score = nn.Linear(dim, dim, bias=False)  # a bias would cancel
        self.value = nn.Linear(dim, dim)
        self.angle = nn.Linear(dim, 2 * dim)
        self.down = nn.Linear(dim, dim)
        self.slope = nn.Parameter(torch.full((dim,), 0.2))

    def forward(self, x):
        h = self.norm(x)
        s = self.score(h)
        # Every fourth position's score is masked out (-inf) in the running
        # log-sum-exp; the first position never is.
        positions = torch.arange(h.shape[1]).view(1, -1, 1)
        masked = torch.where((positions % 4 == 3), torch.full_like(s, -float("inf")), s)
        running = torch.logcumsumexp(masked, dim=1)
        mixed = torch.exp(s - running) * self.value(h)
        a, b = self.angle(h).chunk(2, dim=-1)
        # atan2 and sinc of arguments away from 0, where their gradients
        # are ill-conditioned (a / (a^2 + b^2); cos(t) / t - sin(t) / t^2)
        # in PyTorch and titan alike.
        y = mixed + 0.3 * torch.atan(2.0 * a) + 0.2 * torch.atan2(a + 0.5 * torch.sign(a), b + 0.5 * torch.sign(b))
        y = y + 0.1 * torch.asinh(3.0 * b) + 0.1 * torch.acosh(1.5 + b * b)
        y = y + 0.1 * torch.atanh(0.9 * torch.tanh(a)) + 0.1 * torch.log1p(a * a)
        y = y + 0.1 * torch.xlogy(F.relu(a), 1.0 + b * b) + 0.1 * torch.special.xlog1py(b, a * a)
        y = y + 0.1 * torch.hypot(a, b) + 0.1 * torch.copysign(a, b) + 0.1 * torch.sinc(0.5 + b.abs())
        y = y + F.softsign(a) + F.tanhshrink(b) + F.softshrink(a, 0.3) + F.hardshrink(b, 0.2)
        y = F.prelu(y.transpose(1, 2), self.slope).transpose(1, 2)
        y = y + 0.1 * torch.logaddexp(a, b)
        return x + self.down(y)


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(BlocksLM(ElementwiseBlock), sys.argv[1])


if __name__ == "__main__":
    main()
