"""Compares every output of two titan-eval runs (of @train_step: with the loss).

usage: compare_outputs.py ACTUAL_DIR EXPECTED_DIR [--rtol R]

For each .npy in EXPECTED_DIR: the same file must exist in ACTUAL_DIR with
the same shape, and the normwise error ||a - e|| / ||e|| must be <= rtol
(summation order differs between one rank and N, so elements near zero
differ in their last bits; the norm is the well-conditioned measure).
Prints the loss of both, the worst output, and "match" or "MISMATCH".
"""

import argparse
import glob
import os
import sys
from typing import List, Optional

import numpy as np


def load_values(path: str) -> np.ndarray:
    """A .npy file's values as float64; titan writes bfloat16 tensors as their raw bits (uint16)."""
    array = np.load(path)
    if array.dtype == np.uint16:
        array = (array.astype(np.uint32) << 16).view(np.float32)
    return array.astype(np.float64)


def normwise_error(actual: np.ndarray, expected: np.ndarray) -> float:
    """||actual - expected|| / ||expected|| (the largest |actual| when expected is 0)."""
    norm = np.linalg.norm(expected)
    return float(np.linalg.norm(actual - expected) / norm) if norm > 0 else float(np.abs(actual).max())


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("actual")
    parser.add_argument("expected")
    parser.add_argument("--rtol", type=float, default=1e-5)
    args = parser.parse_args(argv)
    worst = (0.0, "-")
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(args.expected, "*.npy")))
    for name in names:
        expected = load_values(os.path.join(args.expected, name))
        path = os.path.join(args.actual, name)
        if not os.path.exists(path):
            print(f"MISMATCH: {name} missing")
            return 1
        actual = load_values(path)
        if actual.shape != expected.shape:
            print(f"MISMATCH: {name} shape {actual.shape} != {expected.shape}")
            return 1
        worst = max(worst, (normwise_error(actual, expected), name))
    if "loss.npy" in names:
        loss_a = float(np.load(os.path.join(args.actual, "loss.npy")))
        loss_e = float(np.load(os.path.join(args.expected, "loss.npy")))
        print(f"loss: {loss_a:.7f} (ranks) vs {loss_e:.7f} (one device)")
    verdict = "match" if worst[0] <= args.rtol else "MISMATCH"
    print(f"{verdict}: {len(names)} outputs, worst {worst[1]} rel {worst[0]:.2e}")
    return 0 if worst[0] <= args.rtol else 1


if __name__ == "__main__":
    sys.exit(main())
