"""Saves modules of batch and instance normalization, with PyTorch's
outputs, for test/Import/batch-norm.test. In eval mode (traced and
scripted): nn.BatchNorm1d of [N, C] and [N, C, L], nn.BatchNorm2d with
running statistics made non-trivial, nn.InstanceNorm2d with and without
affine parameters, and nn.InstanceNorm1d that tracks running statistics
(used in eval). In training mode (traced): the same batch norms, which
normalize by the batch's statistics, and the instance norms.

usage: make_batch_norm.py OUT

OUT receives eval-traced.pt, eval-scripted.pt and train-traced.pt
(forward(x: f32 [4, 6, 5, 3]) -> 5 tensors), x.npy, expected-eval/ and
expected-train/ (output<k>.npy).
"""

import os
import sys

import numpy as np
import torch
from torch import nn


class Norms(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.flat = nn.BatchNorm1d(6)
        self.sequence = nn.BatchNorm1d(6, momentum=0.3)
        self.image = nn.BatchNorm2d(6, eps=1e-3)
        self.instance = nn.InstanceNorm2d(6, affine=True)
        self.tracked = nn.InstanceNorm1d(6, track_running_stats=True)
        for norm in (self.flat, self.sequence, self.image, self.instance, self.tracked):
            if norm.affine:
                nn.init.uniform_(norm.weight, 0.5, 1.5)
                nn.init.uniform_(norm.bias, -0.5, 0.5)
            if norm.track_running_stats:
                norm.running_mean.uniform_(-0.5, 0.5)
                norm.running_var.uniform_(0.5, 2.0)

    def forward(self, x: torch.Tensor):
        return (
            self.flat(x.mean(dim=(2, 3))),
            self.sequence(x.flatten(2)),
            self.image(x),
            self.instance(x),
            self.tracked(x.flatten(2)) + nn.functional.instance_norm(x).sum(),
        )


def save(module: nn.Module, x: torch.Tensor, out: str, mode: str, script: bool) -> None:
    os.makedirs(os.path.join(out, "expected-" + mode), exist_ok=True)
    module.train(mode == "train")
    with torch.no_grad():
        for k, output in enumerate(module(x)):
            np.save(os.path.join(out, "expected-" + mode, "output%d.npy" % k), output.numpy())
    torch.jit.trace(module, (x,), check_trace=False).save(os.path.join(out, mode + "-traced.pt"))
    if script:
        torch.jit.script(module).save(os.path.join(out, mode + "-scripted.pt"))


def main() -> None:
    out = sys.argv[1]
    torch.manual_seed(0)
    module = Norms()
    x = torch.randn(4, 6, 5, 3) * 2 + 0.5
    np.save(os.path.join(out, "x.npy"), x.numpy())
    save(module, x, out, "eval", script=True)
    save(module, x, out, "train", script=False)


if __name__ == "__main__":
    main()
