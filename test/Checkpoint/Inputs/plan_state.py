"""Training-state helpers for the checkpoint-plan tests (numpy only).

Subcommands:
  randomize STATE              overwrite every STATE/*.npy with seeded random
                               values of its shape and dtype (so that moments
                               and step are not all zero)
  compare SAVED LOADED         every LOADED/*.npy is byte-identical (dtype,
                               shape, bytes) to SAVED/<same name>
  by-key PLAN STATE OUT        write OUT/<key>.npy = STATE/<source>.npy for
                               every `tensor <key> <source> ...` and
                               `value <key> <source> ...` of PLAN
"""

import os
import sys

import numpy as np


def randomize(state):
    rng = np.random.default_rng(0)
    for name in sorted(os.listdir(state)):
        if not name.endswith(".npy"):
            continue
        path = os.path.join(state, name)
        array = np.load(path)
        if name == "step.npy":
            values = np.full(array.shape, 7, array.dtype)
        elif array.dtype.kind == "f":
            values = rng.standard_normal(array.shape).astype(array.dtype)
        else:
            values = rng.integers(0, 100, array.shape).astype(array.dtype)
        np.save(path, values)


def compare(saved, loaded):
    names = sorted(n for n in os.listdir(loaded) if n.endswith(".npy"))
    for name in names:
        a = np.load(os.path.join(saved, name))
        b = np.load(os.path.join(loaded, name))
        if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
            sys.exit(f"MISMATCH {name}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}")
    print(f"identical: {len(names)} tensors")


def by_key(plan, state, out):
    os.makedirs(out, exist_ok=True)
    with open(plan) as f:
        for line in f:
            fields = line.split()
            if fields and fields[0] in ("tensor", "value"):
                key, source = fields[1], fields[2]
                np.save(os.path.join(out, key + ".npy"),
                        np.load(os.path.join(state, source + ".npy")))


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    {"randomize": randomize, "compare": compare, "by-key": by_key}[command](*args)
