"""PyTorch 1.13 loads a checkpoint titan's ranks saved (DCP, 1.13 module
paths) as a PyTorch training script does, and evaluates the model.

usage: torch_reads_checkpoint.py MODEL.pt CHECKPOINT DATA_DIR

MODEL.pt is an export of models/export.py: the model is built again from
its class in models/ with the arguments export.json (beside MODEL.pt)
records, and loaded with `dcp.load_state_dict(model.state_dict(), ...)`
(no process group) and a strict `model.load_state_dict`, the way a
PyTorch script resumes: every key of the model's state_dict (tied names
and persistent buffers included) must be in the checkpoint. Prints the
model's loss on DATA_DIR's first batch as exported and as loaded, and
train_state.step where the checkpoint has it (a model-only save has not).
Fails unless the parameters copied key by key into MODEL.pt's TorchScript
module give the same loss.
"""

import dataclasses
import json
import os
import sys

import numpy as np

import torch113_compat  # noqa: F401  (before torch)
import torch  # noqa: E402
import torch.distributed._shard.checkpoint as dcp  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models"))
import export  # noqa: E402


def loss(model, tokens, labels) -> float:
    with torch.no_grad():
        logits = model(tokens)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1)).item()


def build_eager(model_path: str) -> torch.nn.Module:
    """The model of MODEL.pt's export.json, built from its class (weights as exported)."""
    with open(os.path.join(os.path.dirname(model_path), "export.json")) as f:
        info = json.load(f)
    family = export.FAMILIES[info["model"]]
    arg_type = type(family.flavors[info["flavor"]])
    fields = {field.name for field in dataclasses.fields(arg_type)}
    args = arg_type(**{k: v for k, v in info["args"].items() if k in fields})
    return export.build_model(info["model"], args, shape_only=False, seed=info["seed"])


def main() -> None:
    model_path, checkpoint, data = sys.argv[1:4]
    tokens = torch.from_numpy(np.load(f"{data}/tokens.npy")[0])
    labels = torch.from_numpy(np.load(f"{data}/labels.npy")[0])
    model = build_eager(model_path)
    before = loss(model, tokens, labels)

    reader = dcp.FileSystemReader(checkpoint)
    state = model.state_dict()
    dcp.load_state_dict(state, reader, no_dist=True)
    model.load_state_dict(state)
    after = loss(model, tokens, labels)
    metadata = reader.read_metadata().state_dict_metadata
    step = "none (a model-only save)"
    if "train_state.step" in metadata:
        train_state = {"train_state.step": None}
        dcp.load_state_dict(train_state, reader, no_dist=True)
        step = train_state["train_state.step"]

    # The key-by-key path: the checkpoint's parameters into the TorchScript
    # module as exported.
    scripted = torch.jit.load(model_path)
    with torch.no_grad():
        for name, param in scripted.named_parameters():
            param.copy_(state[name])
    if loss(scripted, tokens, labels) != after:
        sys.exit("the TorchScript module with the same parameters gives another loss")

    # state_dict has every name of a tied parameter, named_parameters the first.
    # (named_buffers also has the non-persistent ones, which it does not).
    unique = dict(model.named_parameters())
    buffers = [name for name, _ in model.named_buffers() if name in state]
    tied = [name for name in state if name not in unique and name not in buffers]
    optimizer = [k for k in metadata if k.startswith("optimizer.state.")]
    print(f"PyTorch {torch.__version__} loaded the model's state_dict: {len(state)} "
          f"entries ({len(unique)} parameters, tied names {tied}, "
          f"{len(buffers)} buffers); the checkpoint also holds "
          f"{len(optimizer)} optimizer tensors, train_state.step = {step}")
    print(f"loss of the model on batch 0: {before:.4f} as exported, "
          f"{after:.4f} with titan's trained weights")


if __name__ == "__main__":
    main()
