"""Saves a Llama-style language model written as PyTorch 2 code writes it,
traced, with PyTorch's logits, for test/TrainStep/torch2-ops.test:
nn.RMSNorm's aten::rms_norm and F.scaled_dot_product_attention (causal,
grouped-query with enable_gqa, as torchtitan and Hugging Face's `sdpa`
attention call it), registered in PyTorch 1.13 by torch2_ops.py with
PyTorch's reference kernels, so that the saved code calls them as PyTorch 2
writes it; a SwiGLU MLP, and a padded second attention with a boolean key
mask (written out, not fused).

usage: make_torch2_lm.py OUT

OUT receives model.pt (forward(tokens: int64 [2, 32]) -> logits),
tokens.npy and logits.npy.
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Import", "Inputs"))
import torch2_ops  # noqa: E402,F401
from traced_lm import save_traced_lm  # noqa: E402


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return torch.ops.aten.rms_norm(x, [x.shape[-1]], self.weight, self.eps)


class Block(nn.Module):
    def __init__(self, dim, heads=4, kv_heads=2, masked=False):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.masked = masked
        self.attention_norm = RMSNorm(dim)
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wkv = nn.Linear(dim, 2 * kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)
        self.ffn_norm = RMSNorm(dim)
        self.w1 = nn.Linear(dim, 2 * dim, bias=False)
        self.w3 = nn.Linear(dim, 2 * dim, bias=False)
        self.w2 = nn.Linear(2 * dim, dim, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        h = self.attention_norm(x)
        q = self.wq(h).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.wkv(h).view(b, t, 2, self.kv_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        if self.masked:
            # Keys past each sequence's length hidden; every query sees key 0.
            keep = torch.arange(t)[None, None, None, :] < (torch.arange(b) * 8 + 24)[:, None, None, None]
            o = torch.ops.aten.scaled_dot_product_attention(
                q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), attn_mask=keep)
        else:
            o = torch.ops.aten.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.wo(o.transpose(1, 2).reshape(b, t, d))
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Torch2LM(nn.Module):
    def __init__(self, vocab_size=256, dim=32):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim)
        self.blocks = nn.ModuleList([Block(dim), Block(dim, masked=True)])
        self.norm = RMSNorm(dim)
        self.output = nn.Linear(dim, vocab_size, bias=False)

    def forward(self, tokens):
        x = self.embedding(tokens)
        for block in self.blocks:
            x = block(x)
        return self.output(self.norm(x))


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(Torch2LM(), sys.argv[1])


if __name__ == "__main__":
    main()
