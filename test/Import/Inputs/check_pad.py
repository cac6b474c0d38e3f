"""Inputs and torch oracle of torchscript-ir/pad.test.

gen DIR: x, float32 [2, 3, 4]. check IN OUT: computes the test's three pads
with torch on IN and compares OUT/output<i>.npy exactly; prints
"match: N outputs" or exits with the mismatch."""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

if sys.argv[1] == "gen":
    os.makedirs(sys.argv[2], exist_ok=True)
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    np.save(os.path.join(sys.argv[2], "x.npy"), x)
    sys.exit(0)

x = torch.from_numpy(np.load(os.path.join(sys.argv[2], "x.npy")))
expected = [F.pad(x, (1, 2)), F.pad(x, (-1, 1, 2, 0), value=0.5),
            torch.constant_pad_nd(x, (0, 0, 0, 0, 1, 1), 0.5)]
for index, want in enumerate(expected):
    got = np.load(os.path.join(sys.argv[3], "output%d.npy" % index))
    if got.shape != tuple(want.shape) or not np.array_equal(got, want.numpy()):
        sys.exit("MISMATCH: output%d: %s, expected %s" % (index, got, want.numpy()))
print("match: %d outputs" % len(expected))
