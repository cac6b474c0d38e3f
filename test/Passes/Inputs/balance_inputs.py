"""Writes random inputs for titan-balance-sequence.mlir's @causal_sum."""
import os
import sys

import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
np.save(os.path.join(out, "tokens.npy"), rng.integers(0, 32, (2, 8)).astype(np.int64))
np.save(os.path.join(out, "freqs.npy"), rng.standard_normal((16, 4)).astype(np.float32))
np.save(os.path.join(out, "emb.npy"), rng.standard_normal((32, 4)).astype(np.float32))
