"""A Gemma style decoder in plain PyTorch, written for TorchScript export.

Written the way Hugging Face's Gemma modeling code writes it, so that the
importer meets its idioms:

* token embeddings scaled by sqrt(hidden_size) through a 0-d tensor made in
  ``forward`` (``torch.tensor(hidden_size ** 0.5, dtype=h.dtype)``);
* RMSNorm written out in fp32 and scaled by ``(1 + weight)`` (weights start
  at zero);
* GeGLU MLP with the tanh GELU: ``down_proj(gelu_tanh(gate_proj(x)) * up_proj(x))``;
* multi-query attention (one KV head shared by all query heads, as Gemma
  2B) with a head_dim that is not hidden_size / heads, ``repeat_kv`` as in
  Llama;
* rotate-half RoPE computed in the graph from an ``inv_freq`` buffer and the
  positions (``inv_freq[None, :, None] @ position_ids[:, None, :]``, then
  ``cos``/``sin``), instead of precomputed tables;
* ``lm_head`` tied to the embedding.

Parameter names (Linear weights stored [out, in]):

    model.embed_tokens.weight                                   [vocab, hidden]
    model.layers.{i}.self_attn.{q,k,v,o}_proj.weight            [heads * head_dim, hidden], ..., [hidden, heads * head_dim]
    model.layers.{i}.mlp.{gate,up}_proj.weight                  [intermediate, hidden]
    model.layers.{i}.mlp.down_proj.weight                       [hidden, intermediate]
    model.layers.{i}.{input_layernorm,post_attention_layernorm}.weight  [hidden]
    model.norm.weight                                           [hidden]
    lm_head.weight                                              tied to model.embed_tokens.weight
"""

import dataclasses
import math
from typing import Dict, Tuple

import torch
import torch.nn.functional as F
from torch import nn


@dataclasses.dataclass(frozen=True)
class GemmaArgs:
    """Hyper-parameters of one Gemma flavor (Hugging Face's ``GemmaConfig`` names)."""

    vocab_size: int = 256000
    hidden_size: int = 2048
    intermediate_size: int = 16384
    num_hidden_layers: int = 18
    num_attention_heads: int = 8
    num_key_value_heads: int = 1
    head_dim: int = 256
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-6

    def validate(self) -> None:
        """Raise ``ValueError`` on an inconsistent combination of arguments."""
        if self.num_attention_heads % self.num_key_value_heads != 0:
            raise ValueError(f"num_attention_heads {self.num_attention_heads} is not a multiple of "
                             f"num_key_value_heads {self.num_key_value_heads}")
        if self.head_dim % 2 != 0:
            raise ValueError(f"head_dim {self.head_dim} must be even for RoPE")


# "tiny" is a test flavor (not a released Gemma size): 2 layers, 4 query heads
# of head_dim 24 (4 * 24 = 96 != hidden_size 80) sharing one KV head.
FLAVORS: Dict[str, GemmaArgs] = {
    "tiny": GemmaArgs(vocab_size=320, hidden_size=80, intermediate_size=192, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=1, head_dim=24),
}


class GemmaRMSNorm(nn.Module):
    """x * rsqrt(mean(x^2) + eps) * (1 + weight), in fp32."""

    __constants__ = ["eps"]

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))

    def _norm(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        output = self._norm(x.float())
        output = output * (1.0 + self.weight.float())
        return output.type_as(x)


class GemmaRotaryEmbedding(nn.Module):
    """cos/sin of the RoPE angles position * inv_freq, computed per call."""

    def __init__(self, dim: int, base: float) -> None:
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """cos, sin [B, S, dim] for position_ids [B, S]."""
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded @ position_ids_expanded).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype=x.dtype), emb.sin().to(dtype=x.dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """[x1, x2] -> [-x2, x1] along the last dimension."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor,
                         sin: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Rotate q, k [B, H, S, D] by cos, sin [B, S, D]."""
    cos = cos.unsqueeze(1)
    sin = sin.unsqueeze(1)
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


class GemmaAttention(nn.Module):
    """Causal multi-query attention without biases."""

    __constants__ = ["num_heads", "head_dim", "num_key_value_heads", "num_key_value_groups"]

    def __init__(self, args: GemmaArgs) -> None:
        super().__init__()
        self.num_heads = args.num_attention_heads
        self.head_dim = args.head_dim
        self.num_key_value_heads = args.num_key_value_heads
        self.num_key_value_groups = self.num_heads // self.num_key_value_heads
        self.q_proj = nn.Linear(args.hidden_size, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(args.hidden_size, self.num_key_value_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(args.hidden_size, self.num_key_value_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, args.hidden_size, bias=False)
        self.rotary_emb = GemmaRotaryEmbedding(self.head_dim, args.rope_theta)

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor,
                position_ids: torch.Tensor) -> torch.Tensor:
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(
            bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(
            bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)

        cos, sin = self.rotary_emb(value_states, position_ids)
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)

        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)

        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        attn_weights = attn_weights + attention_mask
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)

        attn_output = attn_output.transpose(1, 2).contiguous().view(bsz, q_len, -1)
        return self.o_proj(attn_output)


class GemmaMLP(nn.Module):
    """GeGLU: down_proj(gelu_tanh(gate_proj x) * up_proj x)."""

    def __init__(self, args: GemmaArgs) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(args.hidden_size, args.intermediate_size, bias=False)
        self.up_proj = nn.Linear(args.hidden_size, args.intermediate_size, bias=False)
        self.down_proj = nn.Linear(args.intermediate_size, args.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))


class GemmaDecoderLayer(nn.Module):
    """Pre-norm block: h = x + attn(norm(x)); out = h + mlp(norm(h))."""

    def __init__(self, args: GemmaArgs) -> None:
        super().__init__()
        self.self_attn = GemmaAttention(args)
        self.mlp = GemmaMLP(args)
        self.input_layernorm = GemmaRMSNorm(args.hidden_size, eps=args.rms_norm_eps)
        self.post_attention_layernorm = GemmaRMSNorm(args.hidden_size, eps=args.rms_norm_eps)

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


class GemmaModel(nn.Module):
    """Scaled embedding, decoder layers and the final norm."""

    __constants__ = ["hidden_size"]

    def __init__(self, args: GemmaArgs) -> None:
        super().__init__()
        self.hidden_size = args.hidden_size
        self.embed_tokens = nn.Embedding(args.vocab_size, args.hidden_size)
        self.layers = nn.ModuleList([GemmaDecoderLayer(args) for _ in range(args.num_hidden_layers)])
        self.norm = GemmaRMSNorm(args.hidden_size, eps=args.rms_norm_eps)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        seq_length = input_ids.shape[1]
        position_ids = torch.arange(0, seq_length, device=input_ids.device).unsqueeze(0)
        hidden_states = self.embed_tokens(input_ids)
        normalizer = torch.tensor(self.hidden_size ** 0.5, dtype=hidden_states.dtype)
        hidden_states = hidden_states * normalizer
        causal_mask = torch.triu(torch.full((seq_length, seq_length), float("-inf"),
                                            dtype=hidden_states.dtype, device=hidden_states.device), diagonal=1)
        for decoder_layer in self.layers:
            hidden_states = decoder_layer(hidden_states, causal_mask, position_ids)
        return self.norm(hidden_states)


class GemmaForCausalLM(nn.Module):
    """Gemma decoder: tokens [B, S] (int64) -> logits [B, S, vocab] (fp32)."""

    def __init__(self, args: GemmaArgs) -> None:
        super().__init__()
        args.validate()
        self.args = args
        self.model = GemmaModel(args)
        self.lm_head = nn.Linear(args.hidden_size, args.vocab_size, bias=False)
        self.lm_head.weight = self.model.embed_tokens.weight  # tied

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        hidden_states = self.model(input_ids)
        return self.lm_head(hidden_states).float()

    def init_weights(self, seed: int) -> None:
        """Deterministic initialization from ``seed``.

        Linear and embedding weights N(0, 0.02) (Gemma's ``initializer_range``);
        norm weights N(0, 0.1) rather than zeros, so that a dropped norm weight
        would show in the logits the importer is checked against.
        """
        gen_state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        try:
            with torch.no_grad():
                for module in self.modules():
                    if module is self.lm_head:
                        continue  # tied to model.embed_tokens, initialized there
                    if isinstance(module, (nn.Linear, nn.Embedding)):
                        nn.init.normal_(module.weight, mean=0.0, std=0.02)
                    elif isinstance(module, GemmaRMSNorm):
                        module.weight.copy_(0.1 * torch.randn_like(module.weight))
        finally:
            torch.random.set_rng_state(gen_state)
