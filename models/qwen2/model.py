"""A Qwen2 / Mistral style decoder in plain PyTorch, written for TorchScript export.

Written the way Hugging Face's Qwen2 and Mistral modeling code writes these
models, so that the importer meets their idioms:

* biases on the q/k/v projections only (``o_proj`` and the MLP have none);
* grouped-query attention, with Hugging Face's ``repeat_kv``
  (``x[:, :, None, :, :]`` -> ``expand`` -> ``reshape`` on [B, H, S, D]);
* SwiGLU MLP: ``down_proj(silu(gate_proj(x)) * up_proj(x))``;
* rotate-half RoPE from ``cos_cached`` / ``sin_cached`` buffers of every
  attention layer's rotary module, sliced to the sequence and then indexed
  by ``position_ids`` (``cos[position_ids]``, an ``aten::index``);
* RMSNorm written out in fp32, scaled as ``weight * x.to(input_dtype)``;
* an additive causal mask, ``full(-inf).triu(1)``, and the softmax taken in
  fp32 (``softmax(..., dtype=torch.float32).to(q.dtype)``).

Parameter names (Linear weights stored [out, in]; ``lm_head`` untied):

    model.embed_tokens.weight                                   [vocab, dim]
    model.layers.{i}.self_attn.{q,k,v}_proj.{weight,bias}       [heads * head_dim, dim], [heads * head_dim]
    model.layers.{i}.self_attn.o_proj.weight                    [dim, n_heads * head_dim]
    model.layers.{i}.mlp.{gate,up}_proj.weight                  [intermediate, dim]
    model.layers.{i}.mlp.down_proj.weight                       [dim, intermediate]
    model.layers.{i}.{input_layernorm,post_attention_layernorm}.weight  [dim]
    model.norm.weight                                           [dim]
    lm_head.weight                                              [vocab, dim]
"""

import dataclasses
import math
from typing import Dict, Tuple

import torch
import torch.nn.functional as F
from torch import nn


@dataclasses.dataclass(frozen=True)
class Qwen2Args:
    """Hyper-parameters of one Qwen2 flavor (Hugging Face's ``Qwen2Config`` names)."""

    vocab_size: int = 151936
    hidden_size: int = 896
    intermediate_size: int = 4864
    num_hidden_layers: int = 24
    num_attention_heads: int = 14
    num_key_value_heads: int = 2
    max_position_embeddings: int = 32768
    rope_theta: float = 1000000.0
    rms_norm_eps: float = 1e-6

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def validate(self) -> None:
        """Raise ``ValueError`` on an inconsistent combination of arguments."""
        if self.hidden_size % self.num_attention_heads != 0:
            raise ValueError(f"hidden_size {self.hidden_size} is not divisible by "
                             f"num_attention_heads {self.num_attention_heads}")
        if self.num_attention_heads % self.num_key_value_heads != 0:
            raise ValueError(f"num_attention_heads {self.num_attention_heads} is not a multiple of "
                             f"num_key_value_heads {self.num_key_value_heads}")
        if self.head_dim % 2 != 0:
            raise ValueError(f"head_dim {self.head_dim} must be even for RoPE")


# "tiny" is a test flavor (not a released Qwen2 size): 2 layers, 4 query heads
# sharing 2 KV heads, head_dim 16.
FLAVORS: Dict[str, Qwen2Args] = {
    "tiny": Qwen2Args(vocab_size=384, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64),
}


class Qwen2RMSNorm(nn.Module):
    """weight * (x * rsqrt(mean(x^2) + eps)), normalized in fp32."""

    __constants__ = ["variance_epsilon"]

    def __init__(self, hidden_size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class Qwen2RotaryEmbedding(nn.Module):
    """cos/sin tables of rotate-half RoPE, [max_position_embeddings, head_dim] each."""

    def __init__(self, dim: int, max_position_embeddings: int, base: float) -> None:
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
        t = torch.arange(max_position_embeddings, dtype=torch.float32)
        freqs = torch.outer(t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, x: torch.Tensor, seq_len: int) -> Tuple[torch.Tensor, torch.Tensor]:
        return (self.cos_cached[:seq_len].to(dtype=x.dtype), self.sin_cached[:seq_len].to(dtype=x.dtype))


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """[x1, x2] -> [-x2, x1] along the last dimension."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                         position_ids: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Rotate q, k [B, H, S, D] by the table rows of ``position_ids`` [B, S]."""
    cos = cos[position_ids].unsqueeze(1)  # [B, 1, S, D]
    sin = sin[position_ids].unsqueeze(1)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    """[B, Hkv, S, D] -> [B, Hkv * n_rep, S, D]."""
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class Qwen2Attention(nn.Module):
    """Causal grouped-query attention; biased q/k/v, unbiased output projection."""

    __constants__ = ["num_heads", "head_dim", "num_key_value_heads", "num_key_value_groups", "hidden_size"]

    def __init__(self, args: Qwen2Args) -> None:
        super().__init__()
        self.hidden_size = args.hidden_size
        self.num_heads = args.num_attention_heads
        self.head_dim = args.head_dim
        self.num_key_value_heads = args.num_key_value_heads
        self.num_key_value_groups = self.num_heads // self.num_key_value_heads
        self.q_proj = nn.Linear(self.hidden_size, self.num_heads * self.head_dim, bias=True)
        self.k_proj = nn.Linear(self.hidden_size, self.num_key_value_heads * self.head_dim, bias=True)
        self.v_proj = nn.Linear(self.hidden_size, self.num_key_value_heads * self.head_dim, bias=True)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, self.hidden_size, bias=False)
        self.rotary_emb = Qwen2RotaryEmbedding(self.head_dim, args.max_position_embeddings, args.rope_theta)

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor,
                position_ids: torch.Tensor) -> torch.Tensor:
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states)
        key_states = self.k_proj(hidden_states)
        value_states = self.v_proj(hidden_states)

        query_states = query_states.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = key_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = value_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)

        cos, sin = self.rotary_emb(value_states, seq_len=q_len)
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin, position_ids)

        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)

        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        attn_weights = attn_weights + attention_mask
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)

        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, self.hidden_size)
        return self.o_proj(attn_output)


class Qwen2MLP(nn.Module):
    """SwiGLU: down_proj(silu(gate_proj x) * up_proj x)."""

    def __init__(self, args: Qwen2Args) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(args.hidden_size, args.intermediate_size, bias=False)
        self.up_proj = nn.Linear(args.hidden_size, args.intermediate_size, bias=False)
        self.down_proj = nn.Linear(args.intermediate_size, args.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Qwen2DecoderLayer(nn.Module):
    """Pre-norm block: h = x + attn(norm(x)); out = h + mlp(norm(h))."""

    def __init__(self, args: Qwen2Args) -> None:
        super().__init__()
        self.self_attn = Qwen2Attention(args)
        self.mlp = Qwen2MLP(args)
        self.input_layernorm = Qwen2RMSNorm(args.hidden_size, eps=args.rms_norm_eps)
        self.post_attention_layernorm = Qwen2RMSNorm(args.hidden_size, eps=args.rms_norm_eps)

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor,
                position_ids: torch.Tensor) -> torch.Tensor:
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, attention_mask, position_ids)
        hidden_states = residual + hidden_states

        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states


class Qwen2Model(nn.Module):
    """Embedding, decoder layers and the final norm."""

    def __init__(self, args: Qwen2Args) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(args.vocab_size, args.hidden_size)
        self.layers = nn.ModuleList([Qwen2DecoderLayer(args) for _ in range(args.num_hidden_layers)])
        self.norm = Qwen2RMSNorm(args.hidden_size, eps=args.rms_norm_eps)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        batch_size, seq_length = input_ids.shape
        position_ids = torch.arange(0, seq_length, dtype=torch.long, device=input_ids.device)
        position_ids = position_ids.unsqueeze(0).view(-1, seq_length)
        hidden_states = self.embed_tokens(input_ids)
        causal_mask = torch.full((seq_length, seq_length), float("-inf"), dtype=hidden_states.dtype,
                                 device=hidden_states.device).triu(1)
        causal_mask = causal_mask[None, None, :, :].expand(batch_size, 1, -1, -1)
        for decoder_layer in self.layers:
            hidden_states = decoder_layer(hidden_states, causal_mask, position_ids)
        return self.norm(hidden_states)


class Qwen2ForCausalLM(nn.Module):
    """Qwen2 decoder: tokens [B, S] (int64) -> logits [B, S, vocab] (fp32)."""

    def __init__(self, args: Qwen2Args) -> None:
        super().__init__()
        args.validate()
        self.args = args
        self.model = Qwen2Model(args)
        self.lm_head = nn.Linear(args.hidden_size, args.vocab_size, bias=False)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        hidden_states = self.model(input_ids)
        return self.lm_head(hidden_states).float()

    def init_weights(self, seed: int) -> None:
        """Deterministic initialization from ``seed``.

        Linear and embedding weights N(0, 0.02) (Qwen2's ``initializer_range``),
        q/k/v biases N(0, 0.02) rather than zeros and norm weights
        1 + N(0, 0.1) rather than ones, so that every parameter shows in the
        logits the importer is checked against.
        """
        gen_state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        try:
            with torch.no_grad():
                for module in self.modules():
                    if isinstance(module, nn.Linear):
                        nn.init.normal_(module.weight, mean=0.0, std=0.02)
                        if module.bias is not None:
                            nn.init.normal_(module.bias, mean=0.0, std=0.02)
                    elif isinstance(module, nn.Embedding):
                        nn.init.normal_(module.weight, mean=0.0, std=0.02)
                    elif isinstance(module, Qwen2RMSNorm):
                        module.weight.copy_(1.0 + 0.1 * torch.randn_like(module.weight))
        finally:
            torch.random.set_rng_state(gen_state)
