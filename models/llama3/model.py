"""Llama 3 in plain PyTorch, written for TorchScript export.

The module tree and parameter names follow torchtitan's Llama 3 exactly, so a
checkpoint or a parallel plan written against torchtitan's names applies here
unchanged:

    tok_embeddings.weight                                  [vocab, dim]
    layers.{i}.attention_norm.weight                       [dim]
    layers.{i}.attention.{wq,wk,wv,wo}.weight              [out, in]
    layers.{i}.ffn_norm.weight                             [dim]
    layers.{i}.feed_forward.{w1,w2,w3}.weight              [out, in]
    norm.weight                                            [dim]
    output.weight                                          [vocab, dim] (untied)

Everything is written with ops that both ``torch.jit.trace`` and
``torch.jit.script`` record as ordinary ``aten`` nodes: RMSNorm by hand,
attention as matmul + causal mask + softmax (torch 1.13 has no
``scaled_dot_product_attention``), SwiGLU, and RoPE in one of two forms:

* ``"complex"`` (torchtitan's): a complex64 ``freqs_cis`` buffer, applied with
  ``view_as_complex`` / complex multiply / ``view_as_real``; it rotates the
  interleaved pairs (0, 1), (2, 3), ... of each head.
* ``"rotate_half"`` (complex-free): real ``rope_cos`` / ``rope_sin`` buffers,
  applied as ``x * cos + rotate_half(x) * sin``; it rotates the pairs
  (i, i + head_dim / 2). With the same weights this is a different (equally
  valid) model, so its logits differ from the complex form.
"""

import dataclasses
import math
from typing import Dict, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn

ROPE_STYLES = ("complex", "rotate_half")


@dataclasses.dataclass(frozen=True)
class ModelArgs:
    """Hyper-parameters of one Llama 3 flavor (torchtitan's ``TransformerModelArgs``)."""

    dim: int = 4096
    n_layers: int = 32
    n_heads: int = 32
    n_kv_heads: Optional[int] = None
    vocab_size: int = 128256
    multiple_of: int = 256
    ffn_dim_multiplier: Optional[float] = None
    norm_eps: float = 1e-5
    rope_theta: float = 500000.0
    max_seq_len: int = 8192
    rope_style: str = "complex"

    @property
    def kv_heads(self) -> int:
        """Number of key/value heads (``n_heads`` when ``n_kv_heads`` is unset)."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads

    @property
    def ffn_hidden_dim(self) -> int:
        """SwiGLU hidden size by torchtitan's rule.

        Start from 4 * dim, take 2/3 of it, scale by ``ffn_dim_multiplier`` if
        given, and round up to a multiple of ``multiple_of``.
        """
        hidden = int(2 * (4 * self.dim) / 3)
        if self.ffn_dim_multiplier is not None:
            hidden = int(self.ffn_dim_multiplier * hidden)
        return self.multiple_of * ((hidden + self.multiple_of - 1) // self.multiple_of)

    def validate(self) -> None:
        """Raise ``ValueError`` on an inconsistent combination of arguments."""
        if self.dim % self.n_heads != 0:
            raise ValueError(f"dim {self.dim} is not divisible by n_heads {self.n_heads}")
        if self.head_dim % 2 != 0:
            raise ValueError(f"head_dim {self.head_dim} must be even for RoPE")
        if self.n_heads % self.kv_heads != 0:
            raise ValueError(f"n_heads {self.n_heads} is not a multiple of n_kv_heads {self.kv_heads}")
        if self.rope_style not in ROPE_STYLES:
            raise ValueError(f"rope_style must be one of {ROPE_STYLES}, got {self.rope_style!r}")


# torchtitan's Llama 3 flavors (torchtitan/models/llama3/__init__.py). "debugmodel_gqa" is not a
# torchtitan flavor: it is debugmodel with 4 KV heads, so that the small,
# fully checkable model also exercises grouped-query attention (repeat_kv).
# "tiny" (2 layers, 4 query heads sharing 2 KV heads) is the model zoo's test
# flavor, small enough to train on 4 simulated ranks in seconds.
FLAVORS: Dict[str, ModelArgs] = {
    "tiny": ModelArgs(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=256, multiple_of=32, max_seq_len=64),
    "debugmodel": ModelArgs(dim=256, n_layers=6, n_heads=16, vocab_size=2048, max_seq_len=2048),
    "debugmodel_gqa": ModelArgs(
        dim=256, n_layers=6, n_heads=16, n_kv_heads=4, vocab_size=2048, max_seq_len=2048
    ),
    "8B": ModelArgs(
        dim=4096, n_layers=32, n_heads=32, n_kv_heads=8, ffn_dim_multiplier=1.3, multiple_of=1024
    ),
    "70B": ModelArgs(
        dim=8192, n_layers=80, n_heads=64, n_kv_heads=8, ffn_dim_multiplier=1.3, multiple_of=4096
    ),
    "405B": ModelArgs(
        dim=16384, n_layers=126, n_heads=128, n_kv_heads=8, ffn_dim_multiplier=1.2, multiple_of=4096
    ),
}


def precompute_freqs_cis(head_dim: int, max_seq_len: int, theta: float) -> torch.Tensor:
    """Complex rotations e^{i * t * theta^(-2k/head_dim)}, shape [max_seq_len, head_dim // 2]."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    t = torch.arange(max_seq_len, dtype=torch.float32)
    angles = torch.outer(t, inv_freq)
    return torch.polar(torch.ones_like(angles), angles)


def precompute_cos_sin(head_dim: int, max_seq_len: int, theta: float) -> Tuple[torch.Tensor, torch.Tensor]:
    """cos and sin tables for rotate-half RoPE, each [max_seq_len, head_dim]."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    t = torch.arange(max_seq_len, dtype=torch.float32)
    angles = torch.outer(t, inv_freq)
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos(), angles.sin()


def apply_rope_complex(x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
    """Rotate x [B, S, H, D] by freqs_cis [S, D/2] (complex), torchtitan-style."""
    x_c = torch.view_as_complex(x.float().reshape(x.shape[0], x.shape[1], x.shape[2], -1, 2))
    freqs = freqs_cis.view(1, x_c.shape[1], 1, x_c.shape[3])
    return torch.view_as_real(x_c * freqs).flatten(3).type_as(x)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """[x1, x2] -> [-x2, x1] along the last dimension."""
    half = x.shape[-1] // 2
    x1 = x[..., :half]
    x2 = x[..., half:]
    return torch.cat([-x2, x1], dim=-1)


def apply_rope_rotate_half(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate x [B, S, H, D] by cos/sin [S, D] without complex numbers."""
    cos = cos.view(1, cos.shape[0], 1, cos.shape[1])
    sin = sin.view(1, sin.shape[0], 1, sin.shape[1])
    return x * cos + rotate_half(x) * sin


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """Repeat each KV head n_rep times: [B, S, Hkv, D] -> [B, S, Hkv * n_rep, D]."""
    if n_rep == 1:
        return x
    bs, slen, n_kv_heads, head_dim = x.shape
    return (
        x.unsqueeze(3)
        .expand(bs, slen, n_kv_heads, n_rep, head_dim)
        .reshape(bs, slen, n_kv_heads * n_rep, head_dim)
    )


class RMSNorm(nn.Module):
    """x * rsqrt(mean(x^2) + eps) * weight, normalized in fp32."""

    __constants__ = ["eps"]

    def __init__(self, dim: int, eps: float, device: Optional[torch.device] = None) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim, device=device))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.type_as(x) * self.weight


class Attention(nn.Module):
    """Causal grouped-query self-attention with RoPE on queries and keys."""

    __constants__ = ["n_heads", "n_kv_heads", "n_rep", "head_dim", "use_complex_rope"]

    def __init__(self, args: ModelArgs, device: Optional[torch.device] = None) -> None:
        super().__init__()
        self.n_heads = args.n_heads
        self.n_kv_heads = args.kv_heads
        self.n_rep = args.n_heads // args.kv_heads
        self.head_dim = args.head_dim
        self.use_complex_rope = args.rope_style == "complex"
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False, device=device)
        self.wk = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False, device=device)
        self.wv = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False, device=device)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False, device=device)

    def forward(self, x: torch.Tensor, rope_a: torch.Tensor, rope_b: torch.Tensor) -> torch.Tensor:
        """x [B, S, dim]; (rope_a, rope_b) is (freqs_cis, freqs_cis) or (cos, sin), sliced to S."""
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.wk(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xv = self.wv(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)

        if self.use_complex_rope:
            xq = apply_rope_complex(xq, rope_a)
            xk = apply_rope_complex(xk, rope_a)
        else:
            xq = apply_rope_rotate_half(xq, rope_a, rope_b)
            xk = apply_rope_rotate_half(xk, rope_a, rope_b)

        keys = repeat_kv(xk, self.n_rep)
        values = repeat_kv(xv, self.n_rep)

        q = xq.transpose(1, 2)  # [B, H, S, D]
        k = keys.transpose(1, 2)
        v = values.transpose(1, 2)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        mask = torch.triu(
            torch.full((seqlen, seqlen), float("-inf"), dtype=scores.dtype, device=scores.device),
            diagonal=1,
        )
        probs = F.softmax((scores + mask).float(), dim=-1).type_as(q)
        out = torch.matmul(probs, v)  # [B, H, S, D]
        out = out.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(out)


class FeedForward(nn.Module):
    """SwiGLU: w2(silu(w1 x) * w3 x)."""

    def __init__(self, dim: int, hidden_dim: int, device: Optional[torch.device] = None) -> None:
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False, device=device)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False, device=device)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False, device=device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    """Pre-norm block: h = x + attn(norm(x)); out = h + ffn(norm(h))."""

    def __init__(self, layer_id: int, args: ModelArgs, device: Optional[torch.device] = None) -> None:
        super().__init__()
        self.layer_id = layer_id
        self.attention = Attention(args, device=device)
        self.feed_forward = FeedForward(args.dim, args.ffn_hidden_dim, device=device)
        self.attention_norm = RMSNorm(args.dim, args.norm_eps, device=device)
        self.ffn_norm = RMSNorm(args.dim, args.norm_eps, device=device)

    def forward(self, x: torch.Tensor, rope_a: torch.Tensor, rope_b: torch.Tensor) -> torch.Tensor:
        h = x + self.attention(self.attention_norm(x), rope_a, rope_b)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    """Llama 3 decoder: tokens [B, S] (int64) -> logits [B, S, vocab] (fp32)."""

    __constants__ = ["use_complex_rope"]

    def __init__(self, args: ModelArgs, device: Optional[torch.device] = None) -> None:
        """Build the model. ``device="meta"`` allocates no parameter storage.

        The RoPE tables are non-persistent buffers (as in torchtitan) and are
        always computed on the CPU: they are small even for 405B.
        """
        super().__init__()
        args.validate()
        self.args = args
        self.use_complex_rope = args.rope_style == "complex"
        self.tok_embeddings = nn.Embedding(args.vocab_size, args.dim, device=device)
        self.layers = nn.ModuleList(
            [TransformerBlock(i, args, device=device) for i in range(args.n_layers)]
        )
        self.norm = RMSNorm(args.dim, args.norm_eps, device=device)
        self.output = nn.Linear(args.dim, args.vocab_size, bias=False, device=device)
        if self.use_complex_rope:
            rope_a = precompute_freqs_cis(args.head_dim, args.max_seq_len, args.rope_theta)
            self.register_buffer("freqs_cis", rope_a, persistent=False)
        else:
            cos, sin = precompute_cos_sin(args.head_dim, args.max_seq_len, args.rope_theta)
            self.register_buffer("rope_cos", cos, persistent=False)
            self.register_buffer("rope_sin", sin, persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        seqlen = tokens.shape[1]
        if self.use_complex_rope:
            rope_a = self.freqs_cis[0:seqlen]
            rope_b = rope_a  # unused by the complex form; keeps one block signature
        else:
            rope_a = self.rope_cos[0:seqlen]
            rope_b = self.rope_sin[0:seqlen]
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h, rope_a, rope_b)
        return self.output(self.norm(h)).float()

    def init_weights(self, seed: int) -> None:
        """Deterministic, torchtitan-like initialization from ``seed``.

        Embeddings N(0, 1); wq/wk/wv and w1 truncated N(0, 0.02); wo, w2 and w3
        truncated N(0, 0.02 / sqrt(2 * (layer_id + 1))) (torchtitan's depth
        init); output truncated N(0, dim^-0.5) clipped at 3 std. Norm weights
        are 1 + N(0, 0.1) rather than torchtitan's ones, so that an importer
        that dropped a norm weight would change the logits.
        """
        gen_state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        try:
            with torch.no_grad():
                nn.init.normal_(self.tok_embeddings.weight)
                for layer in self.layers:
                    assert isinstance(layer, TransformerBlock)
                    depth_std = 0.02 / math.sqrt(2 * (layer.layer_id + 1))
                    attn, ffn = layer.attention, layer.feed_forward
                    for lin in (attn.wq, attn.wk, attn.wv, ffn.w1):
                        nn.init.trunc_normal_(lin.weight, mean=0.0, std=0.02)
                    for lin in (attn.wo, ffn.w2, ffn.w3):
                        nn.init.trunc_normal_(lin.weight, mean=0.0, std=depth_std)
                    for norm in (layer.attention_norm, layer.ffn_norm):
                        norm.weight.copy_(1.0 + 0.1 * torch.randn_like(norm.weight))
                self.norm.weight.copy_(1.0 + 0.1 * torch.randn_like(self.norm.weight))
                std = self.args.dim ** -0.5
                nn.init.trunc_normal_(self.output.weight, mean=0.0, std=std, a=-3 * std, b=3 * std)
        finally:
            torch.random.set_rng_state(gen_state)
