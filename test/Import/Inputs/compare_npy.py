"""Compares two .npy arrays: shape, then max |a - b| / max |b| <= tolerance.

usage: compare_npy.py ACTUAL EXPECTED [--rtol 1e-5]
Prints "match: <shape> max_rel_err=<e>" and exits 0, or "MISMATCH ..." and 1.
"""

import argparse
import sys

import numpy as np


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("actual")
    parser.add_argument("expected")
    parser.add_argument("--rtol", type=float, default=1e-5)
    args = parser.parse_args()
    actual = np.load(args.actual).astype(np.float64)
    expected = np.load(args.expected).astype(np.float64)
    if actual.shape != expected.shape:
        print(f"MISMATCH shape {list(actual.shape)} != {list(expected.shape)}")
        return 1
    scale = max(np.abs(expected).max(), np.finfo(np.float64).tiny)
    err = float(np.abs(actual - expected).max() / scale)
    verdict = "match" if err <= args.rtol else "MISMATCH"
    print(f"{verdict}: {list(actual.shape)} max_rel_err={err:.3g} rtol={args.rtol}")
    return 0 if err <= args.rtol else 1


if __name__ == "__main__":
    sys.exit(main())
