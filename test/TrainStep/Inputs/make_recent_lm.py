"""Saves a language model built of recent Hugging Face idioms, scripted,
with PyTorch's logits, for test/TrainStep/recent-idioms.test: each block
gates its update by a statistic computed `with torch.no_grad():` (no
gradient flows through it; the block is only in scripted code), masks a
mixing matrix with `torch.where(causal, torch.tensor(0.0), -1e9)` and
merges projected features into the positions a mask picks
(masked_scatter, as multimodal models merge image features).

usage: make_recent_lm.py OUT

OUT receives model.pt (forward(tokens: int64 [2, 32]) -> logits),
tokens.npy and logits.npy.
"""

import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Import", "Inputs"))
from traced_lm import BlocksLM, batch_of  # noqa: E402


class GatedMixBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.mix = nn.Linear(dim, dim)
        self.scores = nn.Linear(dim, dim)
        self.project = nn.Linear(dim, dim)

    def forward(self, x):
        t = x.shape[1]
        h = self.norm(x)
        positions = torch.arange(t)
        causal = positions[None, :] <= positions[:, None]
        mask = torch.where(causal, torch.tensor(0.0), -1e9)
        weights = torch.softmax(self.scores(h) @ h.transpose(1, 2) / 8.0 + mask, dim=-1)
        with torch.no_grad():
            gate = torch.sigmoid(self.mix(h).mean(-1, keepdim=True))
        x = x + (weights @ self.mix(h)) * gate
        # Features merged into the positions a mask picks, in order, as
        # multimodal models put image features at the image tokens'
        # embeddings (`inputs_embeds.masked_scatter(image_mask, features)`).
        picked = (h[..., :1] > 0.5).expand_as(x)
        return x.masked_scatter(picked, self.project(h))


def main() -> None:
    out = sys.argv[1]
    torch.manual_seed(1)
    model = BlocksLM(GatedMixBlock).eval()
    os.makedirs(out, exist_ok=True)
    torch.jit.script(model).save(os.path.join(out, "model.pt"))
    batch = batch_of()
    np.save(os.path.join(out, "tokens.npy"), batch.numpy())
    with torch.no_grad():
        np.save(os.path.join(out, "logits.npy"), model(batch).numpy())


if __name__ == "__main__":
    main()
