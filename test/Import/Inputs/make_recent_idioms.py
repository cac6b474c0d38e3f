"""Saves modules written as recent Hugging Face code writes them, for
test/Import/recent-idioms.test: the eager attention mask
`torch.where(mask, torch.tensor(0.0), min_dtype)` (and of two Python
numbers), Llama 4's rotary table `torch.polar(ones_like(freqs), freqs) *
attention_scaling`, RecurrentGemma's soft-cap through `F.tanh` (whose
deprecation warning is an op in scripted code) and routing statistics
under `with torch.no_grad():`, traced and scripted; and wav2vec2's
positional convolution under nn.utils.weight_norm (dim=2, groups; traced:
PyTorch 1.13 cannot script it).

usage: make_recent_idioms.py OUT

OUT receives traced.pt, scripted.pt (forward(x: f32 [2, 6, 8]) -> 5
tensors), weight_norm.pt (forward(x) -> 1 tensor), x.npy,
expected/output<k>.npy and weight_norm_expected.npy.
"""

import os
import sys
from typing import List

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_traced_and_scripted  # noqa: E402


class RecentIdioms(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention_scaling = 0.75
        self.inv_freq = nn.Parameter(torch.rand(4), requires_grad=False)

    def forward(self, x: torch.Tensor) -> List[torch.Tensor]:
        b, t, d = x.shape
        positions = torch.arange(t)
        causal = positions[None, :] <= positions[:, None]
        min_dtype = -3.4028234663852886e38
        mask = torch.where(causal, torch.tensor(0.0, dtype=x.dtype), min_dtype)
        plain = torch.where(causal, 0.0, -1e9)
        freqs = positions[:, None].float() * self.inv_freq[None, :]
        freqs_cis = torch.polar(torch.ones_like(freqs), freqs) * self.attention_scaling
        rotated = torch.view_as_real(
            torch.view_as_complex(x.reshape(b, t, d // 2, 2)) * freqs_cis[None]).flatten(2)
        capped = F.tanh(x / 3.0) * 3.0
        with torch.no_grad():
            share = (x.argmax(-1) == 0).float().mean() + x.abs().amax()
        return [mask, plain, rotated, capped, x * share]


class WeightNormConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.utils.weight_norm(nn.Conv1d(8, 8, 3, padding=1, groups=2), name="weight", dim=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.conv(x.transpose(1, 2))).transpose(1, 2)


def main() -> None:
    out = sys.argv[1]
    torch.manual_seed(0)
    x = torch.randn(2, 6, 8)
    save_traced_and_scripted(RecentIdioms().eval(), out, {"x": x})
    module = WeightNormConv().eval()
    torch.jit.trace(module, (x,), check_trace=False).save(os.path.join(out, "weight_norm.pt"))
    with torch.no_grad():
        np.save(os.path.join(out, "weight_norm_expected.npy"), module(x).numpy())


if __name__ == "__main__":
    main()
