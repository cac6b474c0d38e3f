"""Inputs and torch oracle of torchscript-ir/norm.test.

gen DIR: x, float32 [2, 3, 4]. check IN OUT: computes the test's three norms
with torch on IN and compares OUT/output<i>.npy (rel 1e-6); prints
"match: N outputs" or exits with the mismatch."""
import os
import sys

import numpy as np
import torch

if sys.argv[1] == "gen":
    os.makedirs(sys.argv[2], exist_ok=True)
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    np.save(os.path.join(sys.argv[2], "x.npy"), x)
    sys.exit(0)

x = torch.from_numpy(np.load(os.path.join(sys.argv[2], "x.npy")))
expected = [x.norm(dim=-1, keepdim=True), torch.norm(x, 2, [0]), torch.linalg.vector_norm(x)]
for index, want in enumerate(expected):
    got = np.load(os.path.join(sys.argv[3], "output%d.npy" % index))
    want = want.numpy()
    if got.shape != want.shape or np.abs(got - want).max() > 1e-6 * np.abs(want).max():
        sys.exit("MISMATCH: output%d: %s, expected %s" % (index, got, want))
print("match: %d outputs" % len(expected))
