"""Saves language models that return dicts, traced with strict=False as
Hugging Face's models are with return_dict (their ModelOutput is a dict),
for test/Import/dict-output.test: a block whose output dict another reads
by key (`out["logits"]`, `out["hidden_states"]`) and a model returning
{"logits", "aux"}; one whose dict has no "logits"; and one returning its
logits, a tuple of (key, value) pairs, as a Hugging Face model exported
with torchscript=True does while use_cache is on (past_key_values), and a
tuple of hidden states (output_hidden_states).

usage: make_dict_output.py OUT

OUT receives model.pt (forward(tokens: int64 [2, 32]) -> dict),
tokens.npy, logits.npy (the dict's "logits"), no-logits.pt, cache.pt and
cache-logits.npy (its logits).
"""

import os
import sys
import warnings

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from traced_lm import batch_of  # noqa: E402


class Inner(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embedding = nn.Embedding(256, 32)
        self.head = nn.Linear(32, 256)

    def forward(self, tokens):
        hidden = self.embedding(tokens)
        return {"logits": self.head(torch.tanh(hidden)), "hidden_states": hidden}


class DictLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = Inner()
        self.mix = nn.Linear(256, 256)

    def forward(self, tokens):
        out = self.inner(tokens)
        logits = self.mix(out["logits"]) + out["hidden_states"].sum(-1, keepdim=True)
        return {"logits": logits, "aux": out["hidden_states"].pow(2).mean()}


class Scores(Inner):
    def forward(self, tokens):
        return {"scores": self.head(self.embedding(tokens))}


class WithCache(Inner):
    def forward(self, tokens):
        hidden = self.embedding(tokens)
        key = torch.tanh(hidden)
        return self.head(key), ((key, key * 2.0), (key + 1.0, key - 1.0)), (hidden,)


def main() -> None:
    warnings.filterwarnings("ignore")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    batch = batch_of()
    model = DictLM().eval()
    torch.jit.trace(model, batch, strict=False).save(os.path.join(out, "model.pt"))
    torch.jit.trace(Scores().eval(), batch, strict=False).save(os.path.join(out, "no-logits.pt"))
    cached = WithCache().eval()
    torch.jit.trace(cached, batch).save(os.path.join(out, "cache.pt"))
    np.save(os.path.join(out, "tokens.npy"), batch.numpy())
    with torch.no_grad():
        np.save(os.path.join(out, "logits.npy"), model(batch)["logits"].numpy())
        np.save(os.path.join(out, "cache-logits.npy"), cached(batch)[0].numpy())


if __name__ == "__main__":
    main()
