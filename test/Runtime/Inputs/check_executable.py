"""Compiles a model for one parallel layout, trains it with the executable on
local ranks and compares the run with the reference interpreter's
(reference_steps.py) through compare_run.py.

usage: check_executable.py MODEL.pt CONFIG.toml WORK --ranks N
       (--state DIR | --load CHECKPOINT) --data DIR --steps S
       --reference DIR [--set k=v ...] [--rtol R] [--loss-rtol R]
       [--checkpoint-format F]

WORK/out is titan-compile's output, WORK/ckpt the initial state saved in
the executable's checkpoint layout (titan-ckpt save --plan; with --load the
ranks start from CHECKPOINT instead, saved by any layout), WORK/after the
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
    parser.add_argument("--state", help="the initial state (global .npy files), saved under "
                        "the layout's checkpoint plan")
    parser.add_argument("--load", help="a checkpoint to start from instead of --state (any "
                        "layout's: the ranks reshard it as they load)")
    parser.add_argument("--data", required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--reference", required=True)
    parser.add_argument("--set", action="append", default=[])
    parser.add_argument("--checkpoint-format", default="torch2",
                        help="the module paths of WORK/after (titan-run's --checkpoint-format)")
    parser.add_argument("--rtol", default="1e-5")
    parser.add_argument("--loss-rtol", default="1e-6")
    parser.add_argument("--compile-flag", action="append", default=[],
                        help="a further flag of titan-compile")
    args = parser.parse_args()

    out = os.path.join(args.work, "out")
    sets = [flag for value in args.set for flag in ("--set", value)]
    run("titan-compile", args.model, "--config", args.config, *sets,
        *args.compile_flag, "-o", out)
    plan = os.path.join(out, "checkpoint-plan.txt")
    start = args.load
    if not start:
        start = os.path.join(args.work, "ckpt")
        run("titan-ckpt", "save", "--plan", plan, "--from", args.state, "--to", start)
    metrics = os.path.join(args.work, "metrics.jsonl")
    run("titan-run", out, "--nproc-per-node", str(args.ranks), "--",
        "--data", args.data, "--load", start,
        "--steps", str(args.steps), "--save", os.path.join(args.work, "after"),
        "--metrics", metrics, "--checkpoint-format", args.checkpoint_format)
    run("titan-ckpt", "load", "--plan", plan, "--from",
        os.path.join(args.work, "after"), "--to",
        os.path.join(args.work, "loaded"))
    here = os.path.dirname(os.path.abspath(__file__))
    return subprocess.run([sys.executable, os.path.join(here, "compare_run.py"),
                           metrics, os.path.join(args.work, "loaded"),
                           args.reference, "--rtol", args.rtol,
                           "--loss-rtol", args.loss_rtol]).returncode


if __name__ == "__main__":
    sys.exit(main())
