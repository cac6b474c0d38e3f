"""Saves modules whose scripted code asks questions a traced graph never
does, for test/Import/scripted-modules.test: nn.MultiheadAttention across
two sequences (`query is not key`, its fast-path checks: is_nested,
autocast, is_cuda, 'cpu' in str(device), requires_grad, a list built by
a comprehension), nn.TransformerDecoderLayer, slices by a negated module
attribute (`x[:, -self.k:]`, `x[:, :-(n // 2)]`), torch.roll by negated
shifts, `is` of two different tensors, argmax of token ids (CLIP's
pooling at the end-of-text token), item() of a constant and of a
one-element buffer (GPT-NeoX's `alpha=(1.0 / self.norm_factor).item()`).

usage: make_scripted_modules.py OUT

OUT receives scripted.pt (forward(x: f32 [2, 4, 8], memory: f32 [2, 6, 8],
ids: int64 [2, 4]) -> tensors), x.npy, memory.npy, ids.npy and
expected/output<k>.npy.
"""

import os
import sys

import numpy as np
import torch
from torch import nn


class ScriptedModules(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cross = nn.MultiheadAttention(8, 2, batch_first=True)
        self.decoder = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
        self.k = 2
        self.shift = 1
        self.tag = "abcd"
        # GPT-NeoX's scale, a non-persistent buffer read through item().
        self.register_buffer("norm_factor", torch.sqrt(torch.tensor(4, dtype=torch.float32)),
                             persistent=False)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, ids: torch.Tensor):
        n = x.size(1)
        same = x.sum() if x is memory else x.mean()
        other = x.sum() if x is not memory else x.mean()
        pooled = x[torch.arange(x.shape[0]), ids.argmax(dim=-1)]
        return (
            self.cross(x, memory, memory, need_weights=False)[0],
            self.decoder(x, memory),
            x[:, -self.k:], x[:, : -(n // 2)],
            torch.roll(x, shifts=(-self.shift, -2 * self.shift), dims=(1, 2)),
            same, other, pooled, ids.argmin(),
            x * torch.tensor(0.5).item(),
            # str.find with its default end (the whole string).
            x * self.tag.find("d") + self.tag.find("c", -2),
            torch.baddbmm(x[:, :, :4], x, x.transpose(1, 2), beta=1.0,
                          alpha=(torch.tensor(1.0, dtype=self.norm_factor.dtype) / self.norm_factor).item()),
        )


def main() -> None:
    out = sys.argv[1]
    torch.manual_seed(0)
    module = torch.jit.script(ScriptedModules().eval())
    inputs = {"x": torch.randn(2, 4, 8), "memory": torch.randn(2, 6, 8),
              "ids": torch.tensor([[3, 9, 1, 9], [7, 2, 2, 0]])}
    os.makedirs(os.path.join(out, "expected"), exist_ok=True)
    for name, value in inputs.items():
        np.save(os.path.join(out, name + ".npy"), value.numpy())
    with torch.no_grad():
        for k, output in enumerate(module(*inputs.values())):
            np.save(os.path.join(out, "expected", "output%d.npy" % k), output.numpy())
    module.save(os.path.join(out, "scripted.pt"))


if __name__ == "__main__":
    main()
