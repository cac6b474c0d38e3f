"""The PyTorch 1.13 eager baseline of tools/bench/train-cpu.sh.

usage: torch_train_baseline.py MODEL FLAVOR DATA_DIR --steps N --threads T
           [--lr X --beta1 B1 --beta2 B2 --eps E --weight-decay W --max-norm M]

Trains models/MODEL's FLAVOR (built by its own class, as the user wrote it,
fp32) with torch.optim.AdamW on the batches of DATA_DIR (tokens.npy and
labels.npy, [steps, batch, seq], as titan's executables read them): forward,
cross-entropy, backward, clip_grad_norm_, optimizer step, zero_grad: the step
titan compiles. Started by torchrun-style variables (WORLD_SIZE > 1; e.g.
`titan-run /usr/bin/python3 --nproc-per-node 2 -- torch_train_baseline.py
...`, whose store PyTorch joins as torchrun's), the ranks form a Gloo
process group and train under DistributedDataParallel, each on its
contiguous part of the global batch.

Prints one line per step (rank 0) and, last, one line
    median_step_seconds S tokens_per_second_per_rank R
over the steps after the first (the warm-up).
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(root, "models"))

from export import FAMILIES, flavor_args  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("flavor")
    parser.add_argument("data")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--lr", type=float, default=8e-4)
    parser.add_argument("--beta1", type=float, default=0.9)
    parser.add_argument("--beta2", type=float, default=0.95)
    parser.add_argument("--eps", type=float, default=1e-8)
    parser.add_argument("--weight-decay", type=float, default=0.1)
    parser.add_argument("--max-norm", type=float, default=1.0)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        torch.distributed.init_process_group("gloo")

    family = FAMILIES[args.model]
    torch.manual_seed(0)
    model = family.module(flavor_args(args.model, args.flavor, "complex"))
    model.train()
    if world > 1:
        # Gloo cannot broadcast complex tensors (Llama's freqs_cis); every
        # rank builds the same buffers anyway.
        complex_buffers = [name for name, b in model.named_buffers() if b.is_complex()]
        torch.nn.parallel.DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(
            model, complex_buffers)
        model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr,
                                  betas=(args.beta1, args.beta2), eps=args.eps,
                                  weight_decay=args.weight_decay)
    tokens = torch.from_numpy(np.load(os.path.join(args.data, "tokens.npy")))
    labels = torch.from_numpy(np.load(os.path.join(args.data, "labels.npy")))
    if tokens.dim() == 2:
        tokens, labels = tokens[None], labels[None]
    per_rank = tokens.shape[1] // world

    seconds = []
    for step in range(args.steps):
        rows = slice(rank * per_rank, (rank + 1) * per_rank)
        batch = tokens[step % tokens.shape[0], rows]
        target = labels[step % labels.shape[0], rows]
        start = time.perf_counter()
        logits = model(batch)
        loss = F.cross_entropy(logits.flatten(0, 1), target.flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_norm)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        seconds.append(time.perf_counter() - start)
        if rank == 0:
            print(f"step {step + 1} | loss {loss.item():.6f} | "
                  f"{seconds[-1] * 1e3:.1f} ms", flush=True)
    median = statistics.median(seconds[1:] if len(seconds) > 1 else seconds)
    if rank == 0:
        print(f"median_step_seconds {median:.6f} tokens_per_second_per_rank "
              f"{batch.numel() / median:.1f}")
    if world > 1:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
