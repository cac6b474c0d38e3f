"""Saves a language model with a masked auxiliary loss, traced, with
PyTorch's logits, for test/TrainStep/masked-loss.test: besides its logits
it returns a masked-prediction loss over the positions whose token is a
multiple of 3, written with boolean indexing as masked-modeling code
writes it: `((predicted - target)[mask] ** 2).mean()`, the predictions a
linear map of the final hidden states and the targets the (detached)
embeddings, plus the cross-entropy of the selected positions' logits and
next tokens (`F.cross_entropy(logits[mask], following[mask])`); the
number of selected positions depends on the batch.

usage: make_masked_loss_lm.py OUT

OUT receives model.pt (forward(tokens: int64 [2, 32]) -> (logits, loss)),
tokens.npy and logits.npy.
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Import", "Inputs"))
from traced_lm import save_traced_lm  # noqa: E402


class MaskedLossLM(nn.Module):
    def __init__(self, vocab_size=256, dim=32):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim)
        self.mix = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.predict = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab_size)

    def forward(self, tokens):
        embeds = self.embedding(tokens)
        x = embeds + F.gelu(self.mix(embeds + 0.5 * torch.roll(embeds, 1, 1)))
        h = self.norm(x)
        mask = tokens % 3 == 0
        error = self.predict(h) - embeds.detach()
        logits = self.head(h)
        # The next token predicted again at the selected positions only.
        following = torch.roll(tokens, -1, 1)
        selected = F.cross_entropy(logits[mask], following[mask])
        return logits, (error[mask] ** 2).mean() * 0.5 + 0.1 * selected


def main() -> None:
    torch.manual_seed(0)
    save_traced_lm(MaskedLossLM(), sys.argv[1])


if __name__ == "__main__":
    main()
