"""Saves a module that calls PyTorch 2's scaled_dot_product_attention and
rms_norm (registered in 1.13 by torch2_ops.py, so the saved code calls them
as PyTorch 2 writes it), traced and scripted, with their outputs, for
test/Import/torch2-ops.test: causal attention of 4 heads, grouped-query
attention (enable_gqa, 4 query heads on 2 KV heads) with a scale, attention
without a mask on a rank-3 query, a boolean padding mask, a float mask
broadcast over heads, cross-attention to a longer key sequence (causal:
top-left aligned) with a value head_dim of its own, causal masks
given as attn_mask (Hugging Face's finfo.min one, a boolean tril),
rms_norm with a weight, without one (eps None), and over the last two dims,
and nonzero_static cutting the positions found to its size and padding
them with a fill value.

usage: make_torch2_ops.py OUT

OUT receives traced.pt and scripted.pt (forward(x: f32 [2, 6, 16]) ->
tensors), x.npy and expected/output<k>.npy.
"""

import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch2_ops  # noqa: E402,F401
from idioms_io import save_traced_and_scripted  # noqa: E402


class Torch2Ops(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(16, 48)
        self.memory = nn.Parameter(torch.randn(2, 2, 9, 5))
        self.norm = nn.Parameter(torch.rand(16) + 0.5)
        self.norm2d = nn.Parameter(torch.rand(6, 16) + 0.5)

    def forward(self, x: torch.Tensor):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, 4, 4).permute(2, 0, 3, 1, 4).unbind(0)
        causal = torch.ops.aten.scaled_dot_product_attention(q, k, v, is_causal=True)
        grouped = torch.ops.aten.scaled_dot_product_attention(
            q, k[:, :2], v[:, 2:], is_causal=True, scale=0.3, enable_gqa=True)
        unmasked = torch.ops.aten.scaled_dot_product_attention(q[0], k[0], v[0])
        keep = torch.arange(t)[None, None, None, :] < (torch.arange(b) * 2 + 4)[:, None, None, None]
        padded = torch.ops.aten.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        bias = torch.tril(torch.ones(t, t)) * 0.5 - 1.0
        biased = torch.ops.aten.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        memory = self.memory
        cross = torch.ops.aten.scaled_dot_product_attention(
            q[:, :2, :, :], memory[..., :4], memory, is_causal=True)
        # Causal masks passed as attn_mask: Hugging Face's finfo(float32).min one and
        # a boolean tril (titan-fuse-attention proves them causal).
        hf_mask = torch.full((t, t), -3.4028234663852886e38).triu(1)[None, None]
        hf_causal = torch.ops.aten.scaled_dot_product_attention(
            q * 1.5, k, v, attn_mask=hf_mask.expand(b, 1, t, t), scale=0.25)
        tril_causal = torch.ops.aten.scaled_dot_product_attention(
            q * 2.0, k, v, attn_mask=torch.ones(t, t, dtype=torch.bool).tril())
        return (causal, grouped, unmasked, padded, biased, cross, hf_causal, tril_causal,
                torch.ops.aten.rms_norm(x, [16], self.norm, 1e-5),
                torch.ops.aten.rms_norm(x * 3.0, [16]),
                torch.ops.aten.rms_norm(x, [6, 16], self.norm2d, 1e-6),
                torch.ops.aten.nonzero_static(x > 0.5, size=40),
                torch.ops.aten.nonzero_static(x[0] > 1.5, size=10, fill_value=7))


def main() -> None:
    torch.manual_seed(0)
    module = Torch2Ops()
    save_traced_and_scripted(module, sys.argv[1], {"x": torch.randn(2, 6, 16)})

if __name__ == "__main__":
    main()
