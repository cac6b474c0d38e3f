"""Inputs and numpy oracle of Interpreter/integer-arithmetic.mlir.

gen DIR: random int64 and int32 operands over the whole range, with the
extremes (the largest value plus one wraps, the most negative value negated
is itself). check DIR: compares DIR/out/*.npy with numpy's wrapping
arithmetic; prints "match: N outputs" or exits with the mismatch."""
import os
import sys

import numpy as np

mode, root = sys.argv[1], sys.argv[2]
if mode == "gen":
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(0)
    for bits in (64, 32):
        dtype = np.int64 if bits == 64 else np.int32
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, (2, 5), dtype=dtype, endpoint=True)
        b = rng.integers(info.min, info.max, (2, 5), dtype=dtype, endpoint=True)
        a[0, 0], b[0, 0] = info.max, 1
        a[0, 1], b[0, 1] = info.min, -1
        a[1, 0], b[1, 0] = 3, -7
        np.save(os.path.join(root, "a%d.npy" % bits), a)
        np.save(os.path.join(root, "b%d.npy" % bits), b)
    sys.exit(0)

count = 0
with np.errstate(over="ignore"):
    for bits in (64, 32):
        a = np.load(os.path.join(root, "a%d.npy" % bits))
        b = np.load(os.path.join(root, "b%d.npy" % bits))
        expected = {"add": a + b, "sub": a - b, "mul": a * b,
                    "max": np.maximum(a, b), "neg": -a}
        for name, want in expected.items():
            got = np.load(os.path.join(root, "out", "%s%d.npy" % (name, bits)))
            if got.dtype != want.dtype or not np.array_equal(got, want):
                sys.exit("MISMATCH: %s%d: %s, expected %s" % (name, bits, got, want))
            count += 1
print("match: %d outputs" % count)
