"""Compiles a model for one parallel layout, trains it with the executable on
local ranks and compares the run with the reference interpreter's
(reference_steps.py) through compare_run.py.

usage: check_executable.py MODEL.pt CONFIG.toml WORK --ranks N --state DIR
       --data DIR --steps S --reference DIR [--set k=v ...] [--rtol R]

WORK/out is titan-compile's output, WORK/ckpt the initial state saved in
the executable's checkpoint layout (titan-ckpt save --plan), WORK/after the
checkpoint the ranks save after S steps and WORK/loaded its global tensors.
Prints compare_run.py's lines and exits with its status.
"""

import argparse
import os
import subprocess
import sys


def run(*command: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
        sys.exit(f"failed: {' '.join(command)}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("config")
    parser.add_argument("work")
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--state", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--reference", required=True)
    parser.add_argument("--set", action="append", default=[])
    parser.add_argument("--rtol", default="1e-5")
    args = parser.parse_args()

    out = os.path.join(args.work, "out")
    sets = [flag for value in args.set for flag in ("--set", value)]
    run("titan-compile", args.model, "--config", args.config, *sets, "-o", out)
    plan = os.path.join(out, "checkpoint-plan.txt")
    run("titan-ckpt", "save", "--plan", plan, "--from", args.state, "--to",
        os.path.join(args.work, "ckpt"))
    metrics = os.path.join(args.work, "metrics.jsonl")
    run("titan-run", out, "--nproc-per-node", str(args.ranks), "--",
        "--data", args.data, "--load", os.path.join(args.work, "ckpt"),
        "--steps", str(args.steps), "--save", os.path.join(args.work, "after"),
        "--metrics", metrics)
    run("titan-ckpt", "load", "--plan", plan, "--from",
        os.path.join(args.work, "after"), "--to",
        os.path.join(args.work, "loaded"))
    here = os.path.dirname(os.path.abspath(__file__))
    return subprocess.run([sys.executable, os.path.join(here, "compare_run.py"),
                           metrics, os.path.join(args.work, "loaded"),
                           args.reference, "--rtol", args.rtol]).returncode


if __name__ == "__main__":
    sys.exit(main())
