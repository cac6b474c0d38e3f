"""Saves a language model whose token representations are embedding bags
of each token and the two before it, traced, with PyTorch's logits, for
test/TrainStep/embedding-bag.test: nn.EmbeddingBag in mode mean over the
[tokens, 3] windows (a 2-d input), in mode max, and in mode sum over the
flattened windows with offsets and learned per-sample weights (a softmax
over the three places), then a linear block and the head.

usage: make_bag_lm.py OUT

OUT receives model.pt (forward(tokens: int64 [2, 32]) -> logits),
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


class BagLM(nn.Module):
    def __init__(self, vocab_size: int = 256, dim: int = 32) -> None:
        super().__init__()
        self.mean_bag = nn.EmbeddingBag(vocab_size, dim, mode="mean")
        self.max_bag = nn.EmbeddingBag(vocab_size, dim, mode="max")
        self.sum_bag = nn.EmbeddingBag(vocab_size, dim, mode="sum")
        self.places = nn.Parameter(torch.tensor([1.0, 0.5, 0.0]))
        self.up = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab_size)

    def forward(self, tokens):
        b, t = tokens.shape
        padded = F.pad(tokens, (2, 0))
        windows = torch.stack([padded[:, 2:], padded[:, 1:-1], padded[:, :-2]], -1)
        windows = windows.reshape(b * t, 3)
        flat = windows.reshape(-1)
        offsets = torch.arange(0, flat.numel(), 3)
        weights = torch.softmax(self.places, 0).repeat(b * t)
        x = self.mean_bag(windows) + 0.5 * self.max_bag(windows)
        x = x + self.sum_bag(flat, offsets, per_sample_weights=weights)
        x = x.reshape(b, t, -1)
        x = x + torch.tanh(self.up(x))
        return self.head(self.norm(x))


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(BagLM(), sys.argv[1])


if __name__ == "__main__":
    main()
