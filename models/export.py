#!/usr/bin/python3
"""Export a model of models/ to TorchScript, with the files the importer is tested against.

Usage (always with Debian's /usr/bin/python3, which has torch 1.13):

    /usr/bin/python3 models/export.py --model llama3 --flavor debugmodel --out DIR
    /usr/bin/python3 models/export.py --model llama3 --flavor 405B --out DIR
    /usr/bin/python3 models/export.py --model gpt2 --flavor tiny --out DIR --mode script
    /usr/bin/python3 models/export.py --model qwen2 --flavor tiny --out DIR   (also gemma, phi)

DIR receives:

    model.pt      the TorchScript module (forward(tokens: int64 [B, S]) -> fp32 logits [B, S, V];
                  the Hugging Face style families name the input input_ids)
    export.json   model, flavor, mode, the flavor's arguments, parameter names/shapes/counts,
                  tied parameters, and (for real weights) the batch files below
    tokens.npy    (real weights only) a fixed batch, int64 [B, S], from numpy's seeded RandomState
    logits.npy    (real weights only) PyTorch's eager logits for that batch (as fp32): the oracle

``--trace-dtype bfloat16`` records the program as the model runs under mixed
precision (FSDP2's ``param_dtype``, torchtitan's ``mixed_precision_param``):
the parameters are cast to bfloat16 for tracing, so ``x.float()`` is a real
conversion and ``.to(x.dtype)`` / ``dtype=x.dtype`` record bfloat16; the saved
module keeps the float32 weights (the master copy). A trace recorded in
float32 cannot be run in bfloat16: there ``x.float()`` returns ``x`` itself and
the trace reuses the converted value for ``x`` from then on.

Small flavors get real, deterministic weights (seeded) and are traced by
default. Large flavors (Llama 3 8B/70B/405B) are exported shape-only: the
model is built on the meta device, every parameter is replaced by
``torch.zeros(1).expand(shape)`` (one element of storage, full shape), and the
module is scripted, which records the graph without running it.
"""

import argparse
import dataclasses
import inspect
import json
import os
import resource
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gemma import model as gemma_model  # noqa: E402
from gpt2 import model as gpt2_model  # noqa: E402
from llama3 import model as llama3_model  # noqa: E402
from phi import model as phi_model  # noqa: E402
from qwen2 import model as qwen2_model  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Family:
    """One model family of models/: its flavors and the module class built from a flavor."""

    flavors: Dict[str, Any]
    module: Callable[..., nn.Module]


FAMILIES: Dict[str, Family] = {
    "llama3": Family(llama3_model.FLAVORS, llama3_model.Transformer),
    "gpt2": Family(gpt2_model.FLAVORS, gpt2_model.GPT2),
    "qwen2": Family(qwen2_model.FLAVORS, qwen2_model.Qwen2ForCausalLM),
    "gemma": Family(gemma_model.FLAVORS, gemma_model.GemmaForCausalLM),
    "phi": Family(phi_model.FLAVORS, phi_model.PhiForCausalLM),
}

# Flavors too large to materialize: always exported shape-only.
LARGE_FLAVORS = {("llama3", "8B"), ("llama3", "70B"), ("llama3", "405B")}


def flavor_args(model: str, flavor: str, rope: str) -> Any:
    """The argument dataclass of ``model``/``flavor`` (``rope`` applies to llama3 only)."""
    flavors = FAMILIES[model].flavors
    if flavor not in flavors:
        raise SystemExit(f"unknown {model} flavor {flavor!r}; known: {sorted(flavors)}")
    if model == "llama3":
        return dataclasses.replace(flavors[flavor], rope_style=rope)
    if rope != "complex":
        raise SystemExit(f"--rope applies to llama3 only ({model} has its own position encoding)")
    return flavors[flavor]


def build_model(model: str, args: Any, shape_only: bool, seed: int) -> nn.Module:
    """Construct the model: with seeded real weights, or shape-only on expanded one-element storage."""
    if shape_only:
        if model != "llama3":
            raise SystemExit("shape-only export is implemented for llama3 only")
        module = llama3_model.Transformer(args, device=torch.device("meta"))
        make_shape_only(module)
    else:
        module = FAMILIES[model].module(args)
        module.init_weights(seed)
    return module.eval()


def cast_parameters(module: nn.Module, dtype: torch.dtype) -> None:
    """Cast every floating parameter (not the buffers) to ``dtype``, as FSDP2's mixed precision does."""
    for param in module.parameters():
        if param.is_floating_point():
            param.data = param.data.to(dtype)


def make_shape_only(module: nn.Module) -> None:
    """Replace every parameter by ``torch.zeros(1).expand(shape)``, keeping ties.

    The replacement has the full shape and dtype but a single element of
    storage, so ``torch.jit.save`` writes one number per parameter and
    ``torch.jit.load`` (Python or LibTorch) gives back the full shape.
    """
    replaced: Dict[int, nn.Parameter] = {}
    for submodule in module.modules():
        for name, param in list(submodule._parameters.items()):
            if param is None:
                continue
            if id(param) not in replaced:
                view = torch.zeros(1, dtype=param.dtype).expand(param.shape)
                replaced[id(param)] = nn.Parameter(view, requires_grad=param.requires_grad)
            submodule._parameters[name] = replaced[id(param)]


def parameter_table(module: nn.Module) -> Tuple[List[Dict[str, Any]], List[List[str]]]:
    """Unique parameters (name, shape, dtype) in registration order, and groups of tied names."""
    names_by_id: Dict[int, List[str]] = {}
    params_by_id: Dict[int, nn.Parameter] = {}
    for module_name, submodule in module.named_modules(remove_duplicate=False):
        for name, param in submodule._parameters.items():
            if param is None:
                continue
            full = f"{module_name}.{name}" if module_name else name
            names = names_by_id.setdefault(id(param), [])
            if full not in names:
                names.append(full)
            params_by_id[id(param)] = param
    table = [
        {"name": names[0], "shape": list(params_by_id[pid].shape), "dtype": str(params_by_id[pid].dtype)}
        for pid, names in names_by_id.items()
    ]
    tied = [names for names in names_by_id.values() if len(names) > 1]
    return table, tied


def embedding_param_count(module: nn.Module) -> int:
    """Parameters held by nn.Embedding modules (torchtitan excludes these from MFU flops)."""
    seen = set()
    total = 0
    for submodule in module.modules():
        if isinstance(submodule, nn.Embedding) and id(submodule.weight) not in seen:
            seen.add(id(submodule.weight))
            total += submodule.weight.numel()
    return total


def flavor_json(args: Any) -> Dict[str, Any]:
    """The dataclass fields plus the derived sizes (its properties) an importer or planner needs.

    Llama's ``kv_heads`` is written as ``n_kv_heads``, the field it resolves.
    """
    out = dataclasses.asdict(args)
    for name, member in inspect.getmembers(type(args), lambda m: isinstance(m, property)):
        out[name] = getattr(args, name)
    if isinstance(args, llama3_model.ModelArgs):
        out["n_kv_heads"] = out.pop("kv_heads")
    return out


def override_args(args: Any, assignments: List[str]) -> Any:
    """``args`` with integer fields replaced by ``--set FIELD=VALUE`` assignments."""
    fields = {f.name for f in dataclasses.fields(args)}
    changes: Dict[str, int] = {}
    for assignment in assignments:
        name, sep, value = assignment.partition("=")
        if not sep or name not in fields:
            raise SystemExit(f"--set {assignment!r}: expected FIELD=VALUE with FIELD one of "
                             f"{sorted(fields)}")
        if not isinstance(getattr(args, name), int):
            raise SystemExit(f"--set {assignment!r}: {name} is not an integer field")
        try:
            changes[name] = int(value)
        except ValueError:
            raise SystemExit(f"--set {assignment!r}: {value!r} is not an integer") from None
    return dataclasses.replace(args, **changes)


def export(opts: argparse.Namespace) -> Dict[str, Any]:
    """Build, record (trace or script), save and describe one model; returns export.json's content."""
    start = time.perf_counter()
    args = flavor_args(opts.model, opts.flavor, opts.rope)
    if opts.n_layers is not None:
        if opts.model != "llama3":
            raise SystemExit("--n-layers applies to llama3 only")
        args = dataclasses.replace(args, n_layers=opts.n_layers)
    args = override_args(args, opts.set)
    if opts.dropout is not None:
        if not hasattr(args, "dropout"):
            raise SystemExit(f"--dropout: {opts.model} has no dropout")
        if not 0.0 <= opts.dropout <= 1.0:
            raise SystemExit(f"--dropout {opts.dropout} is not a probability in [0, 1]")
        args = dataclasses.replace(args, dropout=opts.dropout)
    vocab = args.vocab_size
    shape_only = opts.shape_only or (opts.model, opts.flavor) in LARGE_FLAVORS
    mode = opts.mode or ("script" if shape_only else "trace")
    if shape_only and mode == "trace":
        raise SystemExit("a shape-only model cannot be traced (tracing runs it): use --mode script")
    if opts.model == "gpt2" and opts.seq > args.block_size:
        raise SystemExit(f"--seq {opts.seq} exceeds gpt2 block_size {args.block_size}")

    module = build_model(opts.model, args, shape_only, opts.seed)
    os.makedirs(opts.out, exist_ok=True)
    info: Dict[str, Any] = {
        "model": opts.model,
        "flavor": opts.flavor,
        "mode": mode,
        "shape_only": shape_only,
        "seed": None if shape_only else opts.seed,
        "args": flavor_json(args),
        "input": next(iter(inspect.signature(module.forward).parameters)),
        "training_mode": opts.dropout is not None,
        "torch_version": torch.__version__,
    }

    trace_dtype = getattr(torch, opts.trace_dtype)
    if trace_dtype != torch.float32 and (shape_only or mode != "trace"):
        raise SystemExit("--trace-dtype applies to traced models with weights (a scripted "
                         "module follows the parameters' dtype by itself)")
    # The float32 weights, saved in place of the traced copies.
    master = {}
    if trace_dtype != torch.float32:
        master = {name: p.detach().clone() for name, p in module.named_parameters()}
        cast_parameters(module, trace_dtype)
    info["trace_dtype"] = opts.trace_dtype

    tokens = None
    if not shape_only:
        rng = np.random.RandomState(opts.seed + 1)
        tokens_np = rng.randint(0, vocab, size=(opts.batch, opts.seq)).astype(np.int64)
        tokens = torch.from_numpy(tokens_np)
        with torch.no_grad():
            logits = module(tokens).float().numpy()
        np.save(os.path.join(opts.out, "tokens.npy"), tokens_np)
        np.save(os.path.join(opts.out, "logits.npy"), logits)
        info["batch"] = {
            "tokens": "tokens.npy",
            "tokens_shape": list(tokens_np.shape),
            "tokens_seed": opts.seed + 1,
            "logits": "logits.npy",
            "logits_shape": list(logits.shape),
        }

    # With --dropout the program is recorded in training mode: its dropout
    # is part of it (the oracle logits above are the eval-mode model's).
    if opts.dropout is not None:
        module.train()
    if mode == "trace":
        recorded = torch.jit.trace(module, (tokens,), check_trace=opts.dropout is None)
    else:
        recorded = torch.jit.script(module)
    for owner in (module, recorded) if master else ():
        for name, param in owner.named_parameters():
            param.data = master[name]
    torch.jit.save(recorded, os.path.join(opts.out, "model.pt"))

    table, tied = parameter_table(module)
    info["param_count"] = sum(int(np.prod(p["shape"])) for p in table)
    info["param_count_embedding"] = embedding_param_count(module)
    info["parameters"] = table
    info["tied"] = tied
    info["export_seconds"] = round(time.perf_counter() - start, 3)
    info["max_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    with open(os.path.join(opts.out, "export.json"), "w") as f:
        json.dump(info, f, indent=1)
        f.write("\n")
    return info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, choices=sorted(FAMILIES))
    parser.add_argument("--flavor", required=True,
                        help="llama3: debugmodel, debugmodel_gqa, 8B, 70B, 405B; gpt2, qwen2, gemma, phi: tiny")
    parser.add_argument("--out", required=True, help="output directory (created)")
    parser.add_argument("--mode", choices=["trace", "script"], default=None,
                        help="default: trace for real weights, script for shape-only")
    parser.add_argument("--rope", choices=list(llama3_model.ROPE_STYLES), default="complex",
                        help="llama3 RoPE form (default: torchtitan's complex form)")
    parser.add_argument("--shape-only", action="store_true",
                        help="export without weights even for a small flavor (implied for 8B/70B/405B)")
    parser.add_argument("--batch", type=int, default=2, help="batch size of the oracle batch")
    parser.add_argument("--seq", type=int, default=32, help="sequence length of the oracle batch")
    parser.add_argument("--seed", type=int, default=0, help="weight seed; the tokens use seed + 1")
    parser.add_argument("--n-layers", type=int, default=None,
                        help="override the flavor's number of layers (llama3; for scaling benchmarks)")
    parser.add_argument("--trace-dtype", choices=["float32", "bfloat16", "float16"], default="float32",
                        help="dtype of the parameters while tracing: the compute dtype of mixed "
                             "precision (the saved weights stay float32)")
    parser.add_argument("--dropout", type=float, default=None, metavar="P",
                        help="gpt2: set the dropout probability and record the model in "
                             "training mode (model.train()), so that titan trains with dropout "
                             "(logits.npy stays the eval-mode model's)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="override an integer field of the flavor, e.g. --set vocab_size=50257 "
                             "(repeatable)")
    opts = parser.parse_args()
    info = export(opts)
    kind = "shape-only" if info["shape_only"] else "weights"
    print(f"exported {info['model']}/{info['flavor']} ({info['mode']}, {kind}): "
          f"{info['param_count']} parameters, {info['export_seconds']} s, "
          f"max RSS {info['max_rss_mib']} MiB -> {os.path.join(opts.out, 'model.pt')}")


if __name__ == "__main__":
    main()
