"""Inputs and comparison of titan-spmdize's numerics tests.

    spmdize_numerics.py gen DIR NAME:SHAPE[:i64:HIGH | :abs] ...
        writes DIR/NAME.npy for every argument: SHAPE like 8x16 (or "scalar"),
        standard normal float32 values, with ":abs" their absolute values
        (second moments, learning rates), or with ":i64:HIGH" int64 values
        in [0, HIGH) (token ids)
    spmdize_numerics.py compare REF OUT
        checks that every REF/NAME.npy (the global program run on one rank)
        equals OUT/NAME.npy (the spmdized program run on several ranks and
        assembled) within a relative tolerance of 1e-5

Run with /usr/bin/python3 (numpy).
"""

import os
import sys

import numpy as np

RTOL = 1e-5
ATOL = 1e-6


def gen(directory, specs):
    rng = np.random.default_rng(0)
    os.makedirs(directory, exist_ok=True)
    for spec in specs:
        name, shape, *kind = spec.split(":")
        dims = () if shape == "scalar" else tuple(int(d) for d in shape.split("x"))
        if kind and kind[0] == "i64":
            value = rng.integers(0, int(kind[1]), dims, dtype=np.int64)
        else:
            value = rng.standard_normal(dims).astype(np.float32)
            if kind == ["abs"]:
                value = np.abs(value)
        np.save(os.path.join(directory, name + ".npy"), value)


def compare(ref, out):
    names = sorted(f for f in os.listdir(ref) if f.endswith(".npy"))
    if not names:
        sys.exit(f"no outputs in {ref}")
    failed = False
    for name in names:
        want = np.load(os.path.join(ref, name))
        got = np.load(os.path.join(out, name))
        if want.shape != got.shape or want.dtype != got.dtype:
            print(f"{name}: {got.dtype}{list(got.shape)} != "
                  f"{want.dtype}{list(want.shape)}")
            failed = True
        elif not np.allclose(got.astype(np.float64), want.astype(np.float64),
                             rtol=RTOL, atol=ATOL):
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            print(f"{name}: max abs difference {diff.max()}")
            failed = True
        else:
            print(f"{name}: ok")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "gen":
        gen(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
