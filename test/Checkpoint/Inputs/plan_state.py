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
  rank PLAN STATE R LOADED     LOADED/<source>.npy is byte-identical to the
                               box rank R holds of STATE/<source>.npy for
                               every tensor of PLAN (the whole 0-d tensor for
                               a value), and LOADED has nothing else
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


def parse_ints(field):
    return [int(x) for x in field.strip("[]").split(",") if x]


def rank(plan, state, r, loaded):
    expected = {}
    with open(plan) as f:
        source = None
        for line in f:
            fields = line.split()
            if fields and fields[0] == "tensor":
                source = fields[2]
            elif fields and fields[0] == "box" and fields[1] == r:
                offsets, sizes = parse_ints(fields[2]), parse_ints(fields[3])
                expected[source] = tuple(
                    slice(o, o + s) for o, s in zip(offsets, sizes))
            elif fields and fields[0] == "value":
                expected[fields[2]] = ()
    names = sorted(n for n in os.listdir(loaded) if n.endswith(".npy"))
    if names != sorted(source + ".npy" for source in expected):
        sys.exit(f"MISMATCH: {loaded} holds {len(names)} files, rank {r} "
                 f"holds {len(expected)} sources")
    for source, box in expected.items():
        whole = np.load(os.path.join(state, source + ".npy"))
        a = np.array(whole[box], order="C")
        b = np.load(os.path.join(loaded, source + ".npy"))
        if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
            sys.exit(f"MISMATCH {source}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}")
    print(f"rank {r}: identical: {len(expected)} sources")


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    {"randomize": randomize, "compare": compare, "by-key": by_key,
     "rank": rank}[command](*args)
