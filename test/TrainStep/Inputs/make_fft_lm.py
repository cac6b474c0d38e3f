"""Saves a language model that mixes positions with Fourier transforms,
traced, with PyTorch's logits, for test/TrainStep/fft.test: FNet's mixing
(the real part of a 2-d transform over positions and features) and Hyena's
causal long convolution by a learned filter (rfft of twice the length, a
complex product, irfft with norm='forward'), the amplitude spectrum of
the features (abs of rfft), each feature's spectrogram over the positions
(torch.stft) and a filter of them by a learned gain per frequency
(torch.stft and istft).

usage: make_fft_lm.py OUT

OUT receives model.pt (forward(tokens: int64 [2, 32]) -> logits),
tokens.npy and logits.npy.
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Import", "Inputs"))
from traced_lm import BlocksLM, save_traced_lm  # noqa: E402


class FourierBlock(nn.Module):
    def __init__(self, dim, seq=32):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.filter = nn.Parameter(torch.randn(dim, seq) * 0.1)
        self.up = nn.Linear(dim, dim)
        self.down = nn.Linear(dim, dim)
        self.magnitude = nn.Linear(dim // 2, dim)
        # 5 frequencies x 7 frames of each feature's spectrogram.
        self.spectral = nn.Linear(35, seq)
        # A gain per frequency of a filter through torch.stft and istft.
        self.gain = nn.Parameter(1.0 + 0.1 * torch.randn(5, 1))

    def forward(self, x):
        h = self.norm(x)
        seq = h.shape[1]
        mixed = torch.fft.fftn(h, dim=(1, 2)).real * 0.1
        # The features' amplitude spectrum (abs of a complex tensor; its
        # last bin is real) past the constant bin, which is the sum of the
        # normalized features: 0 but for rounding, where |z|'s gradient
        # z / |z| would be the rounding's direction.
        mixed = mixed + self.magnitude(torch.fft.rfft(h)[..., 1:].abs()) * 0.1
        # Each feature's spectrogram over the positions (torch.stft: frames
        # of 8 every 4, a hann window), its magnitudes mapped back to them.
        features = h.transpose(1, 2)
        spectrogram = torch.stft(features.reshape(-1, seq), 8, 4, window=torch.hann_window(8),
                                 center=False, return_complex=True).abs()
        spectral = self.spectral(spectrogram.reshape(features.shape[0], features.shape[1], -1))
        mixed = mixed + spectral.transpose(1, 2) * 0.1
        # Each projected feature filtered over the positions: its
        # spectrogram scaled per frequency and synthesized again
        # (torch.istft).
        window = torch.hann_window(8)
        up = self.up(h).transpose(1, 2)
        spectrum = torch.stft(up.reshape(-1, seq), 8, 2, window=window,
                              return_complex=True)
        filtered = torch.istft(spectrum * self.gain, 8, 2, window=window, length=seq)
        mixed = mixed + filtered.reshape(up.shape).transpose(1, 2) * 0.1
        u_f = torch.fft.rfft(up, n=2 * seq)
        k_f = torch.fft.rfft(self.filter, n=2 * seq)
        conv = torch.fft.irfft(u_f * k_f, n=2 * seq, norm="forward")[..., :seq] / (2 * seq)
        return x + self.down(F.gelu(mixed + conv.transpose(1, 2)))


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(BlocksLM(FourierBlock), sys.argv[1])


if __name__ == "__main__":
    main()
