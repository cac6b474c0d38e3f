"""Saves a small language model that draws random numbers as public
training code does, traced in training mode:

- NEFTune's noisy embeddings (`embeds + zeros_like(embeds).uniform_(-m, m)`,
  m = alpha / sqrt(seq * dim), as Hugging Face's trainer adds them);
- Mixtral's router jitter (`h * empty_like(h).uniform_(1 - eps, 1 + eps)`
  before the router of a two-expert mixture);
- timm's DropPath (stochastic depth) on each residual branch: one
  `new_empty([batch, 1, 1]).bernoulli_(keep)` per row;
- nn.RReLU in training mode (a random slope per negative element).

usage: make_random_lm.py OUT

OUT receives model.pt (forward(tokens: int64 [batch, seq]) -> logits).
"""

import math
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_dropout_lm import save_traced_lm  # noqa: E402


def drop_path(x, drop_prob: float):
    keep = 1.0 - drop_prob
    mask = x.new_empty((x.shape[0],) + (1,) * (x.dim() - 1)).bernoulli_(keep)
    return x * mask / keep


class Block(nn.Module):
    def __init__(self, dim: int, jitter: float = 0.1, drop_prob: float = 0.25):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.router = nn.Linear(dim, 2)
        self.experts = nn.ModuleList(
            [nn.Sequential(nn.Linear(dim, 2 * dim), nn.RReLU(), nn.Linear(2 * dim, dim))
             for _ in range(2)])
        self.jitter = jitter
        self.drop_prob = drop_prob

    def forward(self, x):
        h = self.norm(x)
        jittered = h * torch.empty_like(h).uniform_(1.0 - self.jitter, 1.0 + self.jitter)
        gates = F.softmax(self.router(jittered), dim=-1)
        mixed = gates[..., 0:1] * self.experts[0](h) + gates[..., 1:2] * self.experts[1](h)
        return x + drop_path(mixed, self.drop_prob)


class RandomLM(nn.Module):
    def __init__(self, vocab_size=256, dim=16, max_seq=64, layers=2, noise_alpha=5.0):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.pos = nn.Embedding(max_seq, dim)
        self.layers = nn.ModuleList([Block(dim) for _ in range(layers)])
        self.head = nn.Linear(dim, vocab_size)
        self.noise_alpha = noise_alpha

    def forward(self, tokens):
        embeds = self.embed(tokens)
        magnitude = self.noise_alpha / math.sqrt(tokens.shape[1] * embeds.shape[-1])
        x = embeds + torch.zeros_like(embeds).uniform_(-magnitude, magnitude)
        x = x + self.pos(torch.arange(tokens.shape[1]))
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


if __name__ == "__main__":
    save_traced_lm(RandomLM, sys.argv[1])
