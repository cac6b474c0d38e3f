"""Compares .npy arrays: shape, then max |a - b| / max |b| <= tolerance
(NaN matches NaN only); two integer arrays must be equal.

usage: compare_npy.py ACTUAL EXPECTED [--rtol 1e-5] [--dtype]
ACTUAL and EXPECTED are two files, or two directories: then every .npy of
EXPECTED is compared with the file of the same name in ACTUAL. With
--dtype, the element types must be equal too.
Prints "match: <shape> max_rel_err=<e>" per array and exits 0, or
"MISMATCH ..." and 1.
"""

import argparse
import glob
import os
import sys
from typing import List, Optional

import numpy as np


def compare(actual_path: str, expected_path: str, rtol: float, label: str,
            dtype: bool = False) -> bool:
    if not os.path.exists(actual_path):
        print(f"MISMATCH{label}: {actual_path} missing")
        return False
    actual = np.load(actual_path)
    expected = np.load(expected_path)
    if dtype and actual.dtype != expected.dtype:
        print(f"MISMATCH{label} dtype {actual.dtype} != {expected.dtype}")
        return False
    if actual.shape != expected.shape:
        print(f"MISMATCH{label} shape {list(actual.shape)} != {list(expected.shape)}")
        return False
    # Integers must be equal, all 64 bits (a float64 holds 53).
    if np.issubdtype(actual.dtype, np.integer) and np.issubdtype(expected.dtype, np.integer):
        differ = np.argwhere(actual.astype(np.int64) != expected.astype(np.int64))
        if len(differ):
            first = tuple(int(i) for i in differ[0])
            print(f"MISMATCH{label}: {list(actual.shape)} {len(differ)} integers differ, "
                  f"first at {list(first)}: {actual[first]} != {expected[first]}")
            return False
    actual = actual.astype(np.float64)
    expected = expected.astype(np.float64)
    # Equal elements (infinities of one sign included, and NaN where the
    # expected value is NaN) differ by 0; the scale is that of the finite
    # expected values.
    equal = (actual == expected) | (np.isnan(actual) & np.isnan(expected))
    finite = np.abs(expected[np.isfinite(expected)])
    scale = max(finite.max(initial=0.0), np.finfo(np.float64).tiny)
    with np.errstate(invalid="ignore"):
        diff = np.where(equal, 0.0, np.abs(actual - expected))
    err = float(np.nan_to_num(diff, nan=np.inf).max(initial=0.0) / scale)
    verdict = "match" if err <= rtol else "MISMATCH"
    print(f"{verdict}{label}: {list(actual.shape)} max_rel_err={err:.3g} rtol={rtol}")
    return err <= rtol


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("actual")
    parser.add_argument("expected")
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("--dtype", action="store_true")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.expected):
        return 0 if compare(args.actual, args.expected, args.rtol, "", args.dtype) else 1
    ok = True
    for path in sorted(glob.glob(os.path.join(args.expected, "*.npy"))):
        name = os.path.basename(path)
        ok &= compare(os.path.join(args.actual, name), path, args.rtol,
                      f" {name[:-len('.npy')]}", args.dtype)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
