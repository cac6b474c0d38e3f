"""Saves a language model whose blocks mix positions with recurrent layers,
traced, with PyTorch's logits, for test/TrainStep/recurrent.test: each
block adds a 2-layer nn.LSTM with proj_size and an nn.GRU (batch first,
zero initial states) to its input, then an nn.RNN (tanh cells).

usage: make_recurrent_lm.py OUT

OUT receives model.pt (forward(tokens: int64 [2, 32]) -> logits),
tokens.npy and logits.npy.
"""

import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Import", "Inputs"))
from traced_lm import BlocksLM, save_traced_lm  # noqa: E402


class RecurrentBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.lstm = nn.LSTM(dim, dim // 2, num_layers=2, proj_size=dim // 4, batch_first=True)
        self.expand = nn.Linear(dim // 4, dim)
        self.gru = nn.GRU(dim, dim, batch_first=True)
        self.rnn = nn.RNN(dim, dim, batch_first=True)

    def forward(self, x):
        y = self.norm(x)
        x = x + self.expand(self.lstm(y)[0]) + self.gru(y)[0]
        return x + 0.5 * self.rnn(x)[0]


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(BlocksLM(RecurrentBlock), sys.argv[1])


if __name__ == "__main__":
    main()
