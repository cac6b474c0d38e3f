"""Cuts training batches out of a text file, one byte a token.

usage: corpus_batches.py TEXT OUT_DIR --steps N --batch B --seq S [--seed K]

Writes OUT_DIR/tokens.npy and OUT_DIR/labels.npy, int64 [N, B, S]: for each
step, B windows of S + 1 bytes at seeded random offsets; the labels are the
tokens shifted by one (next-byte prediction). A titan executable reads step
i's batch from row i (--data OUT_DIR).
"""

import argparse
import os

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("text")
    parser.add_argument("out")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--seq", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    data = np.frombuffer(open(args.text, "rb").read(), dtype=np.uint8).astype(np.int64)
    if len(data) <= args.seq + 1:
        raise SystemExit(f"{args.text} has {len(data)} bytes, fewer than seq + 1")
    rng = np.random.default_rng(args.seed)
    starts = rng.integers(0, len(data) - args.seq - 1, size=(args.steps, args.batch))
    windows = np.stack([np.stack([data[s:s + args.seq + 1] for s in row]) for row in starts])
    os.makedirs(args.out, exist_ok=True)
    np.save(os.path.join(args.out, "tokens.npy"), windows[:, :, :-1].copy())
    np.save(os.path.join(args.out, "labels.npy"), windows[:, :, 1:].copy())


if __name__ == "__main__":
    main()
