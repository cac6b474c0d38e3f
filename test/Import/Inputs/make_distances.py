"""Saves a module of distances and the margin, embedding and Poisson losses,
traced and scripted, with PyTorch's outputs, for test/Import/distances.test:
F.pairwise_distance (p 2, 1 with a broadcast row and keepdim, inf),
torch.cdist (p 2 on few rows, p 1 batched, inf; p 2 on more than 25 rows,
which PyTorch computes by a matmul, and the same with
'donot_use_mm_for_euclid_dist'), F.margin_ranking_loss,
hinge_embedding_loss, soft_margin_loss, cosine_embedding_loss ([N, D] and
[D]), triplet_margin_loss (swap, p 1, p 3),
poisson_nll_loss (log_input, full), gaussian_nll_loss, multi_margin_loss
(p 2, margin, class weights, a 1-d input), multilabel_margin_loss
(-1-terminated targets) and multilabel_soft_margin_loss, each with
reductions 'none', 'mean' or 'sum'.

usage: make_distances.py OUT

OUT receives traced.pt and scripted.pt (forward(x: f32 [6, 8], ids: int64
[6, 5]) -> 26 tensors), x.npy, ids.npy and expected/output<k>.npy.
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_traced_and_scripted  # noqa: E402


class Distances(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.points = nn.Parameter(torch.randn(30, 8))
        self.register_buffer("class_weights", torch.rand(8) + 0.5)

    def forward(self, x: torch.Tensor, ids: torch.Tensor):
        y = x.flip(0)
        sign = torch.sign(x[:, 1] - x[:, 2])
        labels = ids[:, 0].clamp(0, 7)
        listed = torch.cat([ids, ids[:, :3]], 1)
        return (
            F.pairwise_distance(x, y),
            F.pairwise_distance(x, x[0] * 0.5, p=1.0, keepdim=True),
            F.pairwise_distance(x, y, p=float("inf")),
            torch.cdist(x, x[:3] * 0.7),
            torch.cdist(x.reshape(2, 3, 8), y.reshape(2, 3, 8), p=1.0),
            torch.cdist(x, y, p=float("inf")),
            torch.cdist(self.points, x),
            torch.cdist(self.points, x, compute_mode="donot_use_mm_for_euclid_dist"),
            F.margin_ranking_loss(x[:, 0], x[:, 3], sign, margin=0.5, reduction="none"),
            F.margin_ranking_loss(x[:, 0], x[:, 3], sign),
            F.hinge_embedding_loss(x, torch.sign(y), margin=2.0, reduction="sum"),
            F.soft_margin_loss(x * 5, torch.sign(y), reduction="none"),
            F.cosine_embedding_loss(x, y, sign, margin=0.2, reduction="none"),
            F.cosine_embedding_loss(x[0], x[1], -x[2, 0].sign(), margin=-0.5),
            F.triplet_margin_loss(x, y, x * 0.3, margin=0.5, p=1.0, swap=True, reduction="none"),
            F.triplet_margin_loss(x, y, x.roll(1, 0)),
            F.triplet_margin_loss(x, y, x.roll(2, 0), p=3.0, reduction="sum"),
            F.poisson_nll_loss(x, y.abs()),
            F.poisson_nll_loss(x.abs(), (ids[:, :1] + 2).float().expand(6, 8),
                               log_input=False, full=True, reduction="none"),
            F.gaussian_nll_loss(x, y, x.abs() + 0.1),
            F.multi_margin_loss(x, labels),
            F.multi_margin_loss(x, labels, p=2, margin=0.7, weight=self.class_weights,
                                reduction="none"),
            F.multi_margin_loss(x[2], labels[3], reduction="sum"),
            F.multilabel_margin_loss(x, listed, reduction="none"),
            F.multilabel_margin_loss(x[1], listed[1]),
            F.multilabel_soft_margin_loss(x, (y > 0).float()),
        )


def main() -> None:
    torch.manual_seed(0)
    ids = torch.randint(-1, 8, (6, 5))
    ids[0, 0] = -1  # a row with no labels
    ids[1] = torch.tensor([4, 0, 6, -1, 2])  # labels after the -1 do not count
    save_traced_and_scripted(Distances(), sys.argv[1], {"x": torch.randn(6, 8), "ids": ids})


if __name__ == "__main__":
    main()
