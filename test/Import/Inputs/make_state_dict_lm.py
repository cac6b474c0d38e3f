"""Writes DIR/model.pt: a small LM whose state_dict has more than its
parameters under their own names, for test/Import/state-dict.test.

  - `head.weight` is `embed.weight` (a tied output projection);
  - `mask` is a persistent causal-mask buffer (bool), `scale` a
    non-persistent one (TorchScript keeps both, and drops the flag);
  - `rope` is a complex buffer (two arguments in titan: not one entry);
  - `offset` is a plain tensor attribute (not in the state_dict).
"""

import sys

import torch
from torch import nn


class TiedLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(16, 8)
        self.proj = nn.Linear(8, 8)
        self.head = nn.Linear(8, 16, bias=False)
        self.head.weight = self.embed.weight
        self.register_buffer("mask", torch.ones(4, 4, dtype=torch.bool).tril())
        self.register_buffer("scale", torch.full((8,), 0.5), persistent=False)
        self.register_buffer("rope", torch.polar(torch.ones(4, 4), torch.rand(4, 4)))
        self.offset = torch.zeros(8)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens) * self.scale + self.offset
        rope = torch.view_as_real(self.rope).flatten(1)[: tokens.shape[1]]
        x = x + rope
        scores = (x @ x.transpose(1, 2)).masked_fill(~self.mask, float("-inf"))
        x = torch.softmax(scores, -1) @ self.proj(x)
        return self.head(x)


def main() -> None:
    torch.manual_seed(0)
    model = TiedLM().eval()
    traced = torch.jit.trace(model, torch.zeros(2, 4, dtype=torch.long))
    traced.save(f"{sys.argv[1]}/model.pt")


if __name__ == "__main__":
    main()
