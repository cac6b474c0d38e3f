"""Writes random inputs for titan-fuse-attention.mlir's numerics check."""
import os
import sys

import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
for name, heads in (("q", 4), ("k", 2), ("v", 2), ("k4", 4), ("v4", 4)):
    # [batch, seq, heads, head_dim], as the models hold them before the
    # transpose to [batch, heads, seq, head_dim].
    np.save(os.path.join(out, f"{name}.npy"), rng.standard_normal((2, 8, heads, 4)).astype(np.float32))
# nanoGPT's causal mask buffer, tril(ones(block_size, block_size)).
np.save(os.path.join(out, "bias.npy"), np.tril(np.ones((16, 16), np.float32)).reshape(1, 1, 16, 16))
