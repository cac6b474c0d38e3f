#!/usr/bin/python3
"""Check a directory written by export.py: the model reloads and matches export.json.

    /usr/bin/python3 models/check_export.py DIR [--tol 1e-5]

Checks, printing one line per check (the lit tests FileCheck these lines):

* model.pt loads with ``torch.jit.load``;
* its parameters have exactly the names and full shapes listed in export.json,
  and their element count is export.json's ``param_count``;
* shape-only exports: every parameter has one element of storage;
* real-weight exports: the reloaded module, run on tokens.npy, reproduces
  logits.npy within relative error ``--tol`` (max |diff| / max |reference|).

Exits with status 1 on the first failed check.
"""

import argparse
import json
import os
import sys
from typing import Any, Dict

import numpy as np
import torch


def fail(message: str) -> None:
    print(f"FAIL: {message}")
    sys.exit(1)


def check_parameters(module: torch.jit.ScriptModule, info: Dict[str, Any]) -> None:
    """Names, shapes and count of the reloaded parameters against export.json."""
    loaded = dict(module.named_parameters())
    expected = {p["name"]: p["shape"] for p in info["parameters"]}
    if set(loaded) != set(expected):
        missing = sorted(set(expected) - set(loaded))[:5]
        extra = sorted(set(loaded) - set(expected))[:5]
        fail(f"parameter names differ: missing {missing}, unexpected {extra}")
    for name, shape in expected.items():
        if list(loaded[name].shape) != shape:
            fail(f"{name}: shape {list(loaded[name].shape)}, export.json says {shape}")
    count = sum(p.numel() for p in loaded.values())
    if count != info["param_count"]:
        fail(f"parameter count {count}, export.json says {info['param_count']}")
    print(f"parameters: {len(loaded)} tensors, names and shapes match export.json")
    print(f"param_count: {count}")
    for group in info["tied"]:
        print(f"tied: {' = '.join(group)}")

    if info["shape_only"]:
        big = [n for n, p in loaded.items() if p.storage().size() != 1]
        if big:
            fail(f"shape-only export has parameters with real storage: {big[:5]}")
        print(f"shape-only: all {len(loaded)} parameters have full shapes and one element of storage")


def check_logits(module: torch.jit.ScriptModule, directory: str, info: Dict[str, Any], tol: float) -> None:
    """Run the reloaded module on the saved batch and compare with the saved eager logits."""
    batch = info["batch"]
    tokens = torch.from_numpy(np.load(os.path.join(directory, batch["tokens"])))
    reference = np.load(os.path.join(directory, batch["logits"]))
    with torch.no_grad():
        logits = module(tokens).numpy()
    if logits.shape != reference.shape:
        fail(f"logits shape {list(logits.shape)}, logits.npy has {list(reference.shape)}")
    rel_err = float(np.abs(logits - reference).max() / np.abs(reference).max())
    print(f"logits: shape {list(logits.shape)} max_rel_err {rel_err:.3e}")
    if not rel_err <= tol:
        fail(f"logits differ from logits.npy: max relative error {rel_err:.3e} > {tol:.1e}")
    print("logits: match logits.npy")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory", help="an export.py output directory")
    parser.add_argument("--tol", type=float, default=1e-5, help="max relative error of the logits")
    opts = parser.parse_args()

    with open(os.path.join(opts.directory, "export.json")) as f:
        info = json.load(f)
    module = torch.jit.load(os.path.join(opts.directory, "model.pt"))
    kind = "shape-only" if info["shape_only"] else "weights"
    print(f"model: {info['model']} flavor: {info['flavor']} mode: {info['mode']} {kind}")
    print("args: " + " ".join(f"{key}={value}" for key, value in sorted(info["args"].items())))
    check_parameters(module, info)
    if not info["shape_only"]:
        check_logits(module, opts.directory, info, opts.tol)
    print("OK")


if __name__ == "__main__":
    main()
