"""Saves a module of torch.stft's forms, for test/Import/stft.test: a
power spectrogram (center=True with reflect padding, a hann
window, a quarter-length hop), Whisper's framing (n_fft 400, hop 160: a
hop that does not divide n_fft), a short window centred in a longer n_fft,
no window and center=False with a two-sided, normalized transform of a
1-d signal, return_complex=False's real view, constant padding, and the
multi-resolution STFT loss of neural vocoders (the spectral convergence
and log-magnitude distance of three resolutions); torch.istft (the round
trip, Vocos' head synthesizing a waveform from magnitude and phase, a
longer length, two-sided normalized frames without centring, a short
window).

usage: make_stft.py OUT

OUT receives traced.pt and scripted.pt (forward(x: f32 [2, 1600],
y: f32 [2, 1600]) -> tensors), x.npy, y.npy and expected/output<k>.npy.
"""

import os
import sys
from typing import List

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_traced_and_scripted  # noqa: E402


def magnitude(x: torch.Tensor, n_fft: int, hop: int, win: int) -> torch.Tensor:
    spectrum = torch.stft(x, n_fft, hop_length=hop, win_length=win,
                          window=torch.hann_window(win), return_complex=True)
    return torch.clamp(spectrum.abs(), min=1e-7)


class Spectrograms(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.resolutions: List[List[int]] = [[64, 16, 64], [128, 32, 96], [32, 8, 32]]

    def forward(self, x: torch.Tensor, y: torch.Tensor):
        power = magnitude(x, 64, 16, 64) ** 2
        whisper = torch.stft(x, 400, 160, window=torch.hann_window(400),
                             return_complex=True).abs()
        short_window = torch.stft(x, 64, 16, 40, torch.hann_window(40),
                                  return_complex=True)
        plain = torch.stft(x[0], 50, 20, center=False, normalized=True,
                           onesided=False, return_complex=True)
        real_view = torch.stft(x, 32, 8, window=torch.hamming_window(32),
                               return_complex=False)
        constant = torch.stft(x, 48, 12, window=torch.hann_window(48),
                              pad_mode="constant", return_complex=True).abs()
        loss = torch.zeros(())
        for resolution in self.resolutions:
            a = magnitude(x, resolution[0], resolution[1], resolution[2])
            b = magnitude(y, resolution[0], resolution[1], resolution[2])
            convergence = torch.norm(b - a, p="fro") / torch.norm(b, p="fro")
            loss = loss + convergence + torch.mean(torch.abs(torch.log(b) - torch.log(a)))
        # torch.istft: the round trip, Vocos' head (magnitude and phase
        # from the features, a hann window), a longer length, two-sided
        # normalized frames without centring, a short window.
        window = torch.hann_window(64)
        spectrum = torch.stft(x, 64, 16, window=window, return_complex=True)
        round_trip = torch.istft(spectrum, 64, 16, window=window)
        features = spectrum.abs()[:, :, :50]
        vocos = torch.polar(torch.exp(torch.clamp(features, max=3.0)) * 0.1,
                            torch.atan2(torch.sin(features), torch.cos(features * 0.5)))
        head = torch.istft(vocos, 64, 16, 64, window, center=True)
        longer = torch.istft(spectrum[0], 64, 16, window=window, length=1700)
        two_sided = torch.stft(x, 32, 8, window=torch.hamming_window(32), center=False,
                               normalized=True, onesided=False, return_complex=True)
        plain_back = torch.istft(two_sided, 32, 8, window=torch.hamming_window(32),
                                 center=False, normalized=True, onesided=False)
        short = torch.istft(short_window, 64, 16, 40, torch.hann_window(40))
        return (power, whisper, torch.view_as_real(short_window),
                torch.view_as_real(plain), real_view, constant, loss,
                round_trip, head, longer, plain_back, short)


def main() -> None:
    torch.manual_seed(0)
    save_traced_and_scripted(Spectrograms().eval(), sys.argv[1],
                             {"x": torch.randn(2, 1600), "y": torch.randn(2, 1600)})


if __name__ == "__main__":
    main()
