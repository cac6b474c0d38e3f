"""PyTorch 1.13 reads a checkpoint titan's ranks saved (DCP, 1.13 module
paths) into the TorchScript model and evaluates it.

usage: torch_reads_checkpoint.py MODEL.pt CHECKPOINT DATA_DIR

Loads every tensor of CHECKPOINT with torch.distributed.checkpoint (no
process group), copies the parameters into MODEL.pt's and prints the
model's loss on DATA_DIR's first batch before and after, with
train_state.step.
"""

import sys

import numpy as np

import torch113_compat  # noqa: F401  (before torch)
import torch  # noqa: E402
import torch.distributed._shard.checkpoint as dcp  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def loss(model, tokens, labels) -> float:
    with torch.no_grad():
        logits = model(tokens)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1)).item()


def main() -> None:
    model_path, checkpoint, data = sys.argv[1:4]
    model = torch.jit.load(model_path)
    tokens = torch.from_numpy(np.load(f"{data}/tokens.npy")[0])
    labels = torch.from_numpy(np.load(f"{data}/labels.npy")[0])
    before = loss(model, tokens, labels)

    metadata = dcp.FileSystemReader(checkpoint).read_metadata()
    state = {fqn: torch.zeros(md.size, dtype=md.properties.dtype)
             if hasattr(md, "size") else None
             for fqn, md in metadata.state_dict_metadata.items()}
    dcp.load_state_dict(state, dcp.FileSystemReader(checkpoint), no_dist=True)
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, param in params.items():
            param.copy_(state[name])
    optimizer = [k for k in state if k.startswith("optimizer.state.")]
    print(f"PyTorch {torch.__version__} loaded {len(state)} entries: "
          f"{len(params)} parameters, {len(optimizer)} optimizer tensors, "
          f"train_state.step = {state['train_state.step']}")
    print(f"loss of the model on batch 0: {before:.4f} as exported, "
          f"{loss(model, tokens, labels):.4f} with titan's trained weights")


if __name__ == "__main__":
    main()
