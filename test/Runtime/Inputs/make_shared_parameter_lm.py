"""Saves a language model whose blocks share a parameter, traced, for
test/Runtime/pipeline-shared-parameter.test: T5's relative-position table
that block 0 owns and whose bias every later block reads (`owned`), a
model-level table every block reads (`root`, DeBERTa's rel_embeddings),
read directly or through a value computed from it alone, and an
embedding tied to the output projection with a bias of the root module
that only the last stage reads (`tied`, Hugging Face's MLM heads and
DeBERTa: the ranks exchanged the tied gradient and the gradient norm in
opposite orders and waited for each other).

usage: make_shared_parameter_lm.py OUT {owned,root,tied}

OUT receives model.pt (forward(tokens: int64 [4, 32]) -> logits).
"""

import os
import sys
import warnings

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int, owns_table: bool) -> None:
        super().__init__()
        self.linear = nn.Linear(dim, dim)
        self.table = nn.Parameter(torch.randn(dim) * 0.1) if owns_table else None

    def forward(self, h, shared):
        if self.table is not None:
            shared = self.table * 2.0
        h = h + F.gelu(self.linear(h))
        return (h if shared is None else h + shared), shared


class SharedParameterLM(nn.Module):
    def __init__(self, mode: str, vocab_size: int = 256, dim: int = 32, layers: int = 4) -> None:
        super().__init__()
        self.mode = mode
        self.embedding = nn.Embedding(vocab_size, dim)
        self.rel = nn.Parameter(torch.randn(dim) * 0.1) if mode == "root" else None
        self.layers = nn.ModuleList(Block(dim, mode == "owned" and i == 0) for i in range(layers))
        self.head = nn.Linear(dim, vocab_size, bias=False)
        if mode == "tied":
            self.head.weight = self.embedding.weight
            self.bias = nn.Parameter(torch.randn(vocab_size) * 0.1)

    def forward(self, tokens):
        h = self.embedding(tokens)
        shared = self.rel if self.rel is not None else None
        for i, layer in enumerate(self.layers):
            # The root table reaches odd blocks through a value computed
            # from it, even blocks directly.
            if self.rel is not None and i % 2 == 1:
                shared = self.rel * 0.5
            elif self.rel is not None:
                shared = self.rel
            h, shared = layer(h, shared)
        if self.mode == "tied":
            return self.head(h) + self.bias
        return self.head(h)


def main() -> None:
    warnings.filterwarnings("ignore")
    out, mode = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    tokens = torch.randint(0, 256, (4, 32), generator=torch.Generator().manual_seed(1))
    model = SharedParameterLM(mode).eval()
    torch.jit.trace(model, tokens, check_trace=False).save(os.path.join(out, "model.pt"))


if __name__ == "__main__":
    main()
