"""Inputs and torch oracle of torchscript-ir/einsum.test.

gen DIR: random float32 inputs x, y, z, u, v, w, m, p, r, q, s of the
test's shapes. check IN OUT: computes the test's torch.einsum calls on IN and
compares OUT/output<i>.npy (rel 1e-5); prints "match: N outputs" or exits
with the mismatch."""
import os
import sys

import numpy as np
import torch

SHAPES = {"x": (2, 5, 3, 4), "y": (2, 6, 3, 4), "z": (2, 3, 5, 6), "u": (5,), "v": (7,),
          "w": (2, 5, 4), "m": (4, 6), "p": (2, 5, 4, 2), "r": (3, 4), "q": (2, 5, 3),
          "s": (6, 2), "d": (4, 4), "g": (2, 4, 4), "c": (3, 3, 3)}

if sys.argv[1] == "gen":
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    for name, shape in SHAPES.items():
        np.save(os.path.join(out, name + ".npy"), rng.standard_normal(shape).astype(np.float32))
    sys.exit(0)

inputs, outputs = sys.argv[2], sys.argv[3]
t = {name: torch.from_numpy(np.load(os.path.join(inputs, name + ".npy"))) for name in SHAPES}
expected = [
    torch.einsum("bqhd,bkhd->bhqk", t["x"], t["y"]),
    torch.einsum("bhqk,bkhd->bqhd", t["z"], t["y"]),
    torch.einsum("i,j->ij", t["u"], t["v"]),
    torch.einsum("bsd, de -> bse", t["w"], t["m"]),
    torch.einsum("...ij,...jk->...ik", t["x"], t["p"]),
    torch.einsum("ij->ji", t["m"]),
    torch.einsum("bsd->bd", t["w"]),
    torch.einsum("ab,bc", t["r"], t["m"]),
    torch.einsum("b l d, b l n, b l d -> b l d n", t["w"], t["q"], t["w"]),
    torch.einsum("ab,bc,cd->ad", t["r"], t["m"], t["s"]),
    torch.einsum("ii->i", t["d"]),
    torch.einsum("ii", t["d"]),
    torch.einsum("bii->bi", t["g"]),
    torch.einsum("bii,bij->bj", t["g"], t["g"]),
    torch.einsum("iii->i", t["c"]),
    torch.einsum("iji->j", t["c"]),
]
for index, want in enumerate(expected):
    got = np.load(os.path.join(outputs, "output%d.npy" % index))
    want = want.numpy()
    scale = max(np.abs(want).max(), 1e-30)
    if got.shape != want.shape or np.abs(got - want).max() > 1e-5 * scale:
        sys.exit("MISMATCH: output%d: %s, expected %s" % (index, got, want))
print("match: %d outputs" % len(expected))
