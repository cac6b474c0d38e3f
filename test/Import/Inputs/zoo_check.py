"""Checks a model of models/ against PyTorch 1.13 as the bundled models' lit
tests do, in one process (one torch import instead of one per step).

usage: zoo_check.py import|train|spmd MODEL FLAVOR OUT [--config CFG]
                    [--modes trace,script] [--batch B] [--seq S]

Each check exports the model with models/export.py (seeded weights, the
oracle batch) into OUT/<mode>, then runs titan's tools (from PATH) and the
comparison scripts of test/Import, test/TrainStep and test/Spmd:

  import  per mode: titan-compile --summary imports model.pt (the summary is
          printed), titan-eval runs @forward, and its logits equal PyTorch's
          (compare_npy.py, max rel 1e-5).
  train   per mode: train_oracle.py trains one step in PyTorch with CFG's
          AdamW and clipping settings; the train step of CFG (titan-compile
          --emit=train-step) run by run_steps.py has PyTorch's gradients, and
          its parameters are torch.optim.AdamW's applied to its gradients
          (rel 1e-4).
  spmd    per mode: the train step of CFG under FSDP 2 x TP 2 (CFG's tp_plan)
          on 4 simulated ranks equals the single-device step on the same
          global batch of B rows (compare_outputs.py, normwise rel 1e-5);
          AdamW eps 1e-6, as in test/Spmd.

Exits 1 on the first mismatch.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tomllib
from typing import Dict, List

TEST_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for directory in ("Import/Inputs", "TrainStep/Inputs", "Spmd/Inputs", "../models"):
    sys.path.insert(0, os.path.join(TEST_ROOT, directory))

import compare_npy  # noqa: E402
import compare_outputs  # noqa: E402
import export  # noqa: E402
import make_batch  # noqa: E402
import run_steps  # noqa: E402
import train_oracle  # noqa: E402


def run(command: List[str]) -> None:
    """Runs a tool; its output is passed through, a failure ends the check."""
    subprocess.run(command, check=True)


def export_model(opts: argparse.Namespace, mode: str, batch: int) -> Dict:
    """Exports the model traced or scripted into OUT/<mode>; returns export.json's content."""
    out = os.path.join(opts.out, mode)
    return dict(export.export(argparse.Namespace(
        model=opts.model, flavor=opts.flavor, out=out, mode=mode, rope="complex", shape_only=False,
        batch=batch, seq=opts.seq, seed=0, n_layers=None, set=[], trace_dtype="float32",
        dropout=None)), dir=out)


def optimizer_args(config: str) -> List[str]:
    """The AdamW and clipping settings of a training config as train_oracle.py / run_steps.py options."""
    with open(config, "rb") as f:
        cfg = tomllib.load(f)
    optimizer = cfg["optimizer"]
    return ["--lr", str(optimizer["lr"]), "--beta1", str(optimizer["beta1"]), "--beta2", str(optimizer["beta2"]),
            "--eps", str(optimizer["eps"]), "--weight-decay", str(optimizer["weight_decay"])]


def check_import(opts: argparse.Namespace, mode: str) -> int:
    info = export_model(opts, mode, opts.batch)
    d = info["dir"]
    inputs = os.path.join(d, "inputs")
    result = subprocess.run(
        ["titan-compile", os.path.join(d, "model.pt"), f"--input-shape={info['input']}={opts.batch}x{opts.seq}xi64",
         "--summary", "--export-weights", inputs, "-o", os.path.join(d, "forward.mlir")],
        check=True, capture_output=True, text=True)
    print(result.stderr, end="")
    shutil.copy(os.path.join(d, "tokens.npy"), os.path.join(inputs, info["input"] + ".npy"))
    run(["titan-eval", os.path.join(d, "forward.mlir"), "--entry=forward", f"--inputs={inputs}",
         f"--outputs={os.path.join(d, 'outputs')}"])
    return compare_npy.main([os.path.join(d, "outputs", "logits.npy"), os.path.join(d, "logits.npy"),
                             "--rtol", "1e-5"])


def check_train(opts: argparse.Namespace, mode: str) -> int:
    info = export_model(opts, mode, opts.batch)
    d = info["dir"]
    with open(opts.config, "rb") as f:
        max_norm = tomllib.load(f)["training"]["max_norm"]
    hyper = optimizer_args(opts.config)
    train_oracle.main([d, d, *hyper, "--max-norm", str(max_norm), "--steps", "1"])
    state = os.path.join(d, "state")
    step = os.path.join(d, "step.mlir")
    run(["titan-compile", os.path.join(d, "model.pt"), "--config", opts.config,
         f"--set=training.local_batch_size={opts.batch}", f"--set=training.seq_len={opts.seq}",
         "--emit=train-step", "--emit-grads", "--export-weights", state, "-o", step])
    shutil.copy(os.path.join(d, "tokens.npy"), os.path.join(state, info["input"] + ".npy"))
    shutil.copy(os.path.join(d, "labels.npy"), os.path.join(state, "labels.npy"))
    return run_steps.main([step, state, d, "--steps", "1", *hyper])


def check_spmd(opts: argparse.Namespace, mode: str) -> int:
    info = export_model(opts, mode, 1)
    d = info["dir"]
    model = os.path.join(d, "model.pt")
    state = os.path.join(d, "state")
    common = ["--config", opts.config, f"--set=training.seq_len={opts.seq}", "--set=optimizer.eps=1e-6",
              "--emit-grads"]
    run(["titan-compile", model, *common, f"--set=training.local_batch_size={opts.batch // 2}",
         "--set=parallelism.data_parallel_shard_degree=-1", "--set=parallelism.data_parallel_replicate_degree=1",
         "--set=parallelism.context_parallel_degree=1", "--set=parallelism.tensor_parallel_degree=2",
         "--emit=spmd", "--world-size", "4", "--export-weights", state, "-o", os.path.join(d, "spmd.mlir")])
    run(["titan-compile", model, *common, f"--set=training.local_batch_size={opts.batch}", "--emit=train-step",
         "-o", os.path.join(d, "single.mlir")])
    make_batch.main([state, str(opts.batch), str(opts.seq), str(info["args"]["vocab_size"])])
    os.replace(os.path.join(state, "tokens.npy"), os.path.join(state, info["input"] + ".npy"))
    one, ranks = os.path.join(d, "one"), os.path.join(d, "ranks")
    run(["titan-eval", os.path.join(d, "single.mlir"), "--entry=train_step", f"--inputs={state}",
         f"--outputs={one}"])
    run(["titan-eval", os.path.join(d, "spmd.mlir"), "--entry=train_step", f"--inputs={state}",
         f"--outputs={ranks}", "--ranks=4"])
    return compare_outputs.main([ranks, one])


CHECKS = {"import": check_import, "train": check_train, "spmd": check_spmd}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("check", choices=sorted(CHECKS))
    parser.add_argument("model", choices=sorted(export.FAMILIES))
    parser.add_argument("flavor")
    parser.add_argument("out")
    parser.add_argument("--config", help="the model's training config (TOML; train and spmd)")
    parser.add_argument("--modes", default="trace,script", help="comma-separated: trace, script")
    parser.add_argument("--batch", type=int, default=4, help="batch rows (spmd: the global batch)")
    parser.add_argument("--seq", type=int, default=16)
    opts = parser.parse_args()
    if opts.check != "import" and not opts.config:
        parser.error(f"{opts.check} needs --config")
    for mode in opts.modes.split(","):
        print(f"== {opts.model}/{opts.flavor} {mode}", flush=True)
        status = CHECKS[opts.check](opts, mode)
        sys.stdout.flush()
        if status:
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main())
