"""Saves a language model built on scatters, traced, with PyTorch's
logits, for test/TrainStep/scatter.test: a top-2 mixture of experts whose
gates are `zeros.scatter(-1, chosen, weights)` and whose expert mask is
scatter_ of a number; each sequence shuffled by a computed permutation and
put back by index_add and by a scatter_add of whole rows;
`h[tokens == 3] = 0` on the embeddings (index_put_ of a mask), index_fill
of a hidden column, `y[:, ids] += v` (index_put_ at computed ids, each
once: PyTorch's gradient of a repeated write counts it once per repeat),
torch.remainder by a learned period (its gradient -dy * floor(x / p)), and
`//`, `%`, torch.fmod and truncating division of the tokens shifted to
both signs (compiled, as the rounding ops' linalg lowering).

usage: make_scatter_lm.py OUT

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


class ScatterMoE(nn.Module):
    def __init__(self, dim, experts=4, top_k=2):
        super().__init__()
        self.top_k = top_k
        self.router = nn.Linear(dim, experts, bias=False)
        self.up = nn.ModuleList(nn.Linear(dim, 2 * dim) for _ in range(experts))
        self.down = nn.ModuleList(nn.Linear(2 * dim, dim) for _ in range(experts))

    def forward(self, x):
        logits = self.router(x)
        weights, chosen = torch.topk(F.softmax(logits, dim=-1), self.top_k, dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        gates = torch.zeros_like(logits).scatter(-1, chosen, weights)
        mask = torch.zeros_like(logits)
        mask.scatter_(-1, chosen, 1.0)
        out = torch.zeros_like(x)
        for e, (up, down) in enumerate(zip(self.up, self.down)):
            out = out + gates[..., e:e + 1] * down(F.silu(up(x)))
        # The share of each sequence's tokens routed to expert 0 scales its
        # output (per sequence, so that microbatches compute what the batch
        # does).
        share = mask.mean(dim=1, keepdim=True)
        return out * (1.0 + 0.1 * share[..., :1])


class ScatterLM(nn.Module):
    def __init__(self, vocab_size=256, dim=32, layers=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim)
        self.norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(layers))
        self.moes = nn.ModuleList(ScatterMoE(dim) for _ in range(layers))
        self.mix = nn.Linear(dim, dim)
        self.period = nn.Parameter(torch.tensor(1.7))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab_size)

    def forward(self, tokens):
        b, s = tokens.shape
        x = self.embedding(tokens)
        x[tokens == 3] = 0.0
        signed = tokens - 128
        rounded = (signed // 7 + torch.fmod(signed, 5)
                   + torch.div(signed, -3, rounding_mode="trunc") + signed % -6)
        x = x + 0.01 * rounded.float()[..., None]
        for norm, moe in zip(self.norms, self.moes):
            x = x + moe(norm(x))
        # Shuffle each sequence by a permutation the model computes, mix
        # the tokens, and put them back two ways.
        order = (torch.arange(s) * 5) % s
        mixed = self.mix(x[:, order])
        back = torch.zeros_like(x).index_add(1, order, mixed)
        rows = order[None, :, None].expand(b, s, x.shape[2])
        again = torch.zeros_like(x).scatter_add(1, rows, mixed * 0.5)
        x = x + back + again
        x = x.index_fill(-1, torch.tensor([1]), 0.0)
        x = x + 0.1 * torch.remainder(x, self.period)
        y = self.norm(x)
        y[:, (torch.arange(4) * 7 + 3) % s] += 0.25
        return self.head(y)


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(ScatterLM(), sys.argv[1])


if __name__ == "__main__":
    main()
