"""Saves a module of extrema and their indices (torch.max / min along a
dim, also of integers and booleans, argmax, argmin, topk (also of
integers), one_hot) and of logsumexp, roll and eye,
traced and scripted, with PyTorch's outputs as the oracle.

usage: make_extrema.py OUT

OUT receives trace.pt, script.pt, x.npy (f32 [2, 3, 4], with ties),
ids.npy and expected/output<i>.npy for each output of forward.
"""

import os
import sys
from typing import List

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_idioms  # noqa: E402


class Extrema(nn.Module):
    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> List[torch.Tensor]:
        # Ties: the first index wins, as in PyTorch.
        tied = torch.clamp(x, -0.3, 0.3)
        values, indices = torch.max(tied, -1)
        low, low_at = x.min(1, keepdim=True)
        top, top_at = torch.topk(x, 3, dim=-1)
        bottom, bottom_at = torch.topk(x, 2, dim=1, largest=False)
        # A row of -inf: logsumexp gives -inf there, not nan.
        masked = x.masked_fill(torch.arange(3).view(1, 3, 1) == 1, float("-inf"))
        return [values, indices, low, low_at, x.argmax(-1), tied.argmin(1),
                x.argmax(), x.max(), top, top_at, bottom, bottom_at,
                F.one_hot(ids, 5), F.one_hot(top_at, 4),
                torch.logsumexp(x * 30.0, -1), torch.logsumexp(masked, dim=-1, keepdim=True),
                torch.logsumexp(x, (0, 2)), torch.roll(x, 1, 1), torch.roll(x, (-1, 5), (2, 1)),
                torch.roll(x, 3), x[0] @ torch.eye(4) + torch.eye(3, 4, dtype=torch.float32),
                # Of integers and booleans (Switch's load-balancing loss).
                torch.max(F.one_hot(ids, 5), dim=-2).values, torch.min(ids, 1)[1],
                ids.max(), ids.min(), torch.max(x > 0.5),
                torch.topk(ids, 2)[0], torch.topk(ids, 2, largest=False)[1]]


if __name__ == "__main__":
    save_idioms(Extrema(), sys.argv[1], np.array([[0, 4, 2], [1, 3, 0]], dtype=np.int64))
