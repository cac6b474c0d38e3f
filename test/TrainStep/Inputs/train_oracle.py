"""PyTorch 1.13 oracle for titan's @train_step.

Loads an exported model (models/export.py) with torch.jit.load, takes its
tokens.npy as the batch and a deterministic labels.npy (written next to it),
and trains with F.cross_entropy, clip_grad_norm_ and torch.optim.AdamW on the
same batch for --steps steps. Writes into OUT:

    labels.npy                 the labels (int64, like tokens)
    expected/losses.npy        the loss before each step
    expected/grad.<fqn>.npy    gradients of the first step (after clipping)
    expected/param.<fqn>.npy   parameters after the first step

usage: train_oracle.py MODEL_DIR OUT --lr L --beta1 B1 --beta2 B2 --eps E
       --weight-decay W --max-norm M [--ignore-index I] [--steps N]
"""

import argparse
import os
from typing import List, Optional

import numpy as np
import torch
import torch.nn.functional as F


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model_dir")
    parser.add_argument("out")
    for name in ("lr", "beta1", "beta2", "eps", "weight-decay", "max-norm"):
        parser.add_argument("--" + name, type=float, required=True)
    parser.add_argument("--ignore-index", type=int, default=-100)
    parser.add_argument("--steps", type=int, default=1)
    args = parser.parse_args(argv)

    torch.manual_seed(0)
    model = torch.jit.load(os.path.join(args.model_dir, "model.pt"))
    tokens = torch.from_numpy(np.load(os.path.join(args.model_dir, "tokens.npy")))
    vocab = model(tokens[:, :1]).shape[-1]
    # Next-token labels, with a few ignored positions to exercise ignore_index.
    labels = torch.roll(tokens, shifts=-1, dims=1) % vocab
    labels[:, -1] = args.ignore_index
    os.makedirs(os.path.join(args.out, "expected"), exist_ok=True)
    np.save(os.path.join(args.out, "labels.npy"), labels.numpy())

    params = dict(model.named_parameters())
    optimizer = torch.optim.AdamW(
        params.values(), lr=args.lr, betas=(args.beta1, args.beta2), eps=args.eps,
        weight_decay=args.weight_decay)
    losses = []
    for step in range(args.steps):
        optimizer.zero_grad()
        logits = model(tokens)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                               ignore_index=args.ignore_index)
        loss.backward()
        if args.max_norm > 0:
            torch.nn.utils.clip_grad_norm_(list(params.values()), args.max_norm)
        losses.append(loss.item())
        if step == 0:
            for name, p in params.items():
                np.save(os.path.join(args.out, "expected", f"grad.{name}.npy"),
                        p.grad.detach().numpy())
        optimizer.step()
        if step == 0:
            for name, p in params.items():
                np.save(os.path.join(args.out, "expected", f"param.{name}.npy"),
                        p.detach().numpy())
    np.save(os.path.join(args.out, "expected", "losses.npy"), np.array(losses, dtype=np.float64))


if __name__ == "__main__":
    main()
