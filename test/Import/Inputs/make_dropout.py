"""Saves modules that apply dropout in training mode, for
test/Import/dropout.test, and checks what titan computes for them.

usage: make_dropout.py save OUT
       make_dropout.py check OUTPUTS

save: OUT receives train.pt (forward(x: f32 [2, 64, 32]) -> three dropouts
of x: p = 0.25 twice, p = 1), traced in training mode, feature.pt
(nn.Dropout2d in training mode), inplace_train.pt and inplace_eval.pt
(nn.Dropout(inplace=True) of 2 x, traced in each mode) and x.npy (ones).

check: reads output0..2.npy of titan-eval and prints one line per fact:
the elements kept are those whose uniform number (titan.random_uniform's
generator, written again here from its definition: splitmix64 of the
element's position, stream 0 and 1, seed 0, step 0) is at least p, scaled
by 1 / (1 - p) as torch scales them; the share dropped is near p; the two
streams drop different elements; p = 1 drops all.
"""

import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

MASK = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15


def mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def uniform(seed: int, stream: int, step: int, counters: np.ndarray) -> np.ndarray:
    stream_key = mix((mix((seed + GAMMA) & MASK) + stream * GAMMA) & MASK)
    step_key = mix((stream_key + step * GAMMA) & MASK)
    bits = [mix((step_key + int(c) * GAMMA) & MASK) >> 40 for c in counters.ravel()]
    return (np.array(bits, dtype=np.float64) / float(1 << 24)).reshape(counters.shape)


class InPlaceDropout(nn.Module):
    """nn.Dropout(inplace=True) on a tensor the model computed."""

    def __init__(self) -> None:
        super().__init__()
        self.drop = nn.Dropout(0.25, inplace=True)

    def forward(self, x):
        y = x * 2.0
        self.drop(y)
        return y


class TrainingDropout(nn.Module):
    def forward(self, x):
        return [F.dropout(x, 0.25, True), F.dropout(x, 0.25, True), F.dropout(x, 1.0, True)]


def save(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    x = torch.ones(2, 64, 32)
    np.save(os.path.join(out, "x.npy"), x.numpy())
    torch.jit.trace(TrainingDropout().train(), (x,), check_trace=False).save(
        os.path.join(out, "train.pt"))
    torch.jit.trace(nn.Dropout2d(0.5).train(), (x,), check_trace=False).save(
        os.path.join(out, "feature.pt"))
    for mode in ("train", "eval"):
        module = InPlaceDropout().train(mode == "train")
        torch.jit.trace(module, (x,), check_trace=False).save(
            os.path.join(out, f"inplace_{mode}.pt"))


def check(outputs: str) -> None:
    y = [np.load(os.path.join(outputs, f"output{i}.npy")) for i in range(3)]
    positions = np.arange(y[0].size, dtype=np.int64).reshape(y[0].shape)
    scale = np.float32(1.0) * np.float32(1.0 / 0.75)
    for stream in (0, 1):
        keep = uniform(0, stream, 0, positions) >= 0.25
        expected = np.where(keep, scale, np.float32(0.0)).astype(np.float32)
        exact = np.array_equal(y[stream], expected)
        print(f"stream {stream}: {'equal' if exact else 'DIFFERENT'} to the generator's mask")
        dropped = float(np.mean(y[stream] == 0))
        print(f"stream {stream}: dropped share {'near' if abs(dropped - 0.25) < 0.03 else 'FAR FROM'} 0.25")
    differ = float(np.mean((y[0] == 0) != (y[1] == 0)))
    print(f"streams {'differ' if differ > 0.25 else 'AGREE'}")
    print(f"p = 1: {'all dropped' if not y[2].any() else 'SOME KEPT'}")


if __name__ == "__main__":
    {"save": save, "check": check}[sys.argv[1]](sys.argv[2])
