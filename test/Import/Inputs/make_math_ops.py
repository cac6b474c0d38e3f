"""Saves a module of the elementwise functions, reductions and shape ops
that hand-written models use beyond the basics, traced and scripted, with
PyTorch's outputs, for test/Import/math-ops.test: log2, log10, exp2, expm1,
logit (with and without eps), sinh, cosh, tan, logaddexp, hardtanh, relu6,
hardsigmoid, logsigmoid, celu, threshold, lerp (a number and a tensor
weight), addcmul, addcdiv, clip, movedim, swapaxes, amin, all / any (of a
dim and of everything), nansum, nanmean, count_nonzero, diff (n = 1 and 2,
prepend / append), tensor_split (sections and indices), take_along_dim
(along a dim, broadcasting, and flat), cosine_similarity, var_mean,
std_mean, mv, dot, prod (a dim with zeros, everything, of int64), cumprod
(floats with a zero, int64) and unfold (windows that overlap and ones that
tile).

usage: make_math_ops.py OUT

OUT receives traced.pt and scripted.pt (forward(x: f32 [2, 6, 8],
ids: int64 [2, 6]) -> tensors), x.npy, ids.npy and expected/output<k>.npy.
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_traced_and_scripted  # noqa: E402


class MathOps(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(6, 8))
        self.v = nn.Parameter(torch.randn(8))

    def forward(self, x: torch.Tensor, ids: torch.Tensor):
        h = x * self.w
        positive = h.abs() + 0.5
        unit = torch.sigmoid(h)
        with_nan = torch.where(h > 1.0, torch.full_like(h, float("nan")), h)
        with_zero = torch.where(h.abs() < 0.3, torch.zeros_like(h), h)
        order = torch.argsort(h, dim=-1)
        return (
            torch.log2(positive), torch.log10(positive), torch.exp2(h),
            torch.expm1(h), torch.logit(unit), torch.logit(unit, eps=0.2),
            torch.sinh(h), torch.cosh(h), torch.tan(h * 0.5),
            torch.logaddexp(h, h * 2.0 - 1.0),
            F.hardtanh(h * 2.0), F.hardtanh(h, -0.5, 0.25), F.relu6(h * 5.0),
            F.hardsigmoid(h * 4.0), F.logsigmoid(h * 3.0),
            F.celu(h, alpha=0.5), F.threshold(h, 0.1, 2.0),
            torch.lerp(h, positive, 0.3), torch.lerp(h, positive, unit),
            torch.addcmul(h, positive, unit, value=0.5),
            torch.addcdiv(h, unit, positive, value=-2.0),
            h.clip(-0.5, 0.5), h.movedim(0, 2), h.movedim([0, 1], [2, 0]),
            h.swapaxes(0, 1), h.amin(-1), h.amin((0, 2), keepdim=True),
            (h > -1.0).all(-1), (h > -3.0).all(), (h > 1.5).any(1), (ids > 2).any(),
            with_nan.nansum(-1), with_nan.nanmean(1), torch.count_nonzero(with_zero, -1),
            torch.count_nonzero(ids), h.diff(dim=-1), h.diff(n=2, dim=1),
            h.diff(dim=-1, prepend=h[..., :1], append=h[..., -2:]), ids.diff(),
            h.tensor_split(3, dim=-1)[1], h.tensor_split([1, 4], dim=1)[2],
            torch.take_along_dim(h, order, dim=-1),
            torch.take_along_dim(h, order[:1, :, :3], dim=-1),
            torch.take_along_dim(h, ids.clamp(0, 5).abs()),
            F.cosine_similarity(h, positive, dim=-1), F.cosine_similarity(h, self.w, dim=1),
            torch.var_mean(h, dim=-1)[0], torch.var_mean(h, dim=-1)[1],
            torch.std_mean(h, dim=1, unbiased=False)[0], torch.std_mean(h, dim=1, unbiased=False)[1],
            torch.mv(self.w, self.v), torch.dot(self.v, self.v * 2.0),
            with_zero.prod(-1), h[0, :2].prod(), h.prod(1, keepdim=True), ids.prod(-1),
            with_zero.cumprod(-1), (ids + 1).cumprod(1), h.cumprod(0),
            h.unfold(-1, 3, 2), h.unfold(1, 2, 2), x.unfold(-1, 8, 1),
        )


def main() -> None:
    torch.manual_seed(0)
    module = MathOps()
    save_traced_and_scripted(module, sys.argv[1], {"x": torch.randn(2, 6, 8), "ids": torch.randint(-3, 5, (2, 6))})

if __name__ == "__main__":
    main()
