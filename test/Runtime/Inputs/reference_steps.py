"""Runs a single-device @train_step N times in titan's reference interpreter
(titan-eval), feeding each step's parameters and optimizer state into the
next: the expected result of a compiled executable's N steps.

usage: reference_steps.py STEP.mlir STATE_DIR DATA_DIR STEPS OUT_DIR

STATE_DIR holds the initial state (titan-compile --export-weights: params,
moments, lr, step; a state loaded from a checkpoint continues at its step); DATA_DIR the batch every step uses (tokens.npy,
labels.npy, [batch, seq]). OUT_DIR gets the state after the last step under
the executable's checkpoint source names (<fqn>, exp_avg.<fqn>,
exp_avg_sq.<fqn>) and losses.npy, the loss of every step.
"""

import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np


def main() -> int:
    step_mlir, state, data, steps, out = sys.argv[1:6]
    steps = int(steps)
    titan_eval = os.environ.get("TITAN_EVAL", "titan-eval")
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(dir=out)
    current = os.path.join(work, "in")
    shutil.copytree(state, current)
    for name in ("tokens.npy", "labels.npy"):
        shutil.copy(os.path.join(data, name), current)
    # The steps done before (a state loaded from a checkpoint continues).
    done = int(np.load(os.path.join(current, "step.npy")))
    losses = []
    for step in range(done, done + steps):
        np.save(os.path.join(current, "step.npy"), np.array(step, dtype=np.float32))
        result = os.path.join(work, "out%d" % step)
        subprocess.run([titan_eval, step_mlir, "--entry=train_step",
                        "--inputs=" + current, "--outputs=" + result], check=True)
        losses.append(float(np.load(os.path.join(result, "loss.npy"))))
        # The next step starts from this one's parameters and moments.
        for name in os.listdir(result):
            if name.startswith("param."):
                shutil.copy(os.path.join(result, name),
                            os.path.join(current, name[len("param."):]))
            elif name.startswith("exp_avg"):
                shutil.copy(os.path.join(result, name), os.path.join(current, name))
    for name in os.listdir(current):
        if name not in ("tokens.npy", "labels.npy", "lr.npy", "step.npy"):
            shutil.copy(os.path.join(current, name), os.path.join(out, name))
    np.save(os.path.join(out, "losses.npy"), np.array(losses))
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
