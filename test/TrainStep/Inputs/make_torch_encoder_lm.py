"""Saves a causal language model built from PyTorch's own modules, traced,
with PyTorch's logits: nn.TransformerEncoder of pre-norm
nn.TransformerEncoderLayer (nn.MultiheadAttention: packed in-projection,
heads folded into the batch, q scaled before `torch.baddbmm(mask, q, k^T)`;
GELU feed-forward), the mask from nn.Transformer.generate_square_subsequent_mask,
learned positions as a parameter sliced to the sequence.

usage: make_torch_encoder_lm.py OUT

OUT receives model.pt (forward(tokens: int64 [2, 32]) -> logits),
tokens.npy and logits.npy.
"""

import os
import sys

import torch
from torch import nn

# The shared tracing of the importer's tests (test/Import/Inputs).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Import", "Inputs"))
from traced_lm import save_traced_lm  # noqa: E402


class EncoderLM(nn.Module):
    def __init__(self, vocab_size=256, dim=64, heads=4, layers=2, max_len=64):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim)
        self.positions = nn.Parameter(torch.randn(1, max_len, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=4 * dim, dropout=0.0,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(dim, vocab_size)

    def forward(self, tokens):
        length = tokens.size(1)
        mask = nn.Transformer.generate_square_subsequent_mask(length)
        hidden = self.embedding(tokens) + self.positions[:, :length]
        return self.head(self.encoder(hidden, mask=mask))


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(EncoderLM(), sys.argv[1])


if __name__ == "__main__":
    main()
