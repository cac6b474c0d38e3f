"""Saves a language model whose feed-forwards are sparse mixtures of
experts dispatched the way Hugging Face's Mixtral and Qwen2-MoE code
writes them, traced, with PyTorch's logits: each expert takes the tokens
routed to it with torch.where(expert_mask[e]) (a number of tokens known
only at run time), computes on their rows and adds them back with
index_add_. Block 2 writes the same with torch.nonzero(as_tuple=True),
index_select, `out[top_x] += ...` (index_put with accumulate) and
Qwen2-MoE's shared expert behind a sigmoid gate.

With --expert-hit, block 1 loops only over the experts some token chose,
as transformers writes Mixtral since 4.54:
`for expert_idx in torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()`
(traced, the loop is unrolled once per expert chosen on the traced batch:
all of them).

usage: make_sparse_moe_lm.py OUT [--expert-hit]

OUT receives model.pt (forward(tokens: int64 [2, 32]) -> logits),
tokens.npy and logits.npy.
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Import", "Inputs"))
from traced_lm import save_traced_lm  # noqa: E402


class Expert(nn.Module):
    """Mixtral's expert: w2(silu(w1(x)) * w3(x))."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MixtralSparseMoe(nn.Module):
    """transformers' MixtralSparseMoeBlock.forward, as it is written there."""

    def __init__(self, dim, experts=4, top_k=2, expert_hit=False):
        super().__init__()
        self.expert_hit = expert_hit
        self.num_experts = experts
        self.top_k = top_k
        self.gate = nn.Linear(dim, experts, bias=False)
        self.experts = nn.ModuleList(Expert(dim, 2 * dim) for _ in range(experts))

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)
        final_hidden_states = torch.zeros((batch_size * sequence_length, hidden_dim),
                                          dtype=hidden_states.dtype, device=hidden_states.device)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        if self.expert_hit:
            expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
            for expert_idx in expert_hit:
                expert_layer = self.experts[expert_idx]
                idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
                current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
                current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
                final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
            return final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        for expert_idx in range(self.num_experts):
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        return final_hidden_states


class SharedExpertMoe(MixtralSparseMoe):
    """Qwen2-MoE's block: a shared expert behind a sigmoid gate beside the
    routed ones; the routed tokens found with torch.nonzero(as_tuple=True),
    taken with index_select and added back with `out[top_x] += ...`."""

    def __init__(self, dim):
        super().__init__(dim, experts=4, top_k=2)
        self.shared_expert = Expert(dim, 2 * dim)
        self.shared_expert_gate = nn.Linear(dim, 1, bias=False)

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        routing_weights = F.softmax(self.gate(hidden_states), dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        out = torch.zeros_like(hidden_states)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        for expert_idx in range(self.num_experts):
            idx, top_x = torch.nonzero(expert_mask[expert_idx], as_tuple=True)
            rows = hidden_states.index_select(0, top_x)
            weight = routing_weights[top_x, idx].unsqueeze(-1)
            out[top_x] += self.experts[expert_idx](rows) * weight
        shared = torch.sigmoid(self.shared_expert_gate(hidden_states)) * self.shared_expert(hidden_states)
        return (out + shared).reshape(batch_size, sequence_length, hidden_dim)


class SparseMoeLM(nn.Module):
    def __init__(self, vocab_size=256, dim=32, expert_hit=False):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim)
        self.norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(2))
        self.moes = nn.ModuleList([MixtralSparseMoe(dim, expert_hit=expert_hit),
                                   SharedExpertMoe(dim)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab_size)

    def forward(self, tokens):
        x = self.embedding(tokens)
        for norm, moe in zip(self.norms, self.moes):
            x = x + moe(norm(x))
        return self.head(self.norm(x))


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(SparseMoeLM(expert_hit="--expert-hit" in sys.argv), sys.argv[1])


if __name__ == "__main__":
    main()
