"""Saves a module of importer idioms for the tests (make_idioms.py,
make_hf_model_idioms.py): traced and scripted, on inputs x (f32 [2, 3, 4],
seeded) and the given ids (i64 [2, 3]), with PyTorch's outputs as the oracle.

save_idioms(module, out, ids) writes OUT/trace.pt, OUT/script.pt, x.npy,
ids.npy and expected/output<i>.npy for each output of forward.
"""

import os

import numpy as np
import torch


def save_idioms(module: torch.nn.Module, out: str, ids: np.ndarray) -> None:
    os.makedirs(os.path.join(out, "expected"), exist_ok=True)
    module = module.eval()
    rng = np.random.RandomState(1)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    np.save(os.path.join(out, "x.npy"), x)
    np.save(os.path.join(out, "ids.npy"), ids)
    inputs = (torch.from_numpy(x), torch.from_numpy(ids))
    with torch.no_grad():
        outputs = module(*inputs)
    for i, output in enumerate(outputs):
        np.save(os.path.join(out, "expected", f"output{i}.npy"), output.numpy())
    torch.jit.save(torch.jit.trace(module, inputs), os.path.join(out, "trace.pt"))
    torch.jit.save(torch.jit.script(module), os.path.join(out, "script.pt"))
