"""Saves a module that computes F.cross_entropy in the forms models use
inside forward, traced and scripted, with PyTorch's outputs, for
test/Import/losses.test: the mean and the sum, class weights, label
smoothing, both together, an ignore_index that some labels hold, logits
[N, C, T] with the classes in dim 1, every label ignored, and reduction
'none' (per label; 0 where ignored).

usage: make_losses.py OUT

OUT receives traced.pt and scripted.pt (forward(x: f32 [4, 6, 10],
ids: int64 [4, 6]) -> 10 scalars and 3 tensors of losses), x.npy, ids.npy and
expected/output<k>.npy; OUT/more/ the same of MoreLosses: the other losses
of torch.nn.functional (23 outputs).
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_traced_and_scripted  # noqa: E402


class Losses(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(10))
        self.register_buffer("class_weights", torch.rand(10) + 0.5)

    def forward(self, x: torch.Tensor, ids: torch.Tensor):
        logits = (x * self.w).reshape(24, 10)
        labels = ids.reshape(24)
        weights = self.class_weights
        masked = torch.where(labels % 3 == 0, torch.full_like(labels, -1), labels)
        return (
            F.cross_entropy(logits, labels, weight=weights),
            F.cross_entropy(logits, labels, weight=weights, reduction="sum"),
            F.cross_entropy(logits, labels, label_smoothing=0.1),
            F.cross_entropy(logits, labels, label_smoothing=0.2, reduction="sum"),
            F.cross_entropy(logits, masked, ignore_index=-1, label_smoothing=0.1),
            F.cross_entropy(logits, masked, weight=weights, ignore_index=-1,
                            label_smoothing=0.3),
            F.cross_entropy(logits, masked, weight=weights, ignore_index=-1,
                            reduction="sum"),
            F.cross_entropy((x * self.w).transpose(1, 2), ids, weight=weights,
                            label_smoothing=0.05),
            F.cross_entropy(logits, labels, label_smoothing=1.0),
            F.cross_entropy(logits, torch.full_like(labels, -1), ignore_index=-1,
                            weight=weights, reduction="sum", label_smoothing=0.1),
            F.cross_entropy(logits, masked, ignore_index=-1, reduction="none"),
            F.cross_entropy(logits, masked, weight=weights, ignore_index=-1,
                            label_smoothing=0.2, reduction="none"),
            F.cross_entropy((x * self.w).transpose(1, 2), ids, reduction="none"),
        )


class MoreLosses(nn.Module):
    """The other losses of torch.nn.functional, and the shape ops their
    models use (pixel and channel shuffles, broadcast_tensors)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(10))
        self.register_buffer("class_weights", torch.rand(10) + 0.5)

    def forward(self, x: torch.Tensor, ids: torch.Tensor):
        a = x * self.w
        b = x.flip(0)
        weights = self.class_weights
        logits = a.reshape(24, 10)
        # Label 0 names a class and is the ignored one (a padding id).
        padded = torch.where(ids % 4 == 0, torch.zeros_like(ids), ids)
        log_probabilities = F.log_softmax(a.transpose(1, 2), dim=1)
        soft = torch.sigmoid(b)
        return (
            F.cross_entropy(logits, padded.reshape(24), ignore_index=0,
                            reduction="none"),
            F.cross_entropy(a.transpose(1, 2), padded, weight=weights,
                            ignore_index=0),
            F.nll_loss(F.log_softmax(logits, dim=-1), ids.reshape(24)),
            F.nll_loss(log_probabilities, padded, weight=weights, ignore_index=0),
            F.nll_loss(log_probabilities, padded, ignore_index=0, reduction="none"),
            F.nll_loss(log_probabilities, ids, weight=weights, reduction="sum"),
            F.mse_loss(a, b),
            F.mse_loss(a, b[:, :1], reduction="sum"),
            F.l1_loss(a, b, reduction="none"),
            F.smooth_l1_loss(a, b, beta=0.5),
            F.smooth_l1_loss(a, b, beta=0.0, reduction="sum"),
            F.huber_loss(a, b, delta=0.7, reduction="none"),
            # Probabilities of exactly 0 and 1: the logs clamp at -100.
            F.binary_cross_entropy(
                torch.where(b > 1.2, torch.ones_like(a),
                            torch.where(b < -1.2, torch.zeros_like(a),
                                        torch.sigmoid(a))),
                (a > 0).float(), reduction="sum"),
            F.binary_cross_entropy(torch.sigmoid(a), soft),
            F.binary_cross_entropy_with_logits(a * 30, soft, weight=weights,
                                               pos_weight=weights * 2,
                                               reduction="none"),
            F.binary_cross_entropy_with_logits(a, (b > 0).float()),
            F.kl_div(F.log_softmax(a, -1), F.softmax(b, -1), reduction="batchmean"),
            F.kl_div(F.log_softmax(a, -1), torch.relu(b) / 4, reduction="sum"),
            F.kl_div(F.log_softmax(a, -1), F.log_softmax(b, -1), reduction="none",
                     log_target=True),
            F.pixel_shuffle(a.reshape(4, 4, 3, 5), 2),
            F.pixel_unshuffle(a.reshape(4, 1, 6, 10), 2),
            F.channel_shuffle(a.reshape(4, 6, 2, 5), 3),
            torch.broadcast_tensors(a, b[:, :1])[1],
        )


def main() -> None:
    torch.manual_seed(0)
    module = Losses()
    inputs = {"x": torch.randn(4, 6, 10), "ids": torch.randint(0, 10, (4, 6))}
    save_traced_and_scripted(module, sys.argv[1], inputs)
    save_traced_and_scripted(MoreLosses(), os.path.join(sys.argv[1], "more"), inputs)

if __name__ == "__main__":
    main()
