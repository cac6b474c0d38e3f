"""Inputs and expected outputs of titan-eval's lit tests.

    oracle.py gen CASE DIR     writes the inputs of CASE as DIR/<name>.npy
    oracle.py check CASE DIR   recomputes the outputs of CASE from the inputs
                               with torch (float64 unless the case says
                               otherwise) and compares them with
                               DIR/out/<name>.npy

Run with /usr/bin/python3 (numpy + torch 1.13).
"""

import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

RTOL = 1e-5
ATOL = 1e-6
CASES = {}


def case(fn):
    """Registers a case: fn(rng) returns (inputs, expected), where expected is
    a function of the inputs (as float64/int64 torch tensors) returning the
    outputs."""
    CASES[fn.__name__] = fn
    return fn


def randn(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def t(a):
    """A numpy input as a float64 (or int64/bool) torch tensor."""
    a = np.asarray(a)
    if a.dtype.kind == "f":
        return torch.from_numpy(a.astype(np.float64))
    if a.dtype.kind in "iu":
        return torch.from_numpy(a.astype(np.int64))
    return torch.from_numpy(a)


@case
def elementwise(rng):
    inputs = {"a": randn(rng, 4, 8), "b": randn(rng, 4, 8),
              "p": rng.uniform(0.5, 2.0, (4, 8)).astype(np.float32)}

    def expected(i):
        a, b, p = t(i["a"]), t(i["b"]), t(i["p"])
        return {"add": a + b, "sub": a - b, "mul": a * b, "div": a / p,
                "max": torch.maximum(a, b), "neg": -a, "exp": a.exp(),
                "log": p.log(), "sqrt": p.sqrt(), "rsqrt": p.rsqrt(),
                "tanh": a.tanh(), "sigmoid": a.sigmoid(), "silu": F.silu(a),
                "cos": a.cos(), "sin": a.sin(), "gelu": F.gelu(a),
                "gelu_tanh": F.gelu(a, approximate="tanh"),
                "scale": a * 0.125}
    return inputs, expected


@case
def matmul(rng):
    x, y, w = randn(rng, 2, 5, 8), randn(rng, 2, 8, 3), randn(rng, 6, 8)
    inputs = {"x": x, "y": y, "xt": np.ascontiguousarray(x.transpose(0, 2, 1)),
              "yt": np.ascontiguousarray(y.transpose(0, 2, 1)),
              "layers.0.w": w, "d": rng.standard_normal((4, 7)),
              "e": rng.standard_normal((7, 2)), "h": randn(rng, 2, 5, 6)}

    def expected(i):
        x, y = t(i["x"]), t(i["y"])
        return {"plain": x @ y, "both": t(i["xt"]).transpose(1, 2) @
                t(i["yt"]).transpose(1, 2),
                "linear": F.linear(x, t(i["layers.0.w"])),
                "f64": t(i["d"]) @ t(i["e"]),
                "linear_plus": t(i["h"]) + F.linear(x, t(i["layers.0.w"]))}
    return inputs, expected


def scores_of(q, k, causal, scale):
    """q k^T * scale, -inf above the diagonal when causal, with KV heads
    repeated for GQA."""
    k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
    scores = q @ k.transpose(-2, -1) * scale
    if causal:
        n, m = scores.shape[-2:]
        mask = torch.ones(n, m, dtype=torch.bool).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores


def sdpa(q, k, v, causal, scale):
    """softmax(q k^T * scale + mask) v with KV heads repeated for GQA."""
    v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
    return torch.softmax(scores_of(q, k, causal, scale), dim=-1) @ v


@case
def attention(rng):
    inputs = {"q": randn(rng, 2, 4, 6, 8), "k": randn(rng, 2, 2, 6, 8),
              "v": randn(rng, 2, 2, 6, 8), "k4": randn(rng, 2, 4, 6, 8),
              "v4": randn(rng, 2, 4, 6, 8)}

    def expected(i):
        q = t(i["q"])
        return {"causal_gqa": sdpa(q, t(i["k"]), t(i["v"]), True, 8 ** -0.5),
                "causal_gqa_lse": torch.logsumexp(
                    scores_of(q, t(i["k"]), True, 8 ** -0.5), dim=-1),
                "full_mha": sdpa(q, t(i["k4"]), t(i["v4"]), False, 0.5),
                "full_mha_lse": torch.logsumexp(
                    scores_of(q, t(i["k4"]), False, 0.5), dim=-1)}
    return inputs, expected


@case
def normalization(rng):
    inputs = {"x": randn(rng, 2, 3, 16), "w": randn(rng, 16),
              "b": randn(rng, 16)}

    def expected(i):
        x, w, b = t(i["x"]), t(i["w"]), t(i["b"])
        rms = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w
        return {"rms_norm": rms,
                "layer_norm": F.layer_norm(x, (16,), w, b, 1e-5),
                "softmax_last": torch.softmax(x, 2),
                "softmax_mid": torch.softmax(x, 1),
                "log_softmax": torch.log_softmax(x, 2)}
    return inputs, expected


@case
def rope(rng):
    angles = np.outer(np.arange(6), 500000.0 ** (-np.arange(4) / 4))
    inputs = {"x": randn(rng, 2, 6, 3, 8),
              "cos": np.cos(angles).astype(np.float32),
              "sin": np.sin(angles).astype(np.float32)}

    def expected(i):
        x, cos, sin = t(i["x"]), t(i["cos"]), t(i["sin"])
        # torchtitan: view_as_complex(x) * freqs_cis.
        pairs = torch.view_as_complex(x.reshape(2, 6, 3, 4, 2).contiguous())
        freqs = torch.complex(cos, sin)[None, :, None, :]
        interleaved = torch.view_as_real(pairs * freqs).reshape(2, 6, 3, 8)
        # Hugging Face: x * cos + rotate_half(x) * sin.
        c = torch.cat([cos, cos], -1)[None, :, None, :]
        s = torch.cat([sin, sin], -1)[None, :, None, :]
        rotated = torch.cat([-x[..., 4:], x[..., :4]], -1)
        return {"interleaved": interleaved, "half": x * c + rotated * s}
    return inputs, expected


@case
def loss(rng):
    labels = rng.integers(0, 11, (2, 5))
    labels[0, 1] = -100
    labels[1, 3] = -100
    labels32 = rng.integers(0, 11, (10,)).astype(np.int32)
    labels32[[2, 7]] = 3
    inputs = {"tok_embeddings.weight": randn(rng, 11, 4),
              "tokens": rng.integers(0, 11, (2, 5)),
              "logits": randn(rng, 2, 5, 11), "labels": labels,
              "labels32": labels32}

    def expected(i):
        logits = t(i["logits"])
        return {"embedded": F.embedding(t(i["tokens"]),
                                        t(i["tok_embeddings.weight"])),
                "loss": F.cross_entropy(logits.reshape(10, 11),
                                        t(i["labels"]).reshape(10)),
                "loss_ignore3": F.cross_entropy(logits.reshape(10, 11),
                                                t(i["labels32"]),
                                                ignore_index=3)}
    return inputs, expected


@case
def reductions(rng):
    inputs = {"x": randn(rng, 3, 4, 5)}

    def expected(i):
        x = t(i["x"])
        return {"sum01": x.sum((0, 1)), "max1_keep": x.amax(1, keepdim=True),
                "mean2_keep": x.mean(2, keepdim=True), "mean02": x.mean((0, 2)),
                "sum_all": x.sum()}
    return inputs, expected


@case
def shape_ops(rng):
    inputs = {"x": randn(rng, 2, 3, 4), "i": rng.integers(-50, 50, (6, 4)),
              "bias": randn(rng, 4), "col": randn(rng, 3, 1)}

    def expected(i):
        x, n = t(i["x"]), t(i["i"])
        return {"reshape": x.reshape(6, 4), "transpose": x.permute(2, 0, 1),
                "slice": x[0:2, 1:3, 0:4:2], "concat": torch.cat([x, x], 2),
                "concat_int": torch.cat([n, n], 0),
                "broadcast_bias": t(i["bias"]).expand(2, 3, 4),
                "broadcast_col": t(i["col"]).expand(2, 3, 4),
                "redistribute": t(i["bias"])}
    return inputs, expected


@case
def masks(rng):
    a = randn(rng, 5, 5)
    b = a.copy()
    b[::2] = randn(rng, 3, 5)
    inputs = {"scores": randn(rng, 5, 5), "a": a, "b": b}

    def expected(i):
        a, b = t(i["a"]), t(i["b"])
        future = torch.ones(5, 5, dtype=torch.bool).triu(1)
        scaled = (torch.from_numpy(i["a"]) * 10.0).to(torch.int32)
        return {"masked": t(i["scores"]).masked_fill(future, float("-inf")),
                "lt": a < b, "ge": a >= b, "eq": a == a, "ne": a != b,
                "to_i32": scaled, "to_f64": a,
                "iota_f32": torch.arange(5.0).expand(5, 5),
                "constant": torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.5]])}
    return inputs, expected


@case
def tp(rng):
    inputs = {"x": randn(rng, 4, 8), "w": randn(rng, 6, 8),
              "x_full": randn(rng, 4, 8), "w_col": randn(rng, 6, 8)}

    def expected(i):
        y = t(i["x"]) @ t(i["w"]).T
        return {"row_parallel": y, "row_partial": y,
                "col_parallel": t(i["x_full"]) @ t(i["w_col"]).T}
    return inputs, expected


@case
def fsdp(rng):
    inputs = {"layers.0.w": randn(rng, 8, 4), "x": randn(rng, 8, 4),
              "dy": randn(rng, 8, 8)}

    def expected(i):
        x, dy = t(i["x"]), t(i["dy"])
        chunks = dy.reshape(4, 2, 8)
        return {"y": x @ t(i["layers.0.w"]).T, "grad_w": dy.T @ x,
                "dy_avg": chunks.mean(0), "dy_max": chunks.amax(0)}
    return inputs, expected


@case
def mesh2d(rng):
    inputs = {"x": randn(rng, 4, 8), "z": randn(rng, 8, 4),
              "y": randn(rng, 4, 3)}

    def expected(i):
        x, y = t(i["x"]), t(i["y"])
        block = {(dp, tp): x[2 * dp:2 * dp + 2, 4 * tp:4 * tp + 4]
                 for dp in range(2) for tp in range(2)}
        return {"gather_dp_tp": torch.cat([block[0, 0], block[0, 1],
                                           block[1, 0], block[1, 1]]),
                "gather_tp_dp": torch.cat([block[0, 0], block[1, 0],
                                           block[0, 1], block[1, 1]]),
                "all_to_all": t(i["z"]), "broadcast": y[2:4],
                "from_dp0": y[0:2], "from_dp1": y[2:4]}
    return inputs, expected


@case
def dynamic(rng):
    inputs = {"table": randn(rng, 10, 8), "tokens": rng.integers(0, 10, (3, 5)),
              "w": randn(rng, 8, 8), "v": randn(rng, 6)}

    def expected(i):
        h = F.embedding(t(i["tokens"]), t(i["table"]))
        heads = (h @ t(i["w"])).reshape(3, 5, 2, 4).transpose(1, 2)
        attended = sdpa(heads, heads, heads, True, 0.5)
        return {"hidden": h, "heads": heads, "rows": t(i["v"]).expand(3, 6),
                "attended": attended.transpose(1, 2).reshape(3, 5, 8),
                "flat": h.reshape(-1)}
    return inputs, expected


@case
def uneven(rng):
    inputs = {"x": randn(rng, 5, 4), "p": randn(rng, 3)}

    def expected(i):
        return {"doubled": 2 * t(i["x"]), "reduced": t(i["p"]),
                "partial": t(i["p"])}
    return inputs, expected


def bf16_to_npy(x):
    """A torch bfloat16 tensor as titan's .npy form: raw bits in uint16."""
    return x.view(torch.int16).numpy().view(np.uint16)


def npy_to_bf16(a):
    return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)


def adamw_step(p, g, m, v, lr, step, weight_decay, clip=1.0):
    """torch.optim.AdamW's step (betas 0.9, 0.95, eps 1e-8) of a parameter
    whose state holds m, v and `step` updates; returns p, m, v after it."""
    p = p.clone().requires_grad_(True)
    opt = torch.optim.AdamW([p], lr=lr, betas=(0.9, 0.95), eps=1e-8,
                            weight_decay=weight_decay)
    opt.state[p] = {"step": torch.tensor(float(step)), "exp_avg": m.clone(),
                    "exp_avg_sq": v.clone()}
    p.grad = g * clip
    opt.step()
    state = opt.state[p]
    return p.detach(), state["exp_avg"], state["exp_avg_sq"]


@case
def adamw(rng):
    inputs = {"p": randn(rng, 4, 8), "g": randn(rng, 4, 8) * 0.1,
              "m": randn(rng, 4, 8) * 0.01,
              "v": np.abs(randn(rng, 4, 8)) * 1e-4,
              "lr": np.array(3e-3, dtype=np.float32),
              "step": np.array(5.0, dtype=np.float32),
              "clip": np.array(0.7, dtype=np.float32)}

    def expected(i):
        p, g, m, v = t(i["p"]), t(i["g"]), t(i["m"]), t(i["v"])
        lr, clip = float(i["lr"]), float(i["clip"])
        p1, m1, v1 = adamw_step(p, g, m, v, lr, 5, 0.1, clip)
        p2, m2, v2 = adamw_step(p, g, m, v, lr, 5, 0.0)
        return {"p_clipped": p1, "m_clipped": m1, "v_clipped": v1,
                "p": p2, "m": m2, "v": v2}
    return inputs, expected


@case
def low_precision(rng):
    inputs = {"x": randn(rng, 4, 8),
              "y": bf16_to_npy(torch.from_numpy(randn(rng, 4, 8))
                               .to(torch.bfloat16)),
              "h": randn(rng, 4, 8).astype(np.float16)}

    def expected(i):
        x_bf16 = torch.from_numpy(i["x"]).to(torch.bfloat16)
        total = x_bf16 + npy_to_bf16(i["y"])
        h = torch.from_numpy(i["h"])
        return {"x_bf16": x_bf16, "sum_bf16": total, "mul_f16": h * h,
                "back_f32": total.float()}
    return inputs, expected


def compare(name, got, want):
    """Compares an output with its expected torch value; returns an error
    message or None."""
    if want.dtype == torch.bfloat16:
        if got.dtype != np.uint16:
            return f"{name}: expected bf16 bits (uint16), got {got.dtype}"
        got = npy_to_bf16(got).double().numpy()
        want = want.double()
    want = want.numpy()
    if got.shape != want.shape:
        return f"{name}: shape {got.shape}, expected {want.shape}"
    if want.dtype == np.bool_ or want.dtype.kind in "iu":
        if got.dtype.kind != want.dtype.kind or not np.array_equal(got, want):
            return f"{name}: {got} != {want}"
        return None
    if not np.allclose(got.astype(np.float64), want, rtol=RTOL, atol=ATOL,
                       equal_nan=True):
        err = np.abs(got.astype(np.float64) - want).max()
        return f"{name}: max abs error {err}"
    return None


def main():
    mode, name, directory = sys.argv[1:4]
    rng = np.random.default_rng(sum(map(ord, name)))
    inputs, expected = CASES[name](rng)
    if mode == "gen":
        os.makedirs(directory, exist_ok=True)
        for key, value in inputs.items():
            np.save(os.path.join(directory, key + ".npy"), value)
        return 0
    loaded = {key: np.load(os.path.join(directory, key + ".npy"))
              for key in inputs}
    errors = []
    for key, want in expected(loaded).items():
        path = os.path.join(directory, "out", key + ".npy")
        if not os.path.exists(path):
            errors.append(f"{key}: missing {path}")
            continue
        error = compare(key, np.load(path), want)
        if error:
            errors.append(error)
    for error in errors:
        print("error:", error)
    if not errors:
        print(f"{name}: {len(expected(loaded))} outputs match")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
