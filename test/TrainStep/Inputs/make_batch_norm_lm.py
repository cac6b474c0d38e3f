"""Saves a language model with batch and instance normalization, traced in
training mode (so they normalize by the batch's statistics), with
PyTorch's logits, for test/TrainStep/batch-norm.test: each block applies
nn.BatchNorm1d to its channels ([B, C, T]) before a depthwise
convolution, and nn.InstanceNorm1d (affine) after it.

usage: make_batch_norm_lm.py OUT

OUT receives model.pt (forward(tokens: int64 [2, 32]) -> logits),
tokens.npy and logits.npy.
"""

import os
import sys
import warnings

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Import", "Inputs"))
from traced_lm import BlocksLM, batch_of  # noqa: E402


class NormBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.batch = nn.BatchNorm1d(dim)
        # No bias: the instance norm after it makes its gradient exactly 0.
        self.mix = nn.Conv1d(dim, dim, kernel_size=3, padding=1, groups=dim, bias=False)
        self.instance = nn.InstanceNorm1d(dim, affine=True)

    def forward(self, x):
        y = self.instance(self.mix(F.gelu(self.batch(x.transpose(1, 2)))))
        return x + y.transpose(1, 2)


def main() -> None:
    warnings.filterwarnings("ignore")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = BlocksLM(NormBlock).train()
    batch = batch_of()
    torch.jit.trace(model, batch, check_trace=False).save(os.path.join(out, "model.pt"))
    np.save(os.path.join(out, "tokens.npy"), batch.numpy())
    with torch.no_grad():
        np.save(os.path.join(out, "logits.npy"), model(batch).numpy())


if __name__ == "__main__":
    main()
