"""Saves a small causal LM whose attention is written as Hugging Face's
GPTBigCode (StarCoder) writes its multi-query attention, traced, with
PyTorch's logits: a fused c_attn split into q and one shared K/V head, q
viewed [batch, seq * heads, head_dim], `torch.baddbmm` into an empty tensor
zeroed in place (beta 0), the scores viewed [batch, seq, heads, seq] for a
bool mask buffer unsqueezed at the head dim and `torch.where(mask, w,
torch.full([], finfo.min))`, learned positions, tied embeddings.

usage: make_bigcode_lm.py OUT

OUT receives model.pt (forward(tokens: int64 [2, 32]) -> logits),
tokens.npy and logits.npy.
"""

import os
import sys

import torch
from torch import nn
import torch.nn.functional as F

# The shared tracing of the importer's tests (test/Import/Inputs).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Import", "Inputs"))
from traced_lm import save_traced_lm  # noqa: E402


class MultiQueryAttention(nn.Module):
    def __init__(self, dim, heads, max_positions):
        super().__init__()
        self.heads, self.head_dim, self.dim = heads, dim // heads, dim
        self.c_attn = nn.Linear(dim, dim + 2 * self.head_dim)
        self.c_proj = nn.Linear(dim, dim)
        self.register_buffer("bias", torch.tril(torch.ones((max_positions, max_positions), dtype=torch.bool)),
                             persistent=False)

    def forward(self, x):
        query, key_value = self.c_attn(x).split((self.dim, 2 * self.head_dim), dim=2)
        key, value = key_value.split((self.head_dim, self.head_dim), dim=-1)
        batch, length = query.shape[0], query.shape[1]
        causal = self.bias[None, :length, :length].unsqueeze(2)
        query_shape = query.shape
        query = query.reshape(batch, length * self.heads, self.head_dim)
        attn_view = (batch, length * self.heads, length)
        weights = torch.empty(attn_view, dtype=query.dtype)
        weights.zero_()
        weights = torch.baddbmm(weights, query, key.transpose(-1, -2), beta=0, alpha=self.head_dim ** -0.5)
        weights = weights.view(batch, length, self.heads, length)
        weights = torch.where(causal, weights, torch.full([], torch.finfo(weights.dtype).min, dtype=weights.dtype))
        weights = F.softmax(weights, dim=-1)
        out = torch.bmm(weights.view(attn_view), value).view(query_shape)
        return self.c_proj(out)


class BigCodeLM(nn.Module):
    def __init__(self, vocab_size=256, dim=64, heads=4, max_positions=64):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, dim)
        self.wpe = nn.Embedding(max_positions, dim)
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = MultiQueryAttention(dim, heads, max_positions)
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, tokens):
        positions = torch.arange(0, tokens.shape[1], dtype=torch.long).unsqueeze(0)
        x = self.wte(tokens) + self.wpe(positions)
        x = x + self.attn(self.ln_1(x))
        return self.lm_head(self.ln_f(x))


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(BigCodeLM(), sys.argv[1])


if __name__ == "__main__":
    main()
