"""Traces a causal language model for the importer's tests.

BlocksLM(block) is the language model around the blocks a test
exercises. save_traced_lm(model, out, input_name) writes OUT/model.pt (the model
traced on the seeded int64 batch [2, 32] of batch_of), that batch as
OUT/<input_name>.npy and PyTorch's logits for it as OUT/logits.npy (the
oracle).
"""

import os
import warnings

from typing import Callable

import numpy as np
import torch
from torch import nn


class BlocksLM(nn.Module):
    """An embedding, `layers` blocks made by block(dim) (each adds to its
    input), a LayerNorm and a linear head over the vocabulary."""

    def __init__(self, block: Callable[[int], nn.Module], vocab_size: int = 256,
                 dim: int = 32, layers: int = 2) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim)
        self.blocks = nn.ModuleList(block(dim) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embedding(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


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
