"""Checks the outputs of torchscript-ir/in-place.test's graph against PyTorch
running the same in-place ops: prints "match: N outputs" or the mismatch."""
import os
import sys

import numpy as np
import torch

inputs, outputs = sys.argv[1], sys.argv[2]
x = torch.from_numpy(np.load(os.path.join(inputs, "x.npy")))
y = torch.from_numpy(np.load(os.path.join(inputs, "y.npy")))
a = x * y
old = a.neg()
b = a.add_(y)
c = a.mul_(y)
r = b.relu_()
z = torch.zeros(2, 4, dtype=torch.bfloat16)
z.add_(x)
expected = [old, a, c, r, z.float()]
for index, want in enumerate(expected):
    got = np.load(os.path.join(outputs, "output%d.npy" % index))
    if got.dtype.itemsize == 2:
        # bfloat16, which numpy has no type for, is stored as its bits.
        got = (got.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    if not np.array_equal(got, want.numpy()):
        sys.exit("MISMATCH: output%d: %s, expected %s" % (index, got, want.numpy()))
print("match: %d outputs" % len(expected))
