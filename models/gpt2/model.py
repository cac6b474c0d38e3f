"""A GPT-2 style decoder in plain PyTorch, written for TorchScript export.

Written the way nanoGPT writes GPT-2, so that the importer meets its idioms
(and a second family of patterns besides Llama): LayerNorm with bias, biased
Linear layers, a fused QKV projection split with ``split``, head sizes
computed as ``C // n_head`` from ``x.size()``, the tanh GELU (GPT-2's),
learned position embeddings of ``torch.arange(0, t)``, dropout modules (at
p = 0), a causal mask that is a registered float buffer
(``torch.tril(torch.ones(block_size, block_size))``) sliced to the sequence
and applied with ``masked_fill(bias[:, :, :T, :T] == 0, -inf)``, and
input/output embeddings tied (``lm_head.weight`` is the same Parameter as
``transformer.wte.weight``).

Parameter names (nanoGPT's, Linear weights stored [out, in]):

    transformer.wte.weight                              [vocab, n_embd]
    transformer.wpe.weight                              [block_size, n_embd]
    transformer.h.{i}.ln_1.{weight,bias}                [n_embd]
    transformer.h.{i}.attn.c_attn.{weight,bias}         [3 n_embd, n_embd], [3 n_embd]
    transformer.h.{i}.attn.c_proj.{weight,bias}         [n_embd, n_embd], [n_embd]
    transformer.h.{i}.ln_2.{weight,bias}                [n_embd]
    transformer.h.{i}.mlp.c_fc.{weight,bias}            [4 n_embd, n_embd], [4 n_embd]
    transformer.h.{i}.mlp.c_proj.{weight,bias}          [n_embd, 4 n_embd], [n_embd]
    transformer.ln_f.{weight,bias}                      [n_embd]
    lm_head.weight                                      tied to transformer.wte.weight

and one buffer per layer, the causal mask ``transformer.h.{i}.attn.bias``
[1, 1, block_size, block_size].
"""

import dataclasses
import math
from typing import Dict

import torch
import torch.nn.functional as F
from torch import nn


@dataclasses.dataclass(frozen=True)
class GPT2Args:
    """Hyper-parameters of one GPT-2 flavor."""

    vocab_size: int = 50257
    block_size: int = 1024
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    layer_norm_eps: float = 1e-5
    dropout: float = 0.0

    def validate(self) -> None:
        """Raise ``ValueError`` on an inconsistent combination of arguments."""
        if self.n_embd % self.n_head != 0:
            raise ValueError(f"n_embd {self.n_embd} is not divisible by n_head {self.n_head}")


FLAVORS: Dict[str, GPT2Args] = {
    "tiny": GPT2Args(vocab_size=512, block_size=64, n_layer=4, n_head=4, n_embd=128),
}


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with a fused QKV projection."""

    __constants__ = ["n_head", "n_embd"]

    def __init__(self, args: GPT2Args) -> None:
        super().__init__()
        self.c_attn = nn.Linear(args.n_embd, 3 * args.n_embd)
        self.c_proj = nn.Linear(args.n_embd, args.n_embd)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.n_head = args.n_head
        self.n_embd = args.n_embd
        causal = torch.tril(torch.ones(args.block_size, args.block_size))
        self.register_buffer("bias", causal.view(1, 1, args.block_size, args.block_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        # [B, T, C] -> [B, nh, T, hs]
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    """dropout(c_proj(gelu_tanh(c_fc x)))."""

    def __init__(self, args: GPT2Args) -> None:
        super().__init__()
        self.c_fc = nn.Linear(args.n_embd, 4 * args.n_embd)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * args.n_embd, args.n_embd)
        self.dropout = nn.Dropout(args.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    """Pre-LayerNorm block: x + attn(ln_1 x), then + mlp(ln_2 x)."""

    def __init__(self, args: GPT2Args) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(args.n_embd, eps=args.layer_norm_eps)
        self.attn = CausalSelfAttention(args)
        self.ln_2 = nn.LayerNorm(args.n_embd, eps=args.layer_norm_eps)
        self.mlp = MLP(args)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    """GPT-2 decoder: tokens [B, T] (int64, T <= block_size) -> logits [B, T, vocab]."""

    __constants__ = ["block_size"]

    def __init__(self, args: GPT2Args) -> None:
        super().__init__()
        args.validate()
        self.args = args
        self.block_size = args.block_size
        self.transformer = nn.ModuleDict(
            {
                "wte": nn.Embedding(args.vocab_size, args.n_embd),
                "wpe": nn.Embedding(args.block_size, args.n_embd),
                "drop": nn.Dropout(args.dropout),
                "h": nn.ModuleList([Block(args) for _ in range(args.n_layer)]),
                "ln_f": nn.LayerNorm(args.n_embd, eps=args.layer_norm_eps),
            }
        )
        self.lm_head = nn.Linear(args.n_embd, args.vocab_size, bias=False)
        self.lm_head.weight = self.transformer["wte"].weight  # tied

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        b, t = tokens.size()
        assert t <= self.block_size, f"Cannot forward sequence of length {t}, block size is only {self.block_size}"
        pos = torch.arange(0, t, dtype=torch.long, device=tokens.device)  # shape (t)
        tok_emb = self.transformer["wte"](tokens)  # (b, t, n_embd)
        pos_emb = self.transformer["wpe"](pos)  # (t, n_embd)
        x = self.transformer["drop"](tok_emb + pos_emb)
        for block in self.transformer["h"]:
            x = block(x)
        x = self.transformer["ln_f"](x)
        return self.lm_head(x)

    def init_weights(self, seed: int) -> None:
        """Deterministic GPT-2 initialization from ``seed``.

        Linear and embedding weights N(0, 0.02); the residual projections
        (``c_proj``) N(0, 0.02 / sqrt(2 * n_layer)). Unlike GPT-2, which starts
        biases at 0 and LayerNorm at (1, 0), biases are N(0, 0.02) and
        LayerNorm weights 1 + N(0, 0.1), so that every parameter influences the
        logits that the importer is checked against.
        """
        gen_state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        proj_std = 0.02 / math.sqrt(2 * self.args.n_layer)
        try:
            with torch.no_grad():
                for name, module in self.named_modules():
                    if module is self.lm_head:
                        continue  # tied to transformer.wte, initialized there
                    if isinstance(module, nn.Linear):
                        std = proj_std if name.endswith("c_proj") else 0.02
                        nn.init.normal_(module.weight, mean=0.0, std=std)
                        if module.bias is not None:
                            nn.init.normal_(module.bias, mean=0.0, std=0.02)
                    elif isinstance(module, nn.Embedding):
                        nn.init.normal_(module.weight, mean=0.0, std=0.02)
                    elif isinstance(module, nn.LayerNorm):
                        module.weight.copy_(1.0 + 0.1 * torch.randn_like(module.weight))
                        nn.init.normal_(module.bias, mean=0.0, std=0.02)
        finally:
            torch.random.set_rng_state(gen_state)
