"""Saves a small Mamba-style language model, traced, with PyTorch's
logits, for test/TrainStep/mamba.test: each block projects the tokens
into two branches, runs a depthwise causal nn.Conv1d (groups = channels,
padding K - 1, the first L outputs kept) and SiLU on one, forms the
selective scan's inputs with a three-operand einsum (mamba-minimal's
'b l d, b l n, b l d -> b l d n'), scans them in parallel (a cumulative
sum of the log-decays, a causal mask of their differences), gates with
the other branch and projects back.

usage: make_mamba_lm.py OUT

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


class MambaBlock(nn.Module):
    def __init__(self, dim: int, inner: int = 32, state: int = 4, kernel: int = 4) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.project_in = nn.Linear(dim, 2 * inner, bias=False)
        self.conv = nn.Conv1d(inner, inner, kernel_size=kernel, groups=inner, padding=kernel - 1)
        self.to_b = nn.Linear(inner, state, bias=False)
        self.to_c = nn.Linear(inner, state, bias=False)
        self.to_dt = nn.Linear(inner, inner)
        self.log_a = nn.Parameter(torch.log(torch.linspace(1.0, 4.0, inner)))
        self.project_out = nn.Linear(inner, dim, bias=False)

    def forward(self, h):
        b, length, _ = h.shape
        x, gate = self.project_in(self.norm(h)).chunk(2, dim=-1)
        x = F.silu(self.conv(x.transpose(1, 2))[..., :length].transpose(1, 2))
        dt = F.softplus(self.to_dt(x))                       # [b, l, d]
        bx = torch.einsum("b l d, b l n, b l d -> b l d n", dt, self.to_b(x), x)
        decay = dt * -torch.exp(self.log_a)                  # [b, l, d], negative
        total = torch.cumsum(decay, dim=1)
        # state[t] = sum_{s <= t} exp(total[t] - total[s]) * bx[s]
        diff = total[:, :, None, :] - total[:, None, :, :]   # [b, t, s, d]
        causal = torch.tril(torch.ones(length, length))[None, :, :, None]
        weights = torch.exp(diff.masked_fill(causal == 0, -1e9))
        state = torch.einsum("btsd,bsdn->btdn", weights, bx)
        y = torch.einsum("btdn,btn->btd", state, self.to_c(x))
        return h + self.project_out(y * F.silu(gate))


class MambaLM(nn.Module):
    def __init__(self, vocab_size: int = 256, dim: int = 32, layers: int = 2) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim)
        self.layers = nn.ModuleList(MambaBlock(dim) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab_size, bias=False)

    def forward(self, tokens):
        h = self.embedding(tokens)
        for layer in self.layers:
            h = layer(h)
        return self.head(self.norm(h))


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(MambaLM(), sys.argv[1])


if __name__ == "__main__":
    main()
