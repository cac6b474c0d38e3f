"""Saves a small language model whose position ids depend on the tokens,
as OPT's do (positions from the cumulative sum of the padding mask, offset
by 2), traced.

usage: make_computed_positions_lm.py OUT [--shift K]

OUT receives model.pt (forward(tokens: int64 [batch, seq]) -> logits), the
batch it was traced on (tokens.npy) and PyTorch's logits (logits.npy). The
positions index a learned table (pos.weight) and a buffer (position_scale),
each of max_seq + 2 = 34 rows: at a sequence longer than 32 they reach past
both, which titan cannot see at compile time. --shift K subtracts K from
the positions of padding tokens (id 0; the traced batch has none): with K
> 1 they look up negative rows.
"""

import os
import sys

import torch
from torch import nn

# The shared tracing of the importer's tests (test/Import/Inputs).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Import", "Inputs"))
from traced_lm import save_traced_lm  # noqa: E402


class ComputedPositionsLM(nn.Module):
    def __init__(self, vocab_size=256, dim=16, max_seq=32, pad_id=0, shift=0):
        super().__init__()
        self.pad_id = pad_id
        self.shift = shift
        self.embed = nn.Embedding(vocab_size, dim)
        self.pos = nn.Embedding(max_seq + 2, dim)
        self.register_buffer("position_scale",
                             1 + torch.rand(max_seq + 2, 1, generator=torch.Generator().manual_seed(3)))
        self.head = nn.Linear(dim, vocab_size)

    def forward(self, tokens):
        # OPT: positions count the tokens that are not padding, from 2;
        # padding takes position 1.
        mask = (tokens != self.pad_id).long()
        positions = torch.cumsum(mask, dim=1) * mask + 1 - self.shift * (1 - mask)
        x = (self.embed(tokens) + self.pos(positions)) * self.position_scale[positions]
        return self.head(torch.tanh(x))


def main() -> None:
    torch.manual_seed(0)
    shift = int(sys.argv[sys.argv.index("--shift") + 1]) if "--shift" in sys.argv else 0
    save_traced_lm(ComputedPositionsLM(shift=shift), sys.argv[1])


if __name__ == "__main__":
    main()
