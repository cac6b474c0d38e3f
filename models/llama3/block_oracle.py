#!/usr/bin/python3
"""PyTorch oracle for models/llama3/llama3_block.mlir.

Writes, into DIR, every argument of @llama3_block as <titan.name>.npy (the
weights of layer 0 of a seeded debugmodel_gqa Transformer, a random input
``h`` and the RoPE tables) and PyTorch's output of that layer as
``expected/h_out.npy``.

usage: /usr/bin/python3 models/llama3/block_oracle.py DIR
"""

import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from llama3 import model as llama3  # noqa: E402

BATCH, SEQ = 2, 64


def main() -> int:
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "expected"), exist_ok=True)
    args = llama3.FLAVORS["debugmodel_gqa"]
    model = llama3.Transformer(args)
    model.init_weights(seed=0)
    block = model.layers[0]
    for name, tensor in block.named_parameters():
        np.save(os.path.join(out, f"layers.0.{name}.npy"), tensor.detach().numpy())
    freqs = model.freqs_cis[:SEQ]
    np.save(os.path.join(out, "rope.cos.npy"), freqs.real.contiguous().numpy())
    np.save(os.path.join(out, "rope.sin.npy"), freqs.imag.contiguous().numpy())
    h = torch.from_numpy(np.random.RandomState(7).standard_normal((BATCH, SEQ, args.dim)).astype(np.float32))
    np.save(os.path.join(out, "h.npy"), h.numpy())
    with torch.no_grad():
        expected = block(h, freqs, freqs)
    np.save(os.path.join(out, "expected", "h_out.npy"), expected.numpy())
    return 0


if __name__ == "__main__":
    sys.exit(main())
