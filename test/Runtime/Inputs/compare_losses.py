"""Compares the losses two runs logged (their metrics.jsonl).

usage: compare_losses.py A.jsonl B.jsonl [--first N] [--last M] [--rtol R]

Takes each file's last line for every step (a resumed run appends), checks
that both have every step from --first to --last (default: all steps of A),
and that their losses agree to --rtol (relative; 0: bitwise). Prints
"match: K losses (worst relative error E)" or "MISMATCH ..." and exits 1.
"""

import argparse
import json
import sys


def losses(path):
    by_step = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                record = json.loads(line)
                by_step[record["step"]] = record["loss"]
    return by_step


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--first", type=int)
    parser.add_argument("--last", type=int)
    parser.add_argument("--rtol", type=float, default=0.0)
    args = parser.parse_args()
    a, b = losses(args.a), losses(args.b)
    first = args.first if args.first is not None else min(a)
    last = args.last if args.last is not None else max(a)
    worst = 0.0
    for step in range(first, last + 1):
        if step not in a or step not in b:
            print(f"MISMATCH: step {step} is missing from "
                  f"{args.a if step not in a else args.b}")
            return 1
        x, y = a[step], b[step]
        error = abs(x - y) / max(abs(x), 1e-30)
        worst = max(worst, error)
        if error > args.rtol:
            print(f"MISMATCH: step {step}: loss {x!r} vs {y!r} "
                  f"(relative error {error:.3g} > {args.rtol})")
            return 1
    print(f"match: {last - first + 1} losses (worst relative error {worst:.3g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
