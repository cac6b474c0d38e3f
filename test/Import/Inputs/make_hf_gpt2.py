"""Saves a GPT-2 written as Hugging Face's modeling code writes it, traced,
with PyTorch's logits: Conv1D (addmm with an [in, out] weight), the causal
mask a registered buffer of DTYPE (bool, or uint8 as transformers before
4.26 stores it) sliced with `bias[:, :, kl - ql : kl, :kl]`, `.to(torch.bool)`
and applied with `torch.where(mask, w, torch.full([], finfo.min))`, the
scores divided by `torch.full([], head_dim ** 0.5)`, `gelu_new` written out,
heads split with view + permute, tied embeddings.

usage: make_hf_gpt2.py OUT DTYPE

OUT receives model.pt (forward(input_ids: int64 [2, 32]) -> logits),
input_ids.npy and logits.npy.
"""

import math
import sys

import torch
from torch import nn
from traced_lm import save_traced_lm


class Conv1D(nn.Module):
    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, embed_dim, num_heads, max_positions, mask_dtype):
        super().__init__()
        self.register_buffer(
            "bias",
            torch.tril(torch.ones((max_positions, max_positions), dtype=mask_dtype)).view(
                1, 1, max_positions, max_positions))
        self.register_buffer("masked_bias", torch.tensor(-1e4))
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.c_attn = Conv1D(3 * embed_dim, embed_dim)
        self.c_proj = Conv1D(embed_dim, embed_dim)

    def _split_heads(self, tensor, num_heads, head_dim):
        tensor = tensor.view(tensor.size()[:-1] + (num_heads, head_dim))
        return tensor.permute(0, 2, 1, 3)

    def _merge_heads(self, tensor, num_heads, head_dim):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        return tensor.view(tensor.size()[:-2] + (num_heads * head_dim,))

    def _attn(self, query, key, value):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full(
            [], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length].to(torch.bool)
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype).to(attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.type(value.dtype)
        return torch.matmul(attn_weights, value)

    def forward(self, hidden_states):
        query, key, value = self.c_attn(hidden_states).split(self.embed_dim, dim=2)
        query = self._split_heads(query, self.num_heads, self.head_dim)
        key = self._split_heads(key, self.num_heads, self.head_dim)
        value = self._split_heads(value, self.num_heads, self.head_dim)
        attn_output = self._merge_heads(self._attn(query, key, value), self.num_heads, self.head_dim)
        return self.c_proj(attn_output)


class GPT2MLP(nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.c_fc = Conv1D(4 * embed_dim, embed_dim)
        self.c_proj = Conv1D(embed_dim, 4 * embed_dim)

    def forward(self, hidden_states):
        return self.c_proj(gelu_new(self.c_fc(hidden_states)))


class GPT2Block(nn.Module):
    def __init__(self, embed_dim, num_heads, max_positions, mask_dtype):
        super().__init__()
        self.ln_1 = nn.LayerNorm(embed_dim, eps=1e-5)
        self.attn = GPT2Attention(embed_dim, num_heads, max_positions, mask_dtype)
        self.ln_2 = nn.LayerNorm(embed_dim, eps=1e-5)
        self.mlp = GPT2MLP(embed_dim)

    def forward(self, hidden_states):
        hidden_states = hidden_states + self.attn(self.ln_1(hidden_states))
        return hidden_states + self.mlp(self.ln_2(hidden_states))


class GPT2LMHeadModel(nn.Module):
    def __init__(self, mask_dtype, vocab_size=256, embed_dim=64, num_heads=4, num_layers=2, max_positions=64):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, embed_dim)
        self.wpe = nn.Embedding(max_positions, embed_dim)
        self.h = nn.ModuleList(
            [GPT2Block(embed_dim, num_heads, max_positions, mask_dtype) for _ in range(num_layers)])
        self.ln_f = nn.LayerNorm(embed_dim)
        self.lm_head = nn.Linear(embed_dim, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, input_ids):
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        position_ids = torch.arange(0, input_shape[-1], dtype=torch.long, device=input_ids.device)
        position_ids = position_ids.unsqueeze(0).view(-1, input_shape[-1])
        hidden_states = self.wte(input_ids) + self.wpe(position_ids)
        for block in self.h:
            hidden_states = block(hidden_states)
        return self.lm_head(self.ln_f(hidden_states))


def main() -> None:
    dtype = {"bool": torch.bool, "uint8": torch.uint8}[sys.argv[2]]
    torch.manual_seed(0)
    save_traced_lm(GPT2LMHeadModel(dtype), sys.argv[1], "input_ids")


if __name__ == "__main__":
    main()
