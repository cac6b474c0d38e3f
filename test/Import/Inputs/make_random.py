"""Saves a module that calls PyTorch's random ops, for
test/Import/random.test, and checks what titan computes for them.

usage: make_random.py save OUT
       make_random.py check INPUTS OUTPUTS
       make_random.py check-drop-path INPUTS OUTPUTS

save: OUT receives random.pt (forward(x: f32 [16, 64, 64], p: f32 [16, 64,
64]) -> the 18 tensors below, traced in training mode), drop_path.pt (a
scripted DropPath as timm writes it, in training mode), and x.npy (normal
numbers) and p.npy (probabilities) in OUT/in.

check: reads titan-eval's outputs and prints one line per op: that the
values are those of titan.random_uniform's generator (written again here
from its definition: splitmix64 of the element's position, the op's
stream, seed 0, step 0) put through the op's transform (exactly for the
discrete ops, to float32 rounding for the others), and that their
statistics are the distribution's (a mean, a spread, a share).

check-drop-path: the scripted DropPath's output for x: whole rows kept
(scaled by 1 / 0.75) where stream 0's number of the row is below 0.75.
"""

import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

GAMMA = 0x9E3779B97F4A7C15
MASK = (1 << 64) - 1


def mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def mix_array(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def uniform(stream: int, shape, seed: int = 0, step: int = 0) -> np.ndarray:
    """titan.random_uniform at the row-major positions of `shape`."""
    stream_key = mix((mix((seed + GAMMA) & MASK) + stream * GAMMA) & MASK)
    step_key = mix((stream_key + step * GAMMA) & MASK)
    counters = np.arange(int(np.prod(shape)), dtype=np.uint64)
    with np.errstate(over="ignore"):
        bits = mix_array(np.uint64(step_key) + counters * np.uint64(GAMMA))
    numbers = (bits >> np.uint64(40)).astype(np.float64) / float(1 << 24)
    return numbers.astype(np.float32).reshape(shape)


def normal(stream: int, shape) -> np.ndarray:
    """The Box-Muller transform of streams `stream` and `stream` + 1."""
    u1, u2 = uniform(stream, shape), uniform(stream + 1, shape)
    radius = np.sqrt(np.float32(-2.0) * np.log(np.float32(1.0) - u1))
    return radius * np.cos(u2 * np.float32(2 * np.pi))


def exponential(stream: int, shape, rate: float) -> np.ndarray:
    u = uniform(stream, shape)
    return np.maximum(-np.log(np.float32(1.0) - u), np.float32(2.0**-24)) / np.float32(rate)


class RandomOps(nn.Module):
    """Each op draws from streams of its own, in the order of the trace:
    drop_path's bernoulli_ 0, rand_like 1, uniform_ 2, randn_like 3 and 4,
    normal 5 and 6, bernoulli_ 7, bernoulli 8, exponential_ 9, randint 10,
    randperm 11, rrelu 12, alpha_dropout 13, dropout2d 14, normal_ 15 and
    16, randint_like 17, gumbel_softmax's exponential_ 18, random_ 19 and
    rand 20."""

    def forward(self, x, p):
        drop_path = x.new_empty((x.shape[0], 1, 1)).bernoulli_(0.8)
        return (
            torch.rand_like(x),
            torch.empty_like(x).uniform_(-2.0, 3.0),
            torch.randn_like(x),
            torch.normal(x, 0.5),
            torch.empty_like(x).bernoulli_(0.3),
            torch.bernoulli(p),
            torch.empty_like(x).exponential_(2.0),
            torch.randint(3, 10, (16, 64, 64)),
            torch.randperm(200),
            F.rrelu(x, 0.1, 0.3, training=True),
            F.alpha_dropout(x, 0.2, True),
            F.dropout2d(x.view(16, 64, 8, 8), 0.5, True),
            torch.empty_like(x).normal_(1.0, 2.0),
            x * drop_path / 0.8,
            torch.randint_like(x, 5),
            F.gumbel_softmax(x, tau=0.5, hard=True),
            torch.zeros(16, 64, 64, dtype=torch.long).random_(0, 10),
            torch.rand(4, 5, dtype=torch.float64),
        )


class DropPath(nn.Module):
    """timm's DropPath (stochastic depth), scripted."""

    def __init__(self, drop_prob: float = 0.25, scale_by_keep: bool = True):
        super().__init__()
        self.drop_prob = drop_prob
        self.scale_by_keep = scale_by_keep

    def forward(self, x):
        if self.drop_prob == 0.0 or not self.training:
            return x
        keep_prob = 1 - self.drop_prob
        shape = [x.shape[0]] + [1] * (x.dim() - 1)
        random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
        if keep_prob > 0.0 and self.scale_by_keep:
            random_tensor.div_(keep_prob)
        return x * random_tensor


def save(out: str) -> None:
    torch.manual_seed(0)
    os.makedirs(os.path.join(out, "in"), exist_ok=True)
    x = torch.randn(16, 64, 64)
    p = torch.rand(16, 64, 64)
    np.save(os.path.join(out, "in", "x.npy"), x.numpy())
    np.save(os.path.join(out, "in", "p.npy"), p.numpy())
    torch.jit.trace(RandomOps().train(), (x, p), check_trace=False).save(
        os.path.join(out, "random.pt"))
    torch.jit.script(DropPath().train()).save(os.path.join(out, "drop_path.pt"))


def report(name: str, fact: str, holds: bool) -> None:
    print(f"{name}: {fact}" if holds else f"{name}: NOT {fact}")


def near(value: float, target: float, within: float) -> bool:
    return abs(value - target) <= within


def check(inputs: str, outputs: str) -> None:
    x = np.load(os.path.join(inputs, "x.npy"))
    p = np.load(os.path.join(inputs, "p.npy"))
    y = [np.load(os.path.join(outputs, f"output{i}.npy")) for i in range(18)]
    shape = x.shape
    close = lambda a, b: a.shape == b.shape and np.allclose(a, b, rtol=1e-5, atol=1e-5)

    report("rand_like", "the generator's numbers", np.array_equal(y[0], uniform(0 + 1, shape)))
    report("rand_like", "mean 1/2, variance 1/12",
           near(y[0].mean(), 0.5, 0.01) and near(y[0].var(), 1 / 12, 0.002))
    u = uniform(2, shape)
    report("uniform_", "-2 + 5 u", close(y[1], u * np.float32(5.0) + np.float32(-2.0)))
    report("uniform_", "within [-2, 3)", y[1].min() >= -2 and y[1].max() < 3)
    z = normal(3, shape)
    report("randn_like", "Box-Muller of two streams", close(y[2], z))
    report("randn_like", "mean 0, variance 1",
           near(y[2].mean(), 0, 0.02) and near(y[2].var(), 1, 0.03))
    report("normal", "x + 0.5 z", close(y[3], x + np.float32(0.5) * normal(5, shape)))
    keep = uniform(7, shape) < np.float32(0.3)
    report("bernoulli_", "u < 0.3", np.array_equal(y[4], keep.astype(np.float32)))
    report("bernoulli_", "share 0.3", near(y[4].mean(), 0.3, 0.01))
    report("bernoulli", "u < p", np.array_equal(y[5], (uniform(8, shape) < p).astype(np.float32)))
    report("exponential_", "-log(1 - u) / 2", close(y[6], exponential(9, shape, 2.0)))
    report("exponential_", "positive, mean 1/2", y[6].min() > 0 and near(y[6].mean(), 0.5, 0.01))
    ints = np.floor(uniform(10, shape).astype(np.float64) * 7) + 3
    report("randint", "3 + floor(7 u)", y[7].dtype == np.int64 and np.array_equal(y[7], ints))
    counts = np.bincount(y[7].ravel() - 3, minlength=7) / y[7].size
    report("randint", "each of 3..9 a seventh", len(counts) == 7 and np.all(np.abs(counts - 1 / 7) < 0.01))
    order = np.argsort(uniform(11, (200,)), kind="stable")
    report("randperm", "the order of 200 numbers",
           y[8].dtype == np.int64 and np.array_equal(y[8], order))
    report("randperm", "a permutation", np.array_equal(np.sort(y[8]), np.arange(200)))
    slope = np.float32(0.1) + np.float32(0.2) * uniform(12, shape)
    report("rrelu", "x, or x times a slope in [0.1, 0.3)", close(y[9], np.where(x > 0, x, x * slope)))
    alpha = 1.7580993408473766
    a = 1 / np.sqrt((alpha * alpha * 0.2 + 1) * 0.8)
    kept = uniform(13, shape) >= np.float32(0.2)
    report("alpha_dropout", "a x + b where kept, else a constant",
           close(y[10], np.where(kept, a * x + alpha * a * 0.2, alpha * a * (0.2 - 1)).astype(np.float32)))
    report("alpha_dropout", "mean 0, variance 1 kept",
           near(y[10].mean(), 0, 0.02) and near(y[10].var(), 1, 0.03))
    channels = uniform(14, (16, 64, 1, 1)) >= np.float32(0.5)
    x4 = x.reshape(16, 64, 8, 8)
    report("dropout2d", "whole channels kept (times 2) or dropped",
           close(y[11], np.where(channels, x4 * np.float32(2), np.float32(0))))
    report("dropout2d", "half the channels dropped", near(1 - channels.mean(), 0.5, 0.06))
    report("normal_", "1 + 2 z", close(y[12], np.float32(2) * normal(15, shape) + np.float32(1)))
    rows = uniform(0, (16, 1, 1)) < np.float32(0.8)
    report("drop_path", "whole rows kept (times 1.25) or dropped",
           close(y[13], x * rows.astype(np.float32) / np.float32(0.8)))
    report("randint_like", "floor(5 u) in x's type",
           y[14].dtype == np.float32 and np.array_equal(y[14], np.floor(uniform(17, shape).astype(np.float64) * 5).astype(np.float32)))
    gumbel = (x - np.log(exponential(18, shape, 1.0))) / np.float32(0.5)
    hard = np.argmax(gumbel, axis=-1)
    report("gumbel_softmax", "one-hot at the perturbed logits' largest",
           np.array_equal(np.argmax(y[15], axis=-1), hard) and close(y[15].sum(-1), np.ones(shape[:2], np.float32)))
    report("random_", "floor(10 u) in int64",
           y[16].dtype == np.int64 and np.array_equal(y[16], np.floor(uniform(19, shape).astype(np.float64) * 10).astype(np.int64)))
    report("rand", "float64 numbers", y[17].dtype == np.float64 and np.array_equal(y[17], uniform(20, (4, 5)).astype(np.float64)))


def check_drop_path(inputs: str, outputs: str) -> None:
    x = np.load(os.path.join(inputs, "x.npy"))
    y = np.load(os.path.join(outputs, "logits.npy"))  # a single output
    rows = uniform(0, (x.shape[0], 1, 1)) < np.float32(0.75)
    report("scripted drop_path", "whole rows kept (times 1 / 0.75) or dropped",
           y.shape == x.shape and np.allclose(y, x * rows.astype(np.float32) / np.float32(0.75),
                                              rtol=1e-6, atol=1e-6))
    report("scripted drop_path", "some rows dropped, most kept", 0 < rows.sum() < x.shape[0])


if __name__ == "__main__":
    if sys.argv[1] == "save":
        save(sys.argv[2])
    elif sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3])
    else:
        check_drop_path(sys.argv[2], sys.argv[3])
