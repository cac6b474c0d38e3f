"""Inputs and torch oracle of torchscript-ir/integer-arithmetic.test.

gen DIR: x (int64 [2, 3]) and y (int32 [2, 3]), with the largest int32 so
that y * 2 wraps. check IN OUT: runs the test's graph with torch on IN and
compares the dtype and every value of OUT/output<i>.npy; prints
"match: N outputs" or exits with the mismatch."""
import os
import sys

import numpy as np
import torch

if sys.argv[1] == "gen":
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    np.save(os.path.join(out, "x.npy"), np.array([[5, -3, 0], [7, 1 << 40, -(1 << 33)]], np.int64))
    np.save(os.path.join(out, "y.npy"), np.array([[2, -9, 2147483647], [-2147483648, 4, 3]], np.int32))
    sys.exit(0)

inputs, outputs = sys.argv[2], sys.argv[3]
x = torch.from_numpy(np.load(os.path.join(inputs, "x.npy")))
y = torch.from_numpy(np.load(os.path.join(inputs, "y.npy")))
a = torch.add(x, 1)
b = torch.mul(y, 2)
c = torch.add(x, y, alpha=2)
d = torch.mul(x, 0.5)
e = torch.div(x, 2)
f = torch.minimum(x, c)
g = torch.neg(y)
h = torch.rsub(y, 1)
big = 6364136223846793005
i = torch.mul(x, big)
j = torch.add(x, 9007199254740993)
k = torch.sub(x, int(torch.tensor(big) * torch.tensor(big)))
l = torch.lt(x, 2.5)
for index, want in enumerate([a, b, c, d, e, f, g, h, i, j, k, l]):
    got = np.load(os.path.join(outputs, "output%d.npy" % index))
    want = want.numpy()
    if got.dtype != want.dtype or not np.array_equal(got, want):
        sys.exit("MISMATCH: output%d: %s %s, expected %s %s" % (index, got.dtype, got, want.dtype, want))
print("match: 12 outputs")
