"""A Phi-2 / GPT-J style decoder in plain PyTorch, written for TorchScript export.

Written the way Hugging Face's Phi modeling code writes it, so that the
importer meets its idioms:

* parallel attention and MLP: one LayerNorm feeds both branches and the
  block returns ``attn + mlp + residual`` (GPT-J's layout);
* partial rotary embedding: only the first ``partial_rotary_factor`` of each
  head's dimensions is rotated (``q[..., :rotary_dim]``), the rest passes
  through and is concatenated back;
* rotate-half RoPE from ``cos_cached`` / ``sin_cached`` buffers, sliced to
  the sequence and indexed by ``position_ids``;
* the "new" GELU written out (``0.5 * x * (1 + tanh(sqrt(2/pi) * (x +
  0.044715 * x^3)))``, Hugging Face's ``NewGELUActivation``);
* biases on every Linear layer, ``lm_head`` included (untied), LayerNorm
  with bias, dropout modules at p = 0, attention scores in fp32.

Parameter names (Linear weights stored [out, in]):

    model.embed_tokens.weight                                   [vocab, hidden]
    model.layers.{i}.input_layernorm.{weight,bias}              [hidden]
    model.layers.{i}.self_attn.{q,k,v}_proj.{weight,bias}       [hidden, hidden], [hidden]
    model.layers.{i}.self_attn.dense.{weight,bias}              [hidden, hidden], [hidden]
    model.layers.{i}.mlp.fc1.{weight,bias}                      [intermediate, hidden], [intermediate]
    model.layers.{i}.mlp.fc2.{weight,bias}                      [hidden, intermediate], [hidden]
    model.final_layernorm.{weight,bias}                         [hidden]
    lm_head.{weight,bias}                                       [vocab, hidden], [vocab]
"""

import dataclasses
import math
from typing import Dict, Tuple

import torch
import torch.nn.functional as F
from torch import nn


@dataclasses.dataclass(frozen=True)
class PhiArgs:
    """Hyper-parameters of one Phi flavor (Hugging Face's ``PhiConfig`` names)."""

    vocab_size: int = 51200
    hidden_size: int = 2560
    intermediate_size: int = 10240
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    max_position_embeddings: int = 2048
    rope_theta: float = 10000.0
    partial_rotary_factor: float = 0.4
    layer_norm_eps: float = 1e-5
    dropout: float = 0.0

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def rotary_dim(self) -> int:
        return int(self.partial_rotary_factor * self.head_dim)

    def validate(self) -> None:
        """Raise ``ValueError`` on an inconsistent combination of arguments."""
        if self.hidden_size % self.num_attention_heads != 0:
            raise ValueError(f"hidden_size {self.hidden_size} is not divisible by "
                             f"num_attention_heads {self.num_attention_heads}")
        if self.rotary_dim % 2 != 0 or not 0 < self.rotary_dim <= self.head_dim:
            raise ValueError(f"rotary_dim {self.rotary_dim} must be even and in (0, head_dim {self.head_dim}]")


# "tiny" is a test flavor (not a released Phi size): 2 layers, 4 heads of
# head_dim 16 whose first 8 dimensions are rotated.
FLAVORS: Dict[str, PhiArgs] = {
    "tiny": PhiArgs(vocab_size=256, hidden_size=64, intermediate_size=256, num_hidden_layers=2,
                    num_attention_heads=4, max_position_embeddings=64, partial_rotary_factor=0.5),
}


class NewGELUActivation(nn.Module):
    """The tanh approximation of GELU, written out (GPT-2's ``gelu_new``)."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))


class PhiRotaryEmbedding(nn.Module):
    """cos/sin tables of rotate-half RoPE over the rotary dims, [max_positions, dim] each."""

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
    """Rotate q, k [B, H, S, rotary_dim] by the table rows of ``position_ids`` [B, S]."""
    cos = cos[position_ids].unsqueeze(1)
    sin = sin[position_ids].unsqueeze(1)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


class PhiAttention(nn.Module):
    """Causal multi-head attention with partial rotary embedding."""

    __constants__ = ["num_heads", "head_dim", "hidden_size", "rotary_dim"]

    def __init__(self, args: PhiArgs) -> None:
        super().__init__()
        self.hidden_size = args.hidden_size
        self.num_heads = args.num_attention_heads
        self.head_dim = args.head_dim
        self.rotary_dim = args.rotary_dim
        self.q_proj = nn.Linear(self.hidden_size, self.num_heads * self.head_dim, bias=True)
        self.k_proj = nn.Linear(self.hidden_size, self.num_heads * self.head_dim, bias=True)
        self.v_proj = nn.Linear(self.hidden_size, self.num_heads * self.head_dim, bias=True)
        self.dense = nn.Linear(self.num_heads * self.head_dim, self.hidden_size, bias=True)
        self.rotary_emb = PhiRotaryEmbedding(self.rotary_dim, args.max_position_embeddings, args.rope_theta)
        self.attention_dropout = nn.Dropout(args.dropout)

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor,
                position_ids: torch.Tensor) -> torch.Tensor:
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states)
        key_states = self.k_proj(hidden_states)
        value_states = self.v_proj(hidden_states)

        query_states = query_states.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = key_states.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        value_states = value_states.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)

        cos, sin = self.rotary_emb(value_states, seq_len=q_len)
        query_rot, query_pass = query_states[..., : self.rotary_dim], query_states[..., self.rotary_dim:]
        key_rot, key_pass = key_states[..., : self.rotary_dim], key_states[..., self.rotary_dim:]
        query_rot, key_rot = apply_rotary_pos_emb(query_rot, key_rot, cos, sin, position_ids)
        query_states = torch.cat((query_rot, query_pass), dim=-1)
        key_states = torch.cat((key_rot, key_pass), dim=-1)

        attn_weights = torch.matmul(
            query_states.to(torch.float32), key_states.to(torch.float32).transpose(2, 3)) / math.sqrt(self.head_dim)
        attn_weights = attn_weights + attention_mask
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(value_states.dtype)
        attn_weights = self.attention_dropout(attn_weights)
        attn_output = torch.matmul(attn_weights, value_states)

        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, self.hidden_size)
        return self.dense(attn_output)


class PhiMLP(nn.Module):
    """fc2(gelu_new(fc1 x))."""

    def __init__(self, args: PhiArgs) -> None:
        super().__init__()
        self.activation_fn = NewGELUActivation()
        self.fc1 = nn.Linear(args.hidden_size, args.intermediate_size)
        self.fc2 = nn.Linear(args.intermediate_size, args.hidden_size)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.activation_fn(self.fc1(hidden_states)))


class PhiDecoderLayer(nn.Module):
    """Parallel block: out = x + attn(ln(x)) + mlp(ln(x))."""

    def __init__(self, args: PhiArgs) -> None:
        super().__init__()
        self.self_attn = PhiAttention(args)
        self.mlp = PhiMLP(args)
        self.input_layernorm = nn.LayerNorm(args.hidden_size, eps=args.layer_norm_eps)
        self.resid_dropout = nn.Dropout(args.dropout)

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor,
                position_ids: torch.Tensor) -> torch.Tensor:
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        attn_outputs = self.resid_dropout(self.self_attn(hidden_states, attention_mask, position_ids))
        feed_forward_hidden_states = self.resid_dropout(self.mlp(hidden_states))
        return attn_outputs + feed_forward_hidden_states + residual


class PhiModel(nn.Module):
    """Embedding, decoder layers and the final LayerNorm."""

    def __init__(self, args: PhiArgs) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(args.vocab_size, args.hidden_size)
        self.embed_dropout = nn.Dropout(args.dropout)
        self.layers = nn.ModuleList([PhiDecoderLayer(args) for _ in range(args.num_hidden_layers)])
        self.final_layernorm = nn.LayerNorm(args.hidden_size, eps=args.layer_norm_eps)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        seq_length = input_ids.shape[1]
        position_ids = torch.arange(0, seq_length, dtype=torch.long, device=input_ids.device).unsqueeze(0)
        hidden_states = self.embed_dropout(self.embed_tokens(input_ids))
        causal_mask = torch.full((seq_length, seq_length), float("-inf"), device=input_ids.device).triu(1)
        for decoder_layer in self.layers:
            hidden_states = decoder_layer(hidden_states, causal_mask, position_ids)
        return self.final_layernorm(hidden_states)


class PhiForCausalLM(nn.Module):
    """Phi decoder: tokens [B, S] (int64) -> logits [B, S, vocab] (fp32)."""

    def __init__(self, args: PhiArgs) -> None:
        super().__init__()
        args.validate()
        self.args = args
        self.model = PhiModel(args)
        self.lm_head = nn.Linear(args.hidden_size, args.vocab_size, bias=True)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.lm_head(self.model(input_ids)).float()

    def init_weights(self, seed: int) -> None:
        """Deterministic initialization from ``seed``.

        Linear and embedding weights N(0, 0.02) (Phi's ``initializer_range``);
        biases N(0, 0.02) and LayerNorm weights 1 + N(0, 0.1) rather than
        (1, 0), so that every parameter shows in the logits the importer is
        checked against.
        """
        gen_state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        try:
            with torch.no_grad():
                for module in self.modules():
                    if isinstance(module, (nn.Linear, nn.Embedding)):
                        nn.init.normal_(module.weight, mean=0.0, std=0.02)
                    elif isinstance(module, nn.LayerNorm):
                        module.weight.copy_(1.0 + 0.1 * torch.randn_like(module.weight))
                    if isinstance(module, (nn.Linear, nn.LayerNorm)) and module.bias is not None:
                        nn.init.normal_(module.bias, mean=0.0, std=0.02)
        finally:
            torch.random.set_rng_state(gen_state)
