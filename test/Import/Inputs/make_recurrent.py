"""Saves a module of PyTorch's recurrent layers, traced and scripted, with PyTorch's
outputs, for test/Import/recurrent.test: nn.LSTM (2 layers, bidirectional,
batch first, with initial states; with proj_size; unbatched), nn.GRU (2
layers, time-major, without biases; bidirectional) and nn.RNN (tanh and
relu), each output and final state returned.

usage: make_recurrent.py OUT

OUT receives traced.pt and scripted.pt (forward(x: f32 [2, 5, 6]) -> 16 tensors), x.npy and
expected/output<k>.npy.
"""

import os
import sys

import numpy as np
import torch
from torch import nn


class Recurrent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(6, 4, num_layers=2, bidirectional=True, batch_first=True)
        self.projected = nn.LSTM(6, 5, proj_size=3, batch_first=True)
        self.gru = nn.GRU(6, 4, num_layers=2, bias=False)
        self.bigru = nn.GRU(6, 3, bidirectional=True, batch_first=True)
        self.rnn = nn.RNN(6, 4, batch_first=True)
        self.relu_rnn = nn.RNN(6, 4, nonlinearity="relu", num_layers=2, batch_first=True)
        self.h0 = nn.Parameter(torch.randn(4, 2, 4) * 0.5)
        self.c0 = nn.Parameter(torch.randn(4, 2, 4) * 0.5)

    def forward(self, x: torch.Tensor):
        out, (h, c) = self.lstm(x, (self.h0, self.c0))
        projected, (ph, pc) = self.projected(x)
        single, (sh, sc) = self.projected(x[0])
        gru, gh = self.gru(x.transpose(0, 1))
        bigru, bh = self.bigru(x)
        rnn, rh = self.rnn(torch.tanh(x))
        relu, reh = self.relu_rnn(x)
        return (out, h, c, projected, ph, pc, single, sh, sc, gru, gh, bigru,
                bh, rnn, rh, relu + reh.sum())


def main() -> None:
    out = sys.argv[1]
    torch.manual_seed(0)
    module = Recurrent().eval()
    x = torch.randn(2, 5, 6)
    os.makedirs(os.path.join(out, "expected"), exist_ok=True)
    np.save(os.path.join(out, "x.npy"), x.numpy())
    with torch.no_grad():
        for k, output in enumerate(module(x)):
            np.save(os.path.join(out, "expected", "output%d.npy" % k), output.numpy())
    torch.jit.trace(module, (x,), check_trace=False).save(os.path.join(out, "traced.pt"))
    torch.jit.script(module).save(os.path.join(out, "scripted.pt"))


if __name__ == "__main__":
    main()
