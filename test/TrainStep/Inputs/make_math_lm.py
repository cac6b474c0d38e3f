"""Saves a language model built of the less common functions that
hand-written models use, traced, with PyTorch's logits, for
test/TrainStep/math-ops.test: a causal local mixer over windows of three
positions (torch.unfold of the left-padded sequence, weighted by a learned
kernel), a stick-breaking decay (torch.cumprod of 1 - sigmoid), a gate of
the cosine similarity with a learned direction, a product over groups of
four features (torch.prod), lerp towards a projection with a learned
weight, addcmul / addcdiv, logsigmoid, hardtanh, relu6, hardsigmoid,
celu, logaddexp, expm1, log2 and exp2, sinh, movedim, take_along_dim of a
sorted order, amin, diff along the sequence with a prepended zero,
var_mean over the hidden dim, a matrix of torch.diag of a parameter and
einsum's diagonal ("bss->bs") of the positions' similarities.

usage: make_math_lm.py OUT

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


class MathBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.kernel = nn.Parameter(torch.randn(3, dim) * 0.3)
        self.decay = nn.Linear(dim, dim)
        self.direction = nn.Parameter(torch.randn(dim))
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(dim, dim)
        self.towards = nn.Linear(dim, dim)
        self.weight = nn.Parameter(torch.full((dim,), 0.3))

    def forward(self, x):
        h = self.norm(x)
        b, s, d = h.shape
        # Causal windows of 3: positions t-2, t-1, t.
        padded = F.pad(h, (0, 0, 2, 0))
        windows = padded.unfold(1, 3, 1)  # [b, s, d, 3]
        local = (windows * self.kernel.movedim(0, 1)).sum(-1)
        # Stick-breaking decay along the sequence.
        keep = torch.cumprod(1.0 - 0.5 * torch.sigmoid(self.decay(h)), dim=1)
        gate = torch.sigmoid(4.0 * F.cosine_similarity(h, self.direction.expand_as(h), dim=-1))
        groups = torch.prod(1.0 + 0.2 * torch.tanh(self.up(h)).view(b, s, d, 4), dim=-1)
        mixed = torch.lerp(h, self.towards(h), self.weight)
        y = torch.addcmul(local, keep, groups, value=0.5) + gate[..., None] * mixed
        y = torch.addcdiv(y, F.hardtanh(h * 2.0), 1.0 + F.relu6(h * 3.0), value=0.3)
        y = y + F.logsigmoid(h) * F.hardsigmoid(h * 2.0) + 0.1 * F.celu(h, alpha=0.5)
        y = y + 0.1 * torch.logaddexp(h, -h) + 0.1 * torch.expm1(0.5 * h)
        y = y + 0.05 * torch.log2(1.0 + h * h) * torch.exp2(-h * h) + 0.05 * torch.sinh(0.5 * h)
        order = torch.argsort(h.detach(), dim=-1)
        y = y + 0.1 * torch.take_along_dim(h, order, dim=-1) + 0.1 * h.amin(-1, keepdim=True)
        y = y + 0.1 * torch.diff(h, dim=1, prepend=torch.zeros_like(h[:, :1]))
        var, mean = torch.var_mean(h, dim=-1, keepdim=True)
        y = y + 0.1 * (h - mean) * var
        # torch.diag of a vector parameter (a zero matrix it is padded into).
        y = y + 0.1 * h @ torch.diag(self.weight, 1)[1:, :-1]
        # The diagonal of the positions' similarities, by einsum's repeated
        # subscript: each position's squared norm.
        similar = torch.einsum("bsd,btd->bst", h, h)
        y = y + 0.01 * torch.einsum("bss->bs", similar)[..., None] * h
        return x + self.down(y)


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(BlocksLM(MathBlock), sys.argv[1])


if __name__ == "__main__":
    main()
