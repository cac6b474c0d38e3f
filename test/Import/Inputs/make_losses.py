"""Saves a module that computes F.cross_entropy in the forms models use
inside forward, traced and scripted, with PyTorch's outputs, for
test/Import/losses.test: the mean and the sum, class weights, label
smoothing, both together, an ignore_index that some labels hold, logits
[N, C, T] with the classes in dim 1, every label ignored, and reduction
'none' (per label; 0 where ignored).

usage: make_losses.py OUT

OUT receives traced.pt and scripted.pt (forward(x: f32 [4, 6, 10],
ids: int64 [4, 6]) -> 10 scalars and 3 tensors of losses), x.npy, ids.npy and
expected/output<k>.npy.
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


def main() -> None:
    torch.manual_seed(0)
    module = Losses()
    save_traced_and_scripted(module, sys.argv[1], {"x": torch.randn(4, 6, 10), "ids": torch.randint(0, 10, (4, 6))})

if __name__ == "__main__":
    main()
