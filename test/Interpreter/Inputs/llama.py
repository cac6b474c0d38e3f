"""A Llama 3 forward pass as a hand-lowered titan program, checked against
models/llama3/model.py.

    llama.py gen FLAVOR BATCH SEQ TP DIR   writes DIR/llama.mlir (func
        @forward), the weights and tokens as DIR/<name>.npy (torchtitan
        parameter names) and the RoPE tables DIR/rope.cos.npy, rope.sin.npy.
        With TP > 1 the program is the local program of Megatron-style tensor
        parallelism over a mesh ["tp"=TP]: wq/wk/wv/w1/w3 sharded S(0) (column
        parallel), wo/w2 S(1) (row parallel) followed by an all_reduce.
    llama.py check FLAVOR BATCH SEQ TP DIR compares DIR/out/logits.npy with
        the PyTorch model's fp32 logits

Run with /usr/bin/python3 (numpy + torch 1.13).
"""

import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "models"))
from llama3.model import FLAVORS, Transformer  # noqa: E402

SEED = 0


def build(flavor, batch, seq):
    """The seeded model and a batch of tokens."""
    model = Transformer(FLAVORS[flavor])
    model.init_weights(SEED)
    rng = np.random.default_rng(SEED + 1)
    tokens = rng.integers(0, model.args.vocab_size, (batch, seq))
    return model, tokens


def tensor(shape, dtype="f32"):
    return "tensor<" + "x".join(map(str, shape)) + "x" + dtype + ">"


def program(args, batch, seq, tp):
    """The forward pass of `args` for [batch, seq] tokens in the titan dialect,
    as the local program of `tp`-way tensor parallelism."""
    d, v, hd = args.dim, args.vocab_size, args.head_dim
    h, kv, f = args.n_heads // tp, args.kv_heads // tp, args.ffn_hidden_dim // tp
    column, row = "S(0)", "S(1)"
    b, s = batch, seq
    x3 = tensor([b, s, d])
    params = [("tok_embeddings.weight", [v, d], None)]
    for i in range(args.n_layers):
        p = f"layers.{i}."
        params += [(p + "attention_norm.weight", [d], None),
                   (p + "attention.wq.weight", [h * hd, d], column),
                   (p + "attention.wk.weight", [kv * hd, d], column),
                   (p + "attention.wv.weight", [kv * hd, d], column),
                   (p + "attention.wo.weight", [d, h * hd], row),
                   (p + "ffn_norm.weight", [d], None),
                   (p + "feed_forward.w1.weight", [f, d], column),
                   (p + "feed_forward.w2.weight", [d, f], row),
                   (p + "feed_forward.w3.weight", [f, d], column)]
    params += [("norm.weight", [d], None), ("output.weight", [v, d], None)]
    ssa = {name: f"%p{j}" for j, (name, _, _) in enumerate(params)}

    def placements(placement):
        if tp == 1 or placement is None:
            return ""
        return f", titan.placements = #titan.placements<@mesh, [{placement}]>"
    arguments = [f'{ssa[name]}: {tensor(shape)} {{titan.name = "{name}", '
                 f'titan.role = "param"{placements(placement)}}}'
                 for name, shape, placement in params]
    arguments += [f'%cos: {tensor([s, hd // 2])} {{titan.name = "rope.cos", '
                  f'titan.role = "buffer"}}',
                  f'%sin: {tensor([s, hd // 2])} {{titan.name = "rope.sin", '
                  f'titan.role = "buffer"}}',
                  f'%tokens: {tensor([b, s], "i64")} {{titan.name = "tokens", '
                  f'titan.role = "input"}}']
    lines = []
    counter = [0]

    def emit(text, results=1):
        """Appends `text`; returns its (first) result."""
        name = f"%v{counter[0]}"
        counter[0] += 1
        if results == 1:
            lines.append(f"  {name} = {text}")
            return name
        lines.append(f"  {name}:{results} = {text}")
        return f"{name}#0"

    def all_reduce(x):
        if tp == 1:
            return x
        return emit(f'titan.all_reduce {x} on @mesh ["tp"] sum : {x3}')

    def linear(x, weight, n_in, n_out):
        return emit(f"titan.matmul {x}, {ssa[weight]} transpose_rhs : "
                    f"{tensor([b, s, n_in])}, {tensor([n_out, n_in])} -> "
                    f"{tensor([b, s, n_out])}")

    def norm(x, weight):
        return emit(f"titan.rms_norm {x}, {ssa[weight]} eps "
                    f"{args.norm_eps:e} : {x3}, {tensor([d])}")

    def heads(x, n):
        x4 = emit(f"titan.reshape {x} : {tensor([b, s, n * hd])} -> "
                  f"{tensor([b, s, n, hd])}")
        return x4

    def to_bhsd(x, n):
        return emit(f"titan.transpose {x} [0, 2, 1, 3] : "
                    f"{tensor([b, s, n, hd])} -> {tensor([b, n, s, hd])}")

    def rope(x, n):
        return emit(f"titan.rope {x}, %cos, %sin interleaved : "
                    f"{tensor([b, s, n, hd])}, {tensor([s, hd // 2])}")

    x = emit(f"titan.embedding {ssa['tok_embeddings.weight']}, %tokens : "
             f"{tensor([v, d])}, {tensor([b, s], 'i64')} -> {x3}")
    for i in range(args.n_layers):
        p = f"layers.{i}."
        a = norm(x, p + "attention_norm.weight")
        q = to_bhsd(rope(heads(linear(a, p + "attention.wq.weight", d, h * hd),
                                h), h), h)
        k = to_bhsd(rope(heads(linear(a, p + "attention.wk.weight", d,
                                      kv * hd), kv), kv), kv)
        val = to_bhsd(heads(linear(a, p + "attention.wv.weight", d, kv * hd),
                            kv), kv)
        o = emit(f"titan.attention {q}, {k}, {val} causal : "
                 f"{tensor([b, h, s, hd])}, {tensor([b, kv, s, hd])}",
                 results=2)
        o = emit(f"titan.transpose {o} [0, 2, 1, 3] : {tensor([b, h, s, hd])}"
                 f" -> {tensor([b, s, h, hd])}")
        o = emit(f"titan.reshape {o} : {tensor([b, s, h, hd])} -> "
                 f"{tensor([b, s, h * hd])}")
        o = all_reduce(linear(o, p + "attention.wo.weight", h * hd, d))
        x = emit(f"titan.add {x}, {o} : {x3}")
        n = norm(x, p + "ffn_norm.weight")
        gate = emit(f"titan.silu {linear(n, p + 'feed_forward.w1.weight', d, f)}"
                    f" : {tensor([b, s, f])}")
        up = linear(n, p + "feed_forward.w3.weight", d, f)
        hidden = emit(f"titan.mul {gate}, {up} : {tensor([b, s, f])}")
        down = all_reduce(linear(hidden, p + "feed_forward.w2.weight", f, d))
        x = emit(f"titan.add {x}, {down} : {x3}")
    logits = linear(norm(x, "norm.weight"), "output.weight", d, v)
    result = tensor([b, s, v])
    mesh = f'titan.mesh @mesh ["tp"={tp}]\n' if tp > 1 else ""
    return ("// Generated by test/Interpreter/Inputs/llama.py.\n" + mesh +
            "func.func @forward(" + ",\n    ".join(arguments) + ")\n"
            f'    -> ({result} {{titan.name = "logits"}}) {{\n' +
            "\n".join(lines) + f"\n  return {logits} : {result}\n}}\n")


def main():
    mode, flavor, batch, seq, tp, directory = sys.argv[1:7]
    batch, seq, tp = int(batch), int(seq), int(tp)
    model, tokens = build(flavor, batch, seq)
    if mode == "gen":
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "llama.mlir"), "w") as f:
            f.write(program(model.args, batch, seq, tp))
        for name, value in model.named_parameters():
            np.save(os.path.join(directory, name + ".npy"),
                    value.detach().numpy())
        freqs = model.freqs_cis[:seq]
        np.save(os.path.join(directory, "rope.cos.npy"), freqs.real.numpy())
        np.save(os.path.join(directory, "rope.sin.npy"), freqs.imag.numpy())
        np.save(os.path.join(directory, "tokens.npy"), tokens)
        return 0
    with torch.no_grad():
        want = model(torch.from_numpy(tokens)).numpy()
    got = np.load(os.path.join(directory, "out", "logits.npy"))
    if got.shape != want.shape:
        print(f"error: logits shape {got.shape}, expected {want.shape}")
        return 1
    # PyTorch computes in fp32; the interpreter accumulates in fp64.
    error = np.abs(got - want).max() / np.abs(want).max()
    print(f"{flavor} {batch}x{seq} tp={tp}: max error relative to max |logit|: "
          f"{error:.2e}")
    return 0 if error < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
