"""Inputs and expected outputs of the backward-only ops' lit test: the
expected values are torch autograd gradients of the forward ops (float64).

    gradients.py gen CASE DIR | check CASE DIR    (as oracle.py)

Run with /usr/bin/python3 (numpy + torch 1.13).
"""

import sys

import numpy as np
import torch
import torch.nn.functional as F

from oracle import case, main, randn, sdpa, t


def grads(outputs, inputs, cotangent):
    """The cotangents of `inputs` (float64 tensors) of `outputs(*inputs)`
    given the cotangent of its result."""
    leaves = [x.clone().requires_grad_() for x in inputs]
    return torch.autograd.grad(outputs(*leaves), leaves, cotangent)


@case
def gradients(rng):
    labels = rng.integers(0, 7, (6,))
    labels[[1, 4]] = -100
    inputs = {"x": randn(rng, 2, 3, 8), "w": randn(rng, 8),
              "dy": randn(rng, 2, 3, 8),
              "ids": np.array([[0, 3, 3], [6, 0, 3]]), "dh": randn(rng, 2, 3, 4),
              "q": randn(rng, 2, 4, 5, 8), "k": randn(rng, 2, 2, 5, 8),
              "v": randn(rng, 2, 2, 5, 8), "do": randn(rng, 2, 4, 5, 8),
              "logits": randn(rng, 6, 7), "labels": labels,
              "dloss": np.array(rng.standard_normal(), dtype=np.float32),
              "s": randn(rng, 2, 3)}

    def expected(i):
        x, w, dy = t(i["x"]), t(i["w"]), t(i["dy"])
        out = {}
        for name, approximate in [("gelu_none", "none"),
                                  ("gelu_tanh", "tanh")]:
            out[name], = grads(lambda a: F.gelu(a, approximate=approximate),
                               [x], dy)
        out["rms_dx"], out["rms_dw"] = grads(
            lambda a, b: a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True)
                                         + 1e-5) * b, [x, w], dy)
        out["rms_dx_plus"] = out["rms_dx"] + dy
        out["ln_dx"], out["ln_dw"], out["ln_db"] = grads(
            lambda a, b, c: F.layer_norm(a, (8,), b, c, 1e-5),
            [x, w, torch.zeros(8, dtype=torch.float64)], dy)
        out["dtable"], = grads(lambda table: F.embedding(t(i["ids"]), table),
                               [torch.zeros(7, 4, dtype=torch.float64)],
                               t(i["dh"]))
        qkv = [t(i["q"]), t(i["k"]), t(i["v"])]
        out["dq"], out["dk"], out["dv"] = grads(
            lambda q, k, v: sdpa(q, k, v, True, 8 ** -0.5), qkv, t(i["do"]))
        out["dq_s"], out["dk_s"], out["dv_s"] = grads(
            lambda q, k, v: sdpa(q, k, v, False, 0.5), qkv, t(i["do"]))
        out["dlogits"], = grads(
            lambda a: F.cross_entropy(a, t(i["labels"])), [t(i["logits"])],
            t(i["dloss"]))
        out["padded"], = grads(lambda a: a[1:5:2, 0:6:2],
                               [torch.zeros(5, 6, dtype=torch.float64)],
                               t(i["s"]))
        return out
    return inputs, expected


if __name__ == "__main__":
    sys.exit(main())
