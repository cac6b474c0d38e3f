"""Saves a module of torch.fft's transforms, for test/Import/fft.test:
rfft (default, longer n with ortho norm, along another dim), irfft (even
and odd lengths, of rfft's output and of a complex tensor built from
parts), fft of a real and of a complex tensor, ifft, fft2 / fftn (FNet's
token mixing: the real part of a 2-d transform), Hyena's long
convolution by rfft, a complex product and irfft with norm='forward', and
a spectrum's abs, angle, conj and mH; fftshift / ifftshift and the hann,
hamming, blackman, bartlett and kaiser windows.

usage: make_fft.py OUT

OUT receives traced.pt and scripted.pt (forward(x: f32 [2, 6, 8]) ->
tensors), x.npy and expected/output<k>.npy.
"""

import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_traced_and_scripted  # noqa: E402


class Transforms(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.filter = nn.Parameter(torch.randn(8, 6) * 0.3)

    def forward(self, x: torch.Tensor):
        spectrum = torch.fft.rfft(x)
        seq = x.shape[1]
        # Hyena's fftconv: a causal convolution by a filter as long as the
        # sequence, through transforms of twice its length.
        u = x.transpose(1, 2)
        u_f = torch.fft.rfft(u, n=2 * seq)
        k_f = torch.fft.rfft(self.filter, n=2 * seq)
        long_conv = torch.fft.irfft(u_f * k_f, n=2 * seq, norm="forward")[..., :seq]
        parts = torch.complex(x[..., :5], x[..., 3:])
        return (
            torch.view_as_real(spectrum),
            torch.view_as_real(torch.fft.rfft(x, n=12, dim=1, norm="ortho")),
            torch.fft.irfft(spectrum), torch.fft.irfft(spectrum, n=7),
            torch.fft.irfft(parts, n=8, dim=-1, norm="ortho"),
            torch.view_as_real(torch.fft.fft(x)),
            torch.view_as_real(torch.fft.fft(torch.fft.fft(x, dim=1), dim=2)),
            torch.fft.ifft(torch.fft.fft(x, dim=1), dim=1).real,
            torch.fft.fftn(x, dim=(1, 2)).real, torch.fft.fft2(x).imag,
            long_conv / (2 * seq),
            # Complex division: by a number (the probe's Hyena, `rfft(k, n)
            # / n`), by a complex tensor, a real one by a complex one plus
            # a number.
            torch.view_as_real(torch.fft.rfft(x) / 8),
            torch.view_as_real(spectrum / torch.fft.rfft(x + 3.0)),
            torch.view_as_real(x[..., :5] / (spectrum + 1.0)),
            # A spectrum's magnitude and phase, its conjugate and its
            # conjugate transpose (materialized by resolve_conj).
            spectrum.abs(), torch.angle(spectrum[..., 1:4]),
            torch.view_as_real(spectrum.conj() * 2.0),
            torch.view_as_real(spectrum.mH.resolve_conj()),
            # The zero frequency moved to the middle and back, and the
            # window functions of spectral front ends.
            torch.fft.fftshift(spectrum.abs(), dim=-1),
            torch.view_as_real(torch.fft.ifftshift(torch.fft.fft(x), dim=(1, 2))),
            x[0, 0] * torch.hann_window(8) + torch.hamming_window(8, False, alpha=0.5, beta=0.4),
            torch.blackman_window(10), torch.bartlett_window(7),
            torch.kaiser_window(7, False, beta=5.0), torch.kaiser_window(6),
        )


def main() -> None:
    torch.manual_seed(0)
    save_traced_and_scripted(Transforms().eval(), sys.argv[1], {"x": torch.randn(2, 6, 8)})


if __name__ == "__main__":
    main()
