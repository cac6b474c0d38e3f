"""Saves a module that selects rows or elements by boolean masks and
reduces them, for test/Import/masked-rows.test: x[mask].sum() / .mean()
(a mask of every dim, and of the leading dims, which selects rows), a
mean over the selected rows per feature, a sum that keeps them and a sum
after it, torch.masked_select (the mask broadcast against x), and a
masked mean squared error, `((pred - target)[mask] ** 2).mean()`, as
masked-prediction losses (MAE's, masked language models') write it;
cross_entropy (means, sum, per row, label smoothing) and nll_loss of the
selected rows and labels.

usage: make_masked_rows.py OUT

OUT receives traced.pt and scripted.pt (forward(x: f32 [2, 8, 16],
ids: i64 [2, 8]) -> tensors), their inputs as .npy and
expected/output<k>.npy.
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_traced_and_scripted  # noqa: E402


class MaskedRows(nn.Module):
    def forward(self, x: torch.Tensor, ids: torch.Tensor):
        keep = ids > 10
        labels = ids % 16
        rows = x[keep]
        target = torch.tanh(x)
        return (
            x[x > 0].sum(), x[x > 0.5].mean(), rows.mean(), rows.mean(0),
            rows.sum(-1).sum(), (rows * 2.0 + 1.0).sum(0),
            torch.masked_select(x, x < -0.5).mean(),
            torch.masked_select(x, keep.unsqueeze(-1)).sum(),
            ((x - target)[keep] ** 2).mean(),
            x[ids % 3 == 0].mean(-1).sum(),
            # Class losses of the selected rows.
            F.cross_entropy(rows, labels[keep]),
            F.cross_entropy(rows, labels[keep], reduction="sum"),
            F.cross_entropy(rows, labels[keep], reduction="none").mean(),
            F.cross_entropy(rows, labels[keep], label_smoothing=0.1),
            F.nll_loss(F.log_softmax(rows, -1), labels[keep], ignore_index=3),
        )


def main() -> None:
    torch.manual_seed(0)
    save_traced_and_scripted(MaskedRows().eval(), sys.argv[1], {
        "x": torch.randn(2, 8, 16), "ids": torch.randint(0, 20, (2, 8))})


if __name__ == "__main__":
    main()
