"""Saves a language model trained with metric-learning losses beside its
cross-entropy, traced, with PyTorch's logits, for
test/TrainStep/metric-losses.test: forward returns the logits and one
scalar loss, the sum of a triplet margin loss (each position's hidden
state against the next one and a shifted one, with swap), the mean of a
torch.cdist between the two sequences' states (more than 25 rows: the
matmul form), a cosine embedding loss, a margin ranking loss between two
scores, a hinge embedding loss, a soft margin loss and a multi-margin
loss over the hidden features; the training step adds it to the
cross-entropy.

usage: make_metric_lm.py OUT

OUT receives model.pt (forward(tokens: int64 [2, 32]) -> (logits, loss)),
tokens.npy and logits.npy.
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "Import", "Inputs"))
from traced_lm import save_traced_lm  # noqa: E402


class MetricLM(nn.Module):
    def __init__(self, vocab_size: int = 256, dim: int = 32) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim)
        self.mix = nn.Linear(dim, dim)
        self.score = nn.Linear(dim, 2)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab_size)

    def forward(self, tokens: torch.Tensor):
        x = self.embedding(tokens)
        h = x + torch.tanh(self.mix(x))
        anchor, positive = h[:, :-1].reshape(-1, h.shape[-1]), h[:, 1:].reshape(-1, h.shape[-1])
        negative = anchor.roll(7, 0)
        sign = torch.where(tokens[:, :-1].reshape(-1) % 2 == 0, 1.0, -1.0)
        scores = self.score(anchor)
        loss = F.triplet_margin_loss(anchor, positive, negative, margin=0.5, swap=True)
        loss = loss + 0.01 * torch.cdist(h[0], h[1]).mean()
        loss = loss + F.cosine_embedding_loss(anchor, positive, sign, margin=0.1)
        loss = loss + F.margin_ranking_loss(scores[:, 0], scores[:, 1], sign, margin=0.2)
        loss = loss + F.hinge_embedding_loss(scores[:, 0], sign)
        loss = loss + F.soft_margin_loss(scores[:, 1], sign)
        loss = loss + F.multi_margin_loss(anchor, tokens[:, :-1].reshape(-1) % 32, p=2)
        return self.head(self.norm(h)), loss


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(MetricLM(), sys.argv[1])


if __name__ == "__main__":
    main()
