"""Saves modules that index with constant and computed indices, for
test/Import/index-bounds.test.

usage: make_index_bounds.py OUT

OUT receives trace.pt and script.pt of NegativeIndices (x f32 [2, 3, 4],
ids i64 [2, 3]; expected/output<i>.npy: PyTorch's outputs), and traces
that the importer refuses: rope_past_table.pt (an HF-style RoPE table
sliced to the sequence and indexed by positions past its 8 rows),
position_before_table.pt (scripted) and where_one_argument.pt (returns
the rows torch.where(condition) selects).
"""

import os
import sys
from typing import List

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_idioms  # noqa: E402


class NegativeIndices(nn.Module):
    """Constant indices counting from the end, as tensor[...] takes them:
    Falcon's multi-query split `fused[..., [-2], :]`, and a buffer's last
    row `table[[-1]]`."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("table", torch.arange(20, dtype=torch.float32).view(5, 4))

    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> List[torch.Tensor]:
        return [x[:, [-2], :], x[:, :, [-1, 0, -3]], self.table[[-1]], x[:, [1, -1]]]


class RopePastTable(nn.Module):
    """cos = cos_cached[:seq_len]; cos[position_ids] (Hugging Face's Llama
    and Mistral rotary), with 8 rows for a longer input."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cos_cached", torch.rand(8, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        length = x.shape[1]
        positions = torch.arange(length).unsqueeze(0)
        return x * self.cos_cached[:length][positions]


class PositionBeforeTable(nn.Module):
    """Learned positions looked up at arange(T) - 1 (scripted: PyTorch
    would fail tracing it at the lookup of -1)."""

    def __init__(self) -> None:
        super().__init__()
        self.positions = nn.Embedding(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.positions(torch.arange(x.shape[1]) - 1)


class WhereOneArgument(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[torch.where(x > 0)[0]]


def main() -> None:
    out = sys.argv[1]
    save_idioms(NegativeIndices(), out, np.zeros((2, 3), dtype=np.int64))
    x = torch.rand(2, 8, 4)
    for name, module in [("rope_past_table", RopePastTable()),
                         ("where_one_argument", WhereOneArgument())]:
        torch.jit.save(torch.jit.trace(module.eval(), (x,), check_trace=False),
                       os.path.join(out, f"{name}.pt"))
    torch.jit.save(torch.jit.script(PositionBeforeTable().eval()),
                   os.path.join(out, "position_before_table.pt"))


if __name__ == "__main__":
    main()
