"""Traces a causal language model for the importer's tests.

save_traced_lm(model, out, input_name) writes OUT/model.pt (the model
traced on the seeded int64 batch [2, 32] of batch_of), that batch as
OUT/<input_name>.npy and PyTorch's logits for it as OUT/logits.npy (the
oracle).
"""

import os
import warnings

import numpy as np
import torch


def batch_of(vocab_size: int = 256) -> torch.Tensor:
    """The seeded batch the model is traced on: int64 [2, 32]."""
    return torch.randint(0, vocab_size, (2, 32), generator=torch.Generator().manual_seed(1))


def save_traced_lm(model: torch.nn.Module, out: str, input_name: str = "tokens",
                   vocab_size: int = 256) -> None:
    # The tracer warns about the size arithmetic it records as constants.
    warnings.filterwarnings("ignore")
    os.makedirs(out, exist_ok=True)
    model = model.eval()
    batch = batch_of(vocab_size)
    torch.jit.trace(model, batch, check_trace=False).save(os.path.join(out, "model.pt"))
    np.save(os.path.join(out, input_name + ".npy"), batch.numpy())
    with torch.no_grad():
        outputs = model(batch)
        # A model may return scalar losses after its logits.
        logits = outputs[0] if isinstance(outputs, tuple) else outputs
        np.save(os.path.join(out, "logits.npy"), logits.numpy())
