"""Saves a module that uses the idioms of OPT, BLOOM, Mistral, GPTBigCode and
GPT-NeoX as Hugging Face transformers (4.2x-4.3x) writes them, traced and
scripted, with PyTorch's outputs as the oracle.

usage: make_hf_model_idioms.py OUT

OUT receives trace.pt, script.pt, x.npy (f32 [2, 3, 4]), ids.npy (i64 [2, 3])
and expected/output<i>.npy for each output of forward.
"""

import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idioms_io import save_idioms  # noqa: E402


class HfModelIdioms(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.register_buffer("cos_cached", torch.randn(1, 1, 8, 4, generator=gen))
        self.register_buffer("table", torch.randn(5, 4, generator=gen))

    def forward(self, x: torch.Tensor, ids: torch.Tensor):
        batch, seq = ids.shape
        # OPT's and BLOOM's positions: the cumsum of an all-ones mask.
        attention_mask = torch.ones(batch, seq, dtype=torch.long)
        positions = (torch.cumsum(attention_mask, dim=1).type_as(attention_mask) * attention_mask).long() - 1
        float_mask = torch.ones(batch, seq)
        arange = ((float_mask.cumsum(dim=-1) - 1) * float_mask)[:, None, :]
        scaled_sum = torch.cumsum(torch.arange(3).view(1, 3).expand(2, 3) * 2.0 + 1, dim=1)
        # fairseq's and XGLM's positions, a cumsum of the tokens at run time
        # (padding id 1), and cumsums of data along two dims.
        not_pad = ids.ne(1).int()
        fairseq_positions = (torch.cumsum(not_pad, dim=1).type_as(not_pad) * not_pad).long() + 1
        running = torch.cumsum(x, dim=1) + x.cumsum(-1)
        # BLOOM's ALiBi slopes: a float scalar tensor to the powers of an
        # int32 arange; pow by a scalar tensor and of a positive scalar.
        base = torch.tensor(2 ** (-(2 ** -(2.0 - 3))), dtype=torch.float32)  # 4 heads
        slopes = torch.pow(base, torch.arange(1, 5, dtype=torch.int32))
        alibi = slopes[..., None] * arange
        # MPT's: 1 / torch.pow(2, m) (a number to a tensor's powers, then
        # reciprocal), times an int32 arange.
        mpt_bias = torch.arange(-2, 1, dtype=torch.int32).view(1, 1, 1, 3) * (
            1.0 / torch.pow(2, torch.arange(1, 5, dtype=torch.float32).mul(2.0))).view(1, 4, 1, 1)
        inverse = x.reciprocal() + 1.0 / (ids[:, :, None] + 1)
        # Baichuan's W_pack split (unflatten) and NormHead (F.normalize).
        packed = x.unflatten(-1, (2, 2)).unsqueeze(0).transpose(0, -2).squeeze(-2)
        unflattened = x.unflatten(1, (-1, 1)).sum(2)
        normalized = torch.nn.functional.normalize(x, dim=-1)
        squared = torch.pow(x, torch.tensor(2.0))
        powers = torch.pow(torch.tensor(1.5), x)
        # Mistral's sliding-window mask: log of an int64 0/1 mask is -inf/0.
        window = torch.log(torch.triu(torch.tril(torch.full((seq, seq), fill_value=1)), diagonal=-1)).clamp(min=-100.0)
        exps = torch.exp(ids) + torch.sigmoid(ids > 2)
        either = (ids > 2) + (ids < 1) + (ids == 3) * (ids > 1)
        # GPTBigCode's scores: torch.empty zeroed in place, then baddbmm
        # with beta=0; fill_ and new_empty.
        scores = torch.empty(2, 3, 3, dtype=x.dtype)
        scores.zero_()
        scores = torch.baddbmm(scores, x[:, :, :2], x[:, :, 2:].transpose(1, 2), beta=0, alpha=0.5)
        filled = x.new_empty(2, 2).fill_(1.5) + torch.empty_like(x[0, :2, :2]).fill_(2)
        # BLOOM's causal mask written into torch.empty by slice assignment,
        # and writes through slices and selects of a tensor the model
        # created, one after another, reading it before the writes.
        causal = torch.empty((seq, seq), dtype=torch.bool)
        seq_ids = torch.arange(seq)
        causal[:, 0:] = seq_ids[:, None] < seq_ids[None, :]
        written = x * 1.0
        written[:, 1:] = written[:, 1:] * 2 + 1
        written[0, :, 3] = -x[1, :, 0]
        written[..., :2].fill_(0.25)
        written[1, 2] = 7.0
        unit = x[:, :1] * 1.0
        unit[:, 0] = torch.tanh(x[:, 2])  # a select of a dim of size 1
        # GPT-NeoX's RoPE tables gathered by position ids (the identity
        # along the gathered dim), and a gather by data.
        gather_indices = positions[:, None, :, None].repeat(1, 1, 1, 4)
        cos = torch.gather(self.cos_cached.repeat(batch, 1, 1, 1), 2, gather_indices)
        picked = torch.gather(self.table.expand(2, 5, 4), 1, ids[:, :, None].expand(2, 3, 4))
        along_last = torch.gather(x, -1, ids[:, :2, None])
        rowwise = torch.gather(x, 1, (ids[:, :2] > 1).long()[:, :, None].expand(2, 2, 4))
        return (packed, unflattened, normalized, positions, alibi, scaled_sum, fairseq_positions, running, slopes, mpt_bias, inverse, squared, powers, window, exps, either, scores, filled,
                causal, written, unit, cos, picked, along_last, rowwise)


def main() -> None:
    save_idioms(HfModelIdioms(), sys.argv[1], np.array([[1, 0, 3], [2, 3, 0]], dtype=np.int64))


if __name__ == "__main__":
    main()
