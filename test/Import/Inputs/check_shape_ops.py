"""Inputs and torch oracle of torchscript-ir/pad.test, norm.test and
transpose.test.

gen DIR: x, float32 [2, 3, 4]. check TEST IN OUT: computes TEST's outputs
("pad": three constant pads, "pad-modes": reflect, replicate and
circular pads, both compared exactly; "norm": three 2-norms, rel
1e-6; "transpose": x.T, x.mT, x.mH, x.adjoint(), x[0].H and x[0, 0].T,
exactly) with torch on IN and compares OUT/output<i>.npy; prints
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

test, inputs, outputs = sys.argv[2], sys.argv[3], sys.argv[4]
x = torch.from_numpy(np.load(os.path.join(inputs, "x.npy")))
if test == "pad":
    expected = [F.pad(x, (1, 2)), F.pad(x, (-1, 1, 2, 0), value=0.5),
                torch.constant_pad_nd(x, (0, 0, 0, 0, 1, 1), 0.5)]
    rtol = 0.0
elif test == "pad-modes":
    expected = [F.pad(x, (2, 1), mode="reflect"), F.pad(x, (1, 3, 2, 0), mode="replicate"),
                F.pad(x, (2, 2), mode="circular"), F.pad(x[None], (1, 2, 2, 1), mode="reflect")[0],
                F.pad(x, (0, 3), mode="replicate")]
    rtol = 0.0
elif test == "transpose":
    expected = [x.T, x.mT, x.mH, x.adjoint(), x[0].H, x[0, 0].T]
    rtol = 0.0
else:
    expected = [x.norm(dim=-1, keepdim=True), torch.norm(x, 2, [0]), torch.linalg.vector_norm(x)]
    rtol = 1e-6
for index, want in enumerate(expected):
    got = np.load(os.path.join(outputs, "output%d.npy" % index))
    want = want.numpy()
    if got.shape != want.shape or np.abs(got - want).max() > rtol * np.abs(want).max():
        sys.exit("MISMATCH: output%d: %s, expected %s" % (index, got, want))
print("match: %d outputs" % len(expected))
