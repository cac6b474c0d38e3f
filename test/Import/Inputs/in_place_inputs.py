"""Writes the inputs x, y (float32 [2, 4]) of torchscript-ir/in-place.test."""
import os
import sys

import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
for name in ("x", "y"):
    np.save(os.path.join(out, name + ".npy"), rng.standard_normal((2, 4)).astype(np.float32))
