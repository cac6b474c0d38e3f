"""Saves a language model of hand-written layers that use the activations
and statistics titan decomposes into its own ops, traced, with PyTorch's
logits: a LayerNorm written with Tensor.var (biased) and one with
Tensor.std, GLU feed-forwards whose gates are leaky_relu, elu, selu,
softplus (past its threshold), mish, hardswish and a GELU written with
torch.erf of pre-activations scaled up to tens, and log1p of a magnitude.

usage: make_activation_lm.py OUT

OUT receives model.pt (forward(tokens: int64 [2, 32]) -> logits),
tokens.npy and logits.npy.
"""

import math
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Import", "Inputs"))
from traced_lm import save_traced_lm  # noqa: E402


class VarNorm(nn.Module):
    """LayerNorm by hand: (x - mean) / sqrt(var + eps), biased variance."""

    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim) + 0.1 * torch.randn(dim))
        self.bias = nn.Parameter(0.1 * torch.randn(dim))

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True, unbiased=False)
        return (x - mean) / torch.sqrt(var + 1e-5) * self.weight + self.bias


class StdNorm(nn.Module):
    """(x - mean) / (std + eps) with the unbiased std."""

    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim) + 0.1 * torch.randn(dim))

    def forward(self, x):
        return (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + 1e-5) * self.weight


ACTIVATIONS = [
    lambda x: F.leaky_relu(x, 0.1),
    lambda x: F.elu(x, alpha=0.5),
    F.selu,
    lambda x: F.softplus(x, beta=2.0, threshold=5.0),
    F.mish,
    F.hardswish,
    # GELU written out with erf (BERT's gelu).
    lambda x: x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0))),
]


class Block(nn.Module):
    def __init__(self, dim, activation, norm):
        super().__init__()
        self.norm = norm
        self.up = nn.Linear(dim, 2 * dim)
        self.down = nn.Linear(dim, dim)
        self.activation = activation

    def forward(self, x):
        # Pre-activations of tens: the activations' far branches.
        hidden = F.glu(self.up(self.norm(x)) * 8.0, -1)
        return x + 0.1 * self.down(self.activation(hidden))


class ActivationLM(nn.Module):
    def __init__(self, vocab_size=256, dim=32):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim)
        self.blocks = nn.ModuleList(
            Block(dim, activation, VarNorm(dim) if i % 2 == 0 else StdNorm(dim))
            for i, activation in enumerate(ACTIVATIONS))
        self.norm = VarNorm(dim)
        self.head = nn.Linear(dim, vocab_size)

    def forward(self, tokens):
        x = self.embedding(tokens)
        for block in self.blocks:
            x = block(x)
        x = x + 0.01 * torch.log1p(x.abs())
        return self.head(self.norm(x))


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(ActivationLM(), sys.argv[1])


if __name__ == "__main__":
    main()
