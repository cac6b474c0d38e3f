"""Saves a module of importer idioms for the tests (make_idioms.py,
make_hf_model_idioms.py): traced and scripted, on inputs x (f32 [2, 3, 4],
seeded) and the given ids (i64 [2, 3]), with PyTorch's outputs as the oracle.

save_idioms(module, out, ids) writes OUT/trace.pt, OUT/script.pt, x.npy,
ids.npy and expected/output<i>.npy for each output of forward.
save_traced_and_scripted(module, out, inputs) does the same for inputs the
caller makes (make_sorting.py, make_math_ops.py, make_losses.py,
make_torch2_ops.py), as traced.pt and scripted.pt.
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


def save_traced_and_scripted(module: torch.nn.Module, out: str, inputs: dict) -> None:
    """Writes OUT/traced.pt and OUT/scripted.pt of `module`, each of `inputs`
    (name -> tensor, in forward's order) as OUT/<name>.npy, and PyTorch's
    outputs on them as OUT/expected/output<k>.npy."""
    os.makedirs(os.path.join(out, "expected"), exist_ok=True)
    for name, value in inputs.items():
        np.save(os.path.join(out, name + ".npy"), value.numpy())
    arguments = tuple(inputs.values())
    with torch.no_grad():
        for k, output in enumerate(module(*arguments)):
            np.save(os.path.join(out, "expected", "output%d.npy" % k), output.numpy())
    torch.jit.trace(module, arguments, check_trace=False).save(os.path.join(out, "traced.pt"))
    torch.jit.script(module).save(os.path.join(out, "scripted.pt"))
