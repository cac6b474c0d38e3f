"""Saves a language model whose feed-forwards are top-2 mixtures of
experts routed the way Mixtral's and Switch's code writes it, traced, with
PyTorch's logits: router softmax, torch.topk of the probabilities, the
top-k weights renormalized, F.one_hot of the chosen experts, each expert
computed densely for every token and weighted by its gate (0 where it was
not chosen), a load-balancing statistic from the argmax of the router
logits, the router's z-loss (torch.logsumexp) and the shares of the
chosen experts from torch.histc / torch.bincount folded into the logits
scale, and a token shift by torch.roll.

usage: make_moe_lm.py OUT [--auxiliary-loss]

OUT receives model.pt (forward(tokens: int64 [2, 32]) -> logits; with
--auxiliary-loss -> (logits, the routing statistics as a scalar loss)),
tokens.npy and logits.npy.
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Import", "Inputs"))
from traced_lm import save_traced_lm  # noqa: E402


class MoE(nn.Module):
    def __init__(self, dim, experts=4, top_k=2):
        super().__init__()
        self.top_k = top_k
        self.num_experts = experts
        self.router = nn.Linear(dim, experts, bias=False)
        self.up = nn.ModuleList(nn.Linear(dim, 2 * dim) for _ in range(experts))
        self.down = nn.ModuleList(nn.Linear(2 * dim, dim) for _ in range(experts))

    def forward(self, x):
        logits = self.router(x)
        probs = F.softmax(logits, dim=-1)
        weights, chosen = torch.topk(probs, self.top_k, dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        # [batch, seq, top_k, experts] -> the gate of every expert.
        gates = (F.one_hot(chosen, self.num_experts).to(x.dtype) * weights.unsqueeze(-1)).sum(-2)
        out = torch.zeros_like(x)
        for e in range(self.num_experts):
            hidden = F.silu(self.up[e](x))
            out = out + gates[..., e:e + 1] * self.down[e](hidden)
        # The fraction of tokens whose first choice is expert 0 (no
        # gradient), and the router's z-loss.
        first = logits.argmax(-1)
        share = (first == 0).to(x.dtype).mean()
        z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
        # The tokens per expert as torchtitan counts them (torch.histc of
        # the chosen ids; no gradient) and the gates each expert received
        # (torch.bincount weighted by the top-k weights, which PyTorch does
        # not differentiate), as shares of the batch, and the mean router
        # probabilities, each weighted by a cost per expert: means over the
        # tokens, so that microbatches (pipeline parallelism) average to
        # the batch's value.
        chosen_ids = chosen.reshape(-1)
        tokens = chosen_ids.shape[0]
        cost = torch.arange(self.num_experts, dtype=x.dtype) / self.num_experts
        tokens_per_expert = torch.histc(chosen_ids.float(), bins=self.num_experts,
                                        min=0, max=self.num_experts)
        gate_mass = torch.bincount(chosen_ids, weights=weights.detach().reshape(-1),
                                   minlength=self.num_experts)
        mean_probs = probs.reshape(-1, self.num_experts).mean(0)
        balance = ((tokens_per_expert + gate_mass) / tokens + mean_probs) * cost
        return out, share + 0.01 * z_loss + 0.1 * balance.sum()


class MoELM(nn.Module):
    """With `auxiliary_loss`, forward returns (logits, loss): the routing
    statistics summed into a loss beside the logits instead of scaling
    them."""

    def __init__(self, vocab_size=256, dim=32, layers=2, auxiliary_loss=False):
        super().__init__()
        self.auxiliary_loss = auxiliary_loss
        self.embedding = nn.Embedding(vocab_size, dim)
        self.norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(layers))
        self.moes = nn.ModuleList(MoE(dim) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab_size)

    def forward(self, tokens):
        x = self.embedding(tokens)
        x = x + 0.5 * torch.roll(x, 1, 1)
        scale = 1.0
        for norm, moe in zip(self.norms, self.moes):
            update, share = moe(norm(x))
            x = x + update
            scale = scale + 0.1 * share
        if self.auxiliary_loss:
            return self.head(self.norm(x)), scale - 1.0
        return self.head(self.norm(x)) * scale


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(MoELM(auxiliary_loss="--auxiliary-loss" in sys.argv), sys.argv[1])


if __name__ == "__main__":
    main()
