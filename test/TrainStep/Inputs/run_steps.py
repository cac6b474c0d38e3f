"""Runs @train_step N times with titan-eval, feeding each step's parameters
and optimizer state into the next, and checks the results against the
PyTorch oracle's (train_oracle.py).

usage: run_steps.py STEP.mlir STATE_DIR ORACLE_DIR --steps N [--rtol R]
       [--grad-rtol G] [--param-rtol P] --lr L --beta1 B1 --beta2 B2 --eps E
       --weight-decay W

--grad-rtol bounds the gradients' error and --param-rtol the parameters'
after the AdamW update (default: --rtol, which bounds the losses).
Parameters the oracle found no gradient reaches (expected/no_grad.txt) must
come out of every step unchanged, bit for bit, as torch.optim.AdamW leaves
them. bf16 tensors (pure bf16 training) are .npy files of their raw bits
(uint16).

STATE_DIR holds the initial training state (titan-compile --export-weights);
tokens.npy and labels.npy are copied in from ORACLE_DIR's model and oracle.
Prints the loss curves and one verdict line per comparison.
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
from typing import List, Optional

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Spmd", "Inputs"))
from compare_outputs import load_values  # noqa: E402


def rel_err(actual: np.ndarray, expected: np.ndarray, floor: float = 1e-30) -> float:
    """The largest error relative to the largest expected element, or to
    `floor` where that is smaller."""
    scale = max(float(np.abs(expected).max()), floor)
    return float(np.abs(actual.astype(np.float64) - expected).max() / scale)


# A gradient a thousand times smaller than the step's largest is measured
# against a thousandth of that: one that is zero in exact arithmetic (a key
# projection's bias, which softmax cancels) is float32 rounding noise in
# PyTorch and titan alike, which a relative check would compare with itself.
GRADIENT_FLOOR = 1e-3


def no_gradient(oracle: str) -> List[str]:
    """The parameters no gradient reaches, by the oracle."""
    path = os.path.join(oracle, "expected", "no_grad.txt")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().split()


def adamw_reference(args, out: str, name: str) -> np.ndarray:
    """torch.optim.AdamW's first step from the initial parameter and titan's
    (clipped) gradient: checks titan's optimizer arithmetic in isolation.

    Comparing titan's updated parameters with the oracle's directly would be
    ill-conditioned: the first AdamW step moves each element by about
    lr * g / (|g| + eps), which turns fp32 rounding noise in gradients that
    are mathematically zero (e.g. a key bias) into full-size steps.
    """
    import torch

    stored = np.load(os.path.join(args.state, name + ".npy"))
    param = torch.tensor(load_values(os.path.join(args.state, name + ".npy")).astype(np.float32),
                         requires_grad=True)
    if name in no_gradient(args.oracle):
        return param.detach().numpy()  # AdamW skips a parameter whose .grad is None.
    param.grad = torch.tensor(load_values(os.path.join(out, f"grad.{name}.npy")).astype(np.float32))

    optimizer = torch.optim.AdamW([param], lr=args.lr, betas=(args.beta1, args.beta2),
                                  eps=args.eps, weight_decay=args.weight_decay)
    optimizer.step()
    if stored.dtype == np.uint16:
        # Pure bf16 training: torch's fused AdamW computes the float32
        # update of the bf16 values and rounds it once.
        return param.detach().to(torch.bfloat16).float().numpy()
    return param.detach().numpy()


def compare_first_step(args, out: str, expected: str) -> bool:
    """Gradients against the oracle and parameters against AdamW applied to
    titan's gradients, after step 1."""
    ok = True
    grads = sorted(glob.glob(os.path.join(expected, "grad.*.npy")))
    names = [os.path.basename(f)[len("grad."):-len(".npy")] for f in grads]
    floor = GRADIENT_FLOOR * max(float(np.abs(np.load(f)).max()) for f in grads)
    checks = (
        ("grads vs PyTorch", [(rel_err(load_values(os.path.join(out, f"grad.{n}.npy")),
                                       np.load(os.path.join(expected, f"grad.{n}.npy")), floor), n)
                              for n in names]),
        ("parameters vs torch.optim.AdamW", [(rel_err(load_values(os.path.join(out, f"param.{n}.npy")),
                                                      adamw_reference(args, out, n)), n) for n in names]),
    )
    for (what, errors), rtol in zip(checks, (args.grad_rtol, args.param_rtol)):
        worst = max(errors)
        verdict = "match" if worst[0] <= rtol else "MISMATCH"
        ok &= worst[0] <= rtol
        print(f"{verdict}: {len(errors)} {what} after step 1, worst {worst[1]} rel {worst[0]:.2e}")
    return ok


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("step_mlir")
    parser.add_argument("state")
    parser.add_argument("oracle")
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--grad-rtol", type=float)
    parser.add_argument("--param-rtol", type=float)
    parser.add_argument("--titan-eval", default="titan-eval")
    for name in ("lr", "beta1", "beta2", "eps", "weight-decay"):
        parser.add_argument("--" + name, type=float, required=True)
    args = parser.parse_args(argv)
    if args.grad_rtol is None:
        args.grad_rtol = args.rtol
    if args.param_rtol is None:
        args.param_rtol = args.rtol

    expected = os.path.join(args.oracle, "expected")
    frozen = {name: np.load(os.path.join(args.state, name + ".npy"))
              for name in no_gradient(args.oracle)}
    losses, grad_norms = [], []
    ok = True
    for step in range(args.steps):
        out = os.path.join(args.state + ".steps", str(step))
        subprocess.run([args.titan_eval, args.step_mlir, "--entry=train_step",
                        f"--inputs={args.state}", f"--outputs={out}"], check=True)
        losses.append(float(np.load(os.path.join(out, "loss.npy"))))
        if os.path.exists(os.path.join(out, "grad_norm.npy")):
            grad_norms.append(float(np.load(os.path.join(out, "grad_norm.npy"))))
        if step == 0:
            ok &= compare_first_step(args, out, expected)
        # Next state: param.<fqn> -> <fqn>, moments keep their names.
        for path in glob.glob(os.path.join(out, "*.npy")):
            name = os.path.basename(path)
            if name.startswith("param."):
                shutil.copy(path, os.path.join(args.state, name[len("param."):]))
            elif name.startswith("exp_avg"):
                shutil.copy(path, os.path.join(args.state, name))
        step_file = os.path.join(args.state, "step.npy")
        np.save(step_file, np.load(step_file) + np.float32(1))
    if frozen:
        kept = all(np.array_equal(np.load(os.path.join(args.state, name + ".npy")), value)
                   for name, value in frozen.items())
        ok &= kept
        print(f"{'match' if kept else 'MISMATCH'}: {len(frozen)} parameters without "
              f"gradient unchanged over {args.steps} steps")
    reference = np.load(os.path.join(expected, "losses.npy"))
    norms_file = os.path.join(expected, "grad_norms.npy")
    if grad_norms and os.path.exists(norms_file):
        norm_err = rel_err(np.array(grad_norms), np.load(norms_file)[: len(grad_norms)])
        ok &= norm_err <= args.grad_rtol
        print(f"{'match' if norm_err <= args.grad_rtol else 'MISMATCH'}: "
              f"{len(grad_norms)} gradient norms vs clip_grad_norm_, rel {norm_err:.2e}")
    err = rel_err(np.array(losses), reference[: len(losses)])
    print("titan losses:  " + " ".join(f"{x:.6f}" for x in losses))
    print("torch losses:  " + " ".join(f"{x:.6f}" for x in reference[: len(losses)]))
    verdict = "match" if err <= args.rtol else "MISMATCH"
    ok &= err <= args.rtol
    print(f"{verdict}: loss curve over {len(losses)} steps rel {err:.2e}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
