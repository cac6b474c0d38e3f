"""A small LM whose state_dict has more than its parameters under their
own names, for test/Import/state-dict.test.

usage: make_state_dict_lm.py DIR         writes DIR/model.pt and a batch
                                         DIR/data/{tokens,labels}.npy
       make_state_dict_lm.py load DIR CKPT
                                         loads CKPT (DCP, 1.13 paths) into
                                         the module's state_dict as PyTorch
                                         1.13 does and prints what it got

  - `head.weight` is `embed.weight` (a tied output projection);
  - `mask` is a persistent causal-mask buffer (bool), `scale` a
    non-persistent bfloat16 one (TorchScript keeps both, and drops the
    flag);
  - `rope` is a complex buffer (two arguments in titan: not one entry);
  - `offset` is a plain tensor attribute (not in the state_dict).
"""

import os
import sys

import numpy as np
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
        self.register_buffer("scale", torch.full((8,), 0.5, dtype=torch.bfloat16),
                             persistent=False)
        self.register_buffer("rope", torch.polar(torch.ones(4, 4), torch.rand(4, 4)))
        self.offset = torch.zeros(8)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens) * self.scale + self.offset
        rope = torch.view_as_real(self.rope).flatten(1)[: tokens.shape[1]]
        x = x + rope
        scores = (x @ x.transpose(1, 2)).masked_fill(~self.mask, float("-inf"))
        x = torch.softmax(scores, -1) @ self.proj(x)
        return self.head(x)


def load(directory: str, checkpoint: str) -> None:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "..", "tools", "scripts"))
    import torch113_compat  # noqa: F401
    import torch.distributed._shard.checkpoint as dcp

    state = torch.jit.load(f"{directory}/model.pt").state_dict()
    state.pop("rope")  # complex: not in titan's checkpoints
    dcp.load_state_dict(state, dcp.FileSystemReader(checkpoint), no_dist=True)
    print("loaded", sorted(state))
    print("mask", state["mask"].dtype, state["mask"].int().tolist())
    print("scale", state["scale"].dtype, state["scale"].tolist())


def main() -> None:
    if sys.argv[1] == "load":
        load(sys.argv[2], sys.argv[3])
        return
    torch.manual_seed(0)
    model = TiedLM().eval()
    traced = torch.jit.trace(model, torch.zeros(2, 4, dtype=torch.long))
    traced.save(f"{sys.argv[1]}/model.pt")
    os.makedirs(f"{sys.argv[1]}/data", exist_ok=True)
    tokens = np.random.RandomState(0).randint(0, 16, size=(1, 2, 4))
    np.save(f"{sys.argv[1]}/data/tokens.npy", tokens)
    np.save(f"{sys.argv[1]}/data/labels.npy", np.roll(tokens, -1, axis=2))


if __name__ == "__main__":
    main()
