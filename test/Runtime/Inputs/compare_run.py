"""Compares a compiled executable's run with the reference interpreter's.

usage: compare_run.py METRICS.jsonl LOADED_DIR REFERENCE_DIR [--rtol R]
       [--loss-rtol R] [--loss-atol A] [--grad-norm-rtol R] [--losses-only]

METRICS.jsonl is the executable's --metrics (one line per step), LOADED_DIR
the checkpoint it saved, read back as global .npy files (titan-ckpt load
--plan), REFERENCE_DIR what reference_steps.py wrote. The loss of every step
must agree to --loss-rtol, and every parameter and optimizer moment to
--rtol, normwise (||a - e|| / ||e||: elements near zero differ in their
last bits whatever the summation order). Where the reference has
grad_norms.npy (PyTorch's clip_grad_norm_), each step's logged grad_norm must
agree to --grad-norm-rtol. With --losses-only only the
losses are compared (REFERENCE_DIR/losses.npy may come from PyTorch:
test/TrainStep/Inputs/train_oracle.py). Prints the worst of each and
"match" or "MISMATCH".
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Spmd", "Inputs"))
from compare_outputs import load_values, normwise_error  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("metrics")
    parser.add_argument("loaded")
    parser.add_argument("reference")
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("--loss-rtol", type=float, default=1e-6)
    parser.add_argument("--loss-atol", type=float, default=0.0)
    parser.add_argument("--grad-norm-rtol", type=float, default=1e-4)
    parser.add_argument("--losses-only", action="store_true")
    args = parser.parse_args()

    with open(args.metrics) as f:
        steps = [json.loads(line) for line in f if line.strip()]
    losses = [step["loss"] for step in steps]
    expected_losses = np.load(os.path.join(args.reference, "losses.npy"))
    if len(losses) != len(expected_losses):
        print(f"MISMATCH: {len(losses)} steps, expected {len(expected_losses)}")
        return 1
    # The learning rate of every step, where the reference has them (titan
    # passes it as float32).
    lrs_file = os.path.join(args.reference, "lrs.npy")
    expected_lrs = np.load(lrs_file) if os.path.exists(lrs_file) else []
    for number, (step, expected) in enumerate(zip(steps, expected_lrs), 1):
        if abs(step["lr"] - expected) > 1e-6 * abs(expected) + 1e-12:
            print(f"MISMATCH: step {number} ran at lr {step['lr']!r}, "
                  f"expected {expected!r}")
            return 1
    # The gradient norm of every step (before clipping), where the reference
    # has them (train_oracle.py with --max-norm).
    norms_file = os.path.join(args.reference, "grad_norms.npy")
    if os.path.exists(norms_file) and all("grad_norm" in step for step in steps):
        expected_norms = np.load(norms_file)
        norm_err = max(abs(step["grad_norm"] - e) / abs(e)
                       for step, e in zip(steps, expected_norms))
        ok = norm_err <= args.grad_norm_rtol
        print(f"{'match' if ok else 'MISMATCH'}: {len(steps)} gradient norms "
              f"(worst rel {norm_err:.1e})")
        if not ok:
            return 1
    # The worst error as a multiple of the tolerance of its step.
    loss_err = max(abs(a - e) / (args.loss_atol + args.loss_rtol * abs(e))
                   for a, e in zip(losses, expected_losses))
    print("losses: " + " ".join(f"{a:.6f}" for a in losses))
    print("expected: " + " ".join(f"{e:.6f}" for e in expected_losses))

    if args.losses_only:
        ok = loss_err <= 1
        print(f"{'match' if ok else 'MISMATCH'}: {len(losses)} losses (worst "
              f"at {loss_err:.2f} of the tolerance)")
        return 0 if ok else 1
    worst, count = (0.0, "-"), 0
    for name in sorted(os.listdir(args.reference)):
        if name == "losses.npy" or not name.endswith(".npy"):
            continue
        path = os.path.join(args.loaded, name)
        if not os.path.exists(path):
            continue  # buffers (RoPE tables) are not in checkpoints
        actual = load_values(path)
        expected = load_values(os.path.join(args.reference, name))
        if actual.shape != expected.shape:
            print(f"MISMATCH: {name} shape {actual.shape} != {expected.shape}")
            return 1
        worst = max(worst, (normwise_error(actual, expected), name))
        count += 1
    ok = count > 0 and loss_err <= 1 and worst[0] <= args.rtol
    print(f"{'match' if ok else 'MISMATCH'}: {len(losses)} losses (worst at "
          f"{loss_err:.2f} of the tolerance), {count} tensors (worst "
          f"{worst[1]} rel {worst[0]:.1e})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
