"""Synthetic training state and checkpoint plans for
tools/bench/checkpoint-throughput.sh (numpy only; run with /usr/bin/python3).

    checkpoint_state.py OUT LAYERS

writes OUT/state/<source>.npy (the global tensors of a Llama-shaped model:
dim 1024, FFN 2816, vocab 32000, LAYERS layers; parameters and both AdamW
moments in float32, the step as a 0-d float32, saved per parameter and as
the int train_state.step) and two plans in the format of
include/titan/Checkpoint/Plan.h, both for 4 ranks:

  OUT/fsdp2tp2.plan  FSDP 2 x TP 2 as titan-compile lays it out: colwise
                     weights (wq, wk, wv, w1, w3, output, tok_embeddings)
                     split dim 0 over TP and dim 1 over FSDP, rowwise ones
                     (wo, w2) dim 1 over TP and dim 0 over FSDP, norms dim 0
                     over FSDP (TP pairs hold copies); rank = 2 * fsdp + tp.
  OUT/fsdp4.plan     FSDP 4: dim 0 of every tensor in 4 parts.

Prints the total number of bytes of the state.
"""

import os
import sys

import numpy as np

DIM, FFN, VOCAB = 1024, 2816, 32000


def parameters(layers):
    """(fqn, shape, TP-split dim or None) of every parameter."""
    params = [("tok_embeddings.weight", (VOCAB, DIM), 0)]
    for i in range(layers):
        p = f"layers.{i}."
        params += [
            (p + "attention.wq.weight", (DIM, DIM), 0),
            (p + "attention.wk.weight", (DIM, DIM), 0),
            (p + "attention.wv.weight", (DIM, DIM), 0),
            (p + "attention.wo.weight", (DIM, DIM), 1),
            (p + "feed_forward.w1.weight", (FFN, DIM), 0),
            (p + "feed_forward.w2.weight", (DIM, FFN), 1),
            (p + "feed_forward.w3.weight", (FFN, DIM), 0),
            (p + "attention_norm.weight", (DIM,), None),
            (p + "ffn_norm.weight", (DIM,), None),
        ]
    params += [("norm.weight", (DIM,), None), ("output.weight", (VOCAB, DIM), 0)]
    return params


def field(values):
    return "[" + ",".join(str(v) for v in values) + "]"


def split(size, parts, index):
    step = size // parts
    return index * step, step


def fsdp2tp2_box(shape, tp_dim, rank):
    fsdp, tp = divmod(rank, 2)
    offsets, sizes = [0] * len(shape), list(shape)
    if tp_dim is None:
        offsets[0], sizes[0] = split(shape[0], 2, fsdp)
        return offsets, sizes, tp == 0
    other = 1 - tp_dim
    offsets[tp_dim], sizes[tp_dim] = split(shape[tp_dim], 2, tp)
    offsets[other], sizes[other] = split(shape[other], 2, fsdp)
    return offsets, sizes, True


def fsdp4_box(shape, tp_dim, rank):
    offsets, sizes = [0] * len(shape), list(shape)
    offsets[0], sizes[0] = split(shape[0], 4, rank)
    return offsets, sizes, True


def write_plan(path, tensors, box_of):
    with open(path, "w") as f:
        f.write("titan-checkpoint-plan 1\nranks 4\n")
        for key, source, shape, tp_dim in tensors:
            f.write(f"tensor {key} {source} float32 {field(shape)}\n")
            for rank in range(4):
                if shape:
                    offsets, sizes, writes = box_of(shape, tp_dim, rank)
                else:
                    offsets, sizes, writes = [], [], rank == 0
                kind = "write" if writes else "hold"
                f.write(f"box {rank} {field(offsets)} {field(sizes)} {kind}\n")
        f.write("value train_state.step step float32\n")


def main(out, layers):
    state = os.path.join(out, "state")
    os.makedirs(state, exist_ok=True)
    rng = np.random.default_rng(0)
    tensors, total = [], 0
    for fqn, shape, tp_dim in parameters(int(layers)):
        for key, source in [
            (fqn, fqn),
            (f"optimizer.state.{fqn}.exp_avg", f"exp_avg.{fqn}"),
            (f"optimizer.state.{fqn}.exp_avg_sq", f"exp_avg_sq.{fqn}"),
        ]:
            values = rng.standard_normal(shape, dtype=np.float32)
            np.save(os.path.join(state, source + ".npy"), values)
            total += values.nbytes
            tensors.append((key, source, shape, tp_dim))
        tensors.append((f"optimizer.state.{fqn}.step", "step", (), None))
    np.save(os.path.join(state, "step.npy"), np.array(7, np.float32))
    total += 4
    write_plan(os.path.join(out, "fsdp2tp2.plan"), tensors, fsdp2tp2_box)
    write_plan(os.path.join(out, "fsdp4.plan"), tensors, fsdp4_box)
    print(total)


if __name__ == "__main__":
    main(*sys.argv[1:])
