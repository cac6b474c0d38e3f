"""PyTorch's side of tools/bench/gpu.sh: the operations titan-cuda-bench
times, in PyTorch eager and under torch.compile, on the same GPU and shapes,
and the table of titan's times against them.

usage:
  gpu_torch_baseline.py measure --json OUT [--shapes 1x2048,4x4096]
      [--compile-shapes 4x4096,...] [--warmup N] [--iters N] [--budget-s S]
      [--no-compile] [--no-flush-l2] [--device cuda|cpu] [--tiny]
  gpu_torch_baseline.py compare --titan-json T [--torch-json P]
      [--markdown OUT]

`measure` times, per batch x sequence of --shapes, the Llama 3 ~1B-proxy
operations (dim 2048, 16 heads of 128, 8 KV heads, FFN 8192, vocabulary
128,256) as a PyTorch training step runs them: the linear layers' GEMMs
(forward y = x W^T, dx = dy W, dW = dy^T x), F.rms_norm, torchtitan's
complex RoPE, SwiGLU, softmax over attention scores,
F.scaled_dot_product_attention (causal, GQA), cross-entropy on the logits
in f32 (as torchtitan), the embedding and its gradient, and AdamW
(fused=True) over the model's parameters. Backward times are those of
torch.autograd.grad after an untimed forward. Each operation is called
--warmup times, then timed --iters times with CUDA events, the L2 cache
flushed before each call (as titan-cuda-bench does); the median is kept.
Eager runs first for every shape; torch.compile (static shapes, default
mode) follows for the memory-bound operations on --compile-shapes (default
--shapes), in that order, while the time budget lasts
(GEMMs and attention call the same cuBLAS and flash kernels compiled or
not, and compiling the optimizer takes minutes: they are timed eagerly
only). The JSON is rewritten after every measurement.

`compare` needs no torch: it joins titan-cuda-bench's JSON with this
script's and prints one table, per operation and shape: titan's time,
achieved rate and share of the H200's peak, PyTorch's eager and compiled
times, and the ratios titan/eager and titan/compile (time over time: below
1, titan is faster), with the geometric mean of each ratio.

--device cpu --tiny runs the whole flow on small shapes on the CPU (a
smoke test of this script where no GPU is).
"""

import argparse
import json
import math
import os
import statistics
import sys
import time
import traceback

# The proxy model, as titan-cuda-bench's ModelShape.
MODEL = {
    "dim": 2048,
    "heads": 16,
    "kv_heads": 8,
    "head_dim": 128,
    "ffn": 8192,
    "vocab": 128256,
    "layers": 16,
    "eps": 1e-5,
}
TINY_MODEL = {
    "dim": 64,
    "heads": 4,
    "kv_heads": 2,
    "head_dim": 16,
    "ffn": 128,
    "vocab": 1000,
    "layers": 2,
    "eps": 1e-5,
}
DEFAULT_SHAPES = "1x2048,1x4096,4x2048,4x4096"
TINY_SHAPES = "1x32,2x64"
# Bytes overwritten before each timed call (several times the H200's L2).
FLUSH_BYTES = 256 << 20


def parse_shapes(text):
    shapes = []
    for part in text.split(","):
        if not part:
            continue
        batch, _, seq = part.partition("x")
        if not batch.isdigit() or not seq.isdigit():
            raise SystemExit(f"gpu_torch_baseline.py: bad shape '{part}' (BATCHxSEQ)")
        shapes.append((int(batch), int(seq)))
    return shapes


def shape_name(batch, seq):
    return f"b{batch}s{seq}"


class Recorder:
    """The measurements so far, rewritten to the JSON file after each."""

    def __init__(self, path, header):
        self.path = path
        self.data = dict(header, results=[], errors=[], skipped=[])

    def save(self):
        if not self.path:
            return
        partial = self.path + ".partial"
        with open(partial, "w") as file:
            json.dump(self.data, file, indent=1)
        os.replace(partial, self.path)

    def result(self, op, shape, mode, median_ms, min_ms, iterations, detail, **extra):
        row = dict(op=op, shape=shape, mode=mode, median_ms=median_ms,
                   min_ms=min_ms, iterations=iterations, detail=detail, **extra)
        self.data["results"].append(row)
        print(f"{op:<24} {shape:<8} {mode:<8} {median_ms:10.4f} ms  {detail}",
              flush=True)
        self.save()

    def error(self, op, shape, mode, message):
        self.data["errors"].append(dict(op=op, shape=shape, mode=mode, message=message))
        print(f"FAILED {op} {shape} {mode}: {message}", flush=True)
        self.save()

    def skip(self, what, why):
        self.data["skipped"].append(dict(what=what, why=why))
        print(f"skipped {what}: {why}", flush=True)
        self.save()


class Timer:
    """Warm-up calls, then timed calls between CUDA events (wall clock on
    the CPU), each after an L2 flush; the median and the minimum in ms."""

    def __init__(self, torch, device, warmup, iterations, flush_l2):
        self.torch = torch
        self.cuda = device == "cuda"
        self.warmup = warmup
        self.iterations = max(1, iterations)
        self.flush = None
        if self.cuda and flush_l2:
            self.flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device=device)

    def time(self, body, setup=None):
        """Times body(state) with state = setup() prepared, untimed, before
        each call (the forward whose backward is timed)."""
        torch = self.torch
        for _ in range(self.warmup):
            body(setup() if setup else None)
        times = []
        if self.cuda:
            events = []
            for i in range(self.iterations):
                state = setup() if setup else None
                if self.flush is not None:
                    self.flush.fill_(i & 0xFF)
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                body(state)
                end.record()
                events.append((start, end))
            torch.cuda.synchronize()
            times = [start.elapsed_time(end) for start, end in events]
        else:
            for _ in range(self.iterations):
                state = setup() if setup else None
                begin = time.perf_counter()
                body(state)
                times.append((time.perf_counter() - begin) * 1e3)
        return statistics.median(times), min(times), self.iterations


def rms_norm_function(torch, F, eps):
    if hasattr(F, "rms_norm"):
        def rms_norm(x, weight):
            return F.rms_norm(x, (x.shape[-1],), weight, eps)
    else:  # PyTorch before 2.4 (the CPU smoke test)
        def rms_norm(x, weight):
            xf = x.float()
            normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
            return normed.type_as(x) * weight
    return rms_norm


def rope(torch, x, freqs_cis):
    """torchtitan's apply_rotary_emb on q [batch, seq, heads, head_dim]:
    interleaved pairs as complex numbers."""
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    rotated = xc * freqs_cis.view(1, x.shape[1], 1, -1)
    return torch.view_as_real(rotated).flatten(3).type_as(x)


def swiglu(F, h):
    gate, up = h.chunk(2, dim=-1)
    return F.silu(gate) * up


class Baseline:
    def __init__(self, args, recorder):
        import torch
        import torch.nn.functional as F

        self.torch = torch
        self.F = F
        self.args = args
        self.recorder = recorder
        self.model = TINY_MODEL if args.tiny else MODEL
        self.device = args.device
        self.dtype = torch.bfloat16
        self.timer = Timer(torch, args.device, args.warmup, args.iters,
                           not args.no_flush_l2)
        self.deadline = time.monotonic() + args.budget_s
        self.rms_norm = rms_norm_function(torch, F, self.model["eps"])
        self.compiled = {}
        self.mm_out_dtype = self._probe_mm_out_dtype()

    # Inputs -------------------------------------------------------------

    def randn(self, *shape, dtype=None, grad=False, scale=1.0):
        tensor = self.torch.randn(*shape, device=self.device,
                                  dtype=dtype or self.dtype) * scale
        return tensor.requires_grad_(grad)

    def _probe_mm_out_dtype(self):
        """Whether torch.mm takes out_dtype (bf16 operands, f32 result), as
        titan's weight-gradient GEMM writes f32."""
        a = self.randn(16, 16)
        try:
            result = self.torch.mm(a, a, out_dtype=self.torch.float32)
            return result.dtype == self.torch.float32
        except Exception:  # noqa: BLE001 - TypeError, or not for this device
            return False

    # Measuring ------------------------------------------------------------

    def measure(self, op, shape, mode, detail, body, setup=None, **extra):
        try:
            median, best, iterations = self.timer.time(body, setup)
            self.recorder.result(op, shape, mode, median, best, iterations, detail,
                                 **extra)
        except Exception as error:  # noqa: BLE001 - report and go on
            message = f"{type(error).__name__}: {error}".splitlines()[0][:400]
            self.recorder.error(op, shape, mode, message)
            if os.environ.get("TITAN_BENCH_TRACEBACK"):
                traceback.print_exc()

    def function(self, name, python_function, mode):
        """The eager function, or its torch.compile'd form (static shapes)."""
        if mode == "eager":
            return python_function
        key = name
        if key not in self.compiled:
            self.compiled[key] = self.torch.compile(python_function, dynamic=False)
        return self.compiled[key]

    def forward_backward(self, op, shape, mode, detail, fn, inputs, grad_inputs,
                         grad_output=None):
        """Times fn(*inputs) as "<op>.fwd" and the gradients of its output
        with respect to grad_inputs as "<op>.bwd"."""
        torch = self.torch

        def forward(_):
            return fn(*inputs)

        def setup():
            out = fn(*inputs)
            return out, grad_output if grad_output is not None else torch.ones_like(out)

        def backward(state):
            out, cotangent = state
            torch.autograd.grad(out, grad_inputs, cotangent)

        self.measure(op + ".fwd", shape, mode, detail, forward)
        self.measure(op + ".bwd", shape, mode, detail, backward, setup)

    # The operations ---------------------------------------------------------

    def gemms(self, batch, seq):
        torch, m = self.torch, self.model
        t, shape = batch * seq, shape_name(batch, seq)
        qkv = (m["heads"] + 2 * m["kv_heads"]) * m["head_dim"]
        linears = [("attn_qkv", m["dim"], qkv),
                   ("attn_out", m["heads"] * m["head_dim"], m["dim"]),
                   ("ffn_w13", m["dim"], 2 * m["ffn"]),
                   ("ffn_w2", m["ffn"], m["dim"]),
                   ("lm_head", m["dim"], m["vocab"])]
        for name, fan_in, fan_out in linears:
            op = "gemm." + name
            try:
                x = self.randn(t, fan_in)
                w = self.randn(fan_out, fan_in, scale=0.02)
                dy = self.randn(t, fan_out)
            except Exception as error:  # noqa: BLE001
                self.recorder.error(op, shape, "eager", f"allocation: {error}")
                continue
            out_dtype = "f32" if self.mm_out_dtype else "bf16 (no mm out_dtype)"
            self.measure(op + ".fwd", shape, "eager",
                         f"m={t} n={fan_out} k={fan_in} F.linear bf16",
                         lambda _: torch.nn.functional.linear(x, w))
            self.measure(op + ".dx", shape, "eager",
                         f"m={t} n={fan_in} k={fan_out} bf16",
                         lambda _: torch.mm(dy, w))
            if self.mm_out_dtype:
                def weight_grad(_):
                    torch.mm(dy.t(), x, out_dtype=torch.float32)
            else:
                def weight_grad(_):
                    torch.mm(dy.t(), x)
            self.measure(op + ".dw", shape, "eager",
                         f"m={fan_out} n={fan_in} k={t} bf16->{out_dtype}",
                         weight_grad)

    def memory_bound(self, batch, seq, mode):
        """The operations torch.compile can fuse, in `mode`."""
        torch, F, m = self.torch, self.F, self.model
        t, shape = batch * seq, shape_name(batch, seq)
        d, heads, head_dim, ffn, vocab = (m["dim"], m["heads"], m["head_dim"],
                                          m["ffn"], m["vocab"])

        def rmsnorm_case():
            x = self.randn(t, d, grad=True)
            w = (torch.rand(d, device=self.device, dtype=self.dtype) + 0.5).requires_grad_()
            fn = self.function("rmsnorm", self.rms_norm, mode)
            self.forward_backward("rmsnorm", shape, mode, f"[{t}, {d}] bf16", fn,
                                  (x, w), (x, w))

        def rope_case():
            x = self.randn(batch, seq, heads, head_dim, grad=True)
            angles = torch.rand(seq, head_dim // 2, device=self.device) * 6.28
            freqs_cis = torch.polar(torch.ones_like(angles), angles)
            fn = self.function("rope", lambda a, b: rope(torch, a, b), mode)
            self.forward_backward("rope", shape, mode,
                                  f"q [{batch}, {seq}, {heads}, {head_dim}] bf16, complex",
                                  fn, (x, freqs_cis), (x,))

        def swiglu_case():
            h = self.randn(t, 2 * ffn, grad=True)
            fn = self.function("swiglu", lambda a: swiglu(F, a), mode)
            self.forward_backward("swiglu", shape, mode,
                                  f"[{t}, {ffn}] of a fused [{t}, {2 * ffn}] bf16",
                                  fn, (h,), (h,))

        def softmax_case():
            rows = batch * heads * seq
            x = self.randn(rows, seq, grad=True, scale=2.0)
            fn = self.function("softmax", lambda a: torch.softmax(a, dim=-1), mode)
            self.forward_backward("softmax", shape, mode, f"[{rows}, {seq}] bf16", fn,
                                  (x,), (x,))

        def cross_entropy_case():
            logits = self.randn(t, vocab, grad=True, scale=2.0)
            labels = torch.randint(0, vocab, (t,), device=self.device)
            fn = self.function(
                "cross_entropy",
                lambda a, b: F.cross_entropy(a.float(), b), mode)
            self.forward_backward("cross_entropy", shape, mode,
                                  f"logits [{t}, {vocab}] bf16 (loss in f32), labels i64",
                                  fn, (logits, labels), (logits,))

        def embedding_case():
            table = self.randn(vocab, d, grad=True)
            ids = torch.randint(0, vocab, (t,), device=self.device)
            fn = self.function("embedding", lambda a, b: F.embedding(b, a), mode)
            self.forward_backward("embedding", shape, mode,
                                  f"table [{vocab}, {d}] bf16, {t} ids i64", fn,
                                  (table, ids), (table,))

        cases = [("rmsnorm", rmsnorm_case), ("rope", rope_case),
                 ("swiglu", swiglu_case), ("softmax", softmax_case),
                 ("cross_entropy", cross_entropy_case),
                 ("embedding", embedding_case)]
        for name, case in cases:
            if mode == "compile" and time.monotonic() > self.deadline:
                self.recorder.skip(f"{name} {shape} compile", "time budget")
                continue
            started = time.monotonic()
            try:
                case()
            except Exception as error:  # noqa: BLE001 - report and go on
                self.recorder.error(name, shape, mode,
                                    f"{type(error).__name__}: {error}".splitlines()[0][:400])
            if mode == "compile":
                print(f"  ({name} {shape} compiled and timed in "
                      f"{time.monotonic() - started:.1f} s)", flush=True)
            if self.device == "cuda":
                torch.cuda.empty_cache()

    def attention(self, batch, seq):
        F, m = self.F, self.model
        shape = shape_name(batch, seq)
        heads, kv_heads, head_dim = m["heads"], m["kv_heads"], m["head_dim"]
        if not hasattr(F, "scaled_dot_product_attention"):
            self.recorder.error("attention", shape, "eager",
                                "this PyTorch has no F.scaled_dot_product_attention")
            return
        q = self.randn(batch, heads, seq, head_dim, grad=True)
        k = self.randn(batch, kv_heads, seq, head_dim, grad=True)
        v = self.randn(batch, kv_heads, seq, head_dim, grad=True)

        def sdpa(a, b, c):
            return F.scaled_dot_product_attention(a, b, c, is_causal=True,
                                                  enable_gqa=True)

        try:
            sdpa(q, k, v)
            detail = (f"q [{batch}, {heads}, {seq}, {head_dim}] bf16, {kv_heads} kv heads, "
                      "causal, SDPA enable_gqa")
            fn = sdpa
        except Exception:  # noqa: BLE001 - no enable_gqa in this PyTorch
            # K and V repeated per query head (outside the timing).
            group = heads // kv_heads
            k = k.detach().repeat_interleave(group, dim=1).requires_grad_()
            v = v.detach().repeat_interleave(group, dim=1).requires_grad_()
            detail = (f"q [{batch}, {heads}, {seq}, {head_dim}] bf16, kv repeated to "
                      f"{heads} heads, causal, SDPA")

            def fn(a, b, c):
                return F.scaled_dot_product_attention(a, b, c, is_causal=True)
        self.forward_backward("attention", shape, "eager", detail, fn, (q, k, v),
                              (q, k, v))

    def adamw(self):
        torch, m = self.torch, self.model
        d, q = m["dim"], m["heads"] * m["head_dim"]
        kv, ffn, vocab = m["kv_heads"] * m["head_dim"], m["ffn"], m["vocab"]
        shapes = [(vocab, d)]
        for _ in range(m["layers"]):
            shapes += [(q, d), (kv, d), (kv, d), (d, q), (ffn, d), (ffn, d),
                       (d, ffn), (d,), (d,)]
        shapes += [(d,), (vocab, d)]
        numel = sum(math.prod(s) for s in shapes)
        try:
            params = [torch.nn.Parameter(self.randn(*s, dtype=torch.float32, scale=0.02))
                      for s in shapes]
            for p in params:
                p.grad = self.randn(*p.shape, dtype=torch.float32, scale=1e-3)
        except Exception as error:  # noqa: BLE001
            self.recorder.error("adamw.grad_f32", "model", "eager", f"allocation: {error}")
            return
        for kind in ("fused", "foreach"):
            try:
                optimizer = torch.optim.AdamW(params, lr=8e-4, betas=(0.9, 0.95),
                                              eps=1e-8, weight_decay=0.1,
                                              **{kind: True})
            except Exception as error:  # noqa: BLE001 - fused needs PyTorch 2.0
                self.recorder.error("adamw.grad_f32", "model", kind, f"{error}")
                continue
            # "eager" is torch's best eager optimizer (fused); foreach is
            # recorded as its own mode.
            mode = "eager" if kind == "fused" else "foreach"
            step = optimizer.step
            self.measure("adamw.grad_f32", "model", mode,
                         f"{len(shapes)} tensors, {numel} parameters, "
                         f"torch.optim.AdamW({kind}=True)",
                         lambda _: step())
        del params

    def run(self, shapes, compile_shapes, compile_too):
        torch = self.torch
        for batch, seq in shapes:
            self.gemms(batch, seq)
            self.memory_bound(batch, seq, "eager")
            self.attention(batch, seq)
            if self.device == "cuda":
                torch.cuda.empty_cache()
        self.adamw()
        if self.device == "cuda":
            torch.cuda.empty_cache()
        if not compile_too:
            self.recorder.skip("torch.compile", "--no-compile")
            return
        if not hasattr(torch, "compile"):
            self.recorder.skip("torch.compile", f"PyTorch {torch.__version__} has none")
            return
        try:
            import torch._dynamo as dynamo
            # One compiled graph per shape and function: more than the default.
            for name in ("cache_size_limit", "recompile_limit"):
                if hasattr(dynamo.config, name):
                    setattr(dynamo.config, name, 64)
        except ImportError:
            pass
        for batch, seq in compile_shapes:
            if time.monotonic() > self.deadline:
                self.recorder.skip(f"torch.compile {shape_name(batch, seq)}",
                                   "time budget")
                continue
            self.memory_bound(batch, seq, "compile")


def run_measure(args):
    try:
        import torch
    except ImportError as error:
        print(f"gpu_torch_baseline.py: no PyTorch: {error}", file=sys.stderr)
        return 2
    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu_torch_baseline.py: PyTorch has no usable CUDA device "
              f"(torch {torch.__version__})", file=sys.stderr)
        return 2
    device_name = (torch.cuda.get_device_name() if args.device == "cuda" else "cpu")
    shapes = parse_shapes(args.shapes or (TINY_SHAPES if args.tiny else DEFAULT_SHAPES))
    compile_shapes = parse_shapes(args.compile_shapes) if args.compile_shapes else shapes
    header = {
        "tool": "gpu_torch_baseline",
        "torch": torch.__version__,
        "device": device_name,
        "options": {"shapes": [shape_name(b, s) for b, s in shapes],
                    "compile_shapes": [shape_name(b, s) for b, s in compile_shapes],
                    "warmup": args.warmup, "iterations": args.iters,
                    "flush_l2": not args.no_flush_l2,
                    "model": TINY_MODEL if args.tiny else MODEL},
    }
    print(f"PyTorch {torch.__version__} on {device_name}; shapes "
          f"{', '.join(header['options']['shapes'])}; {args.warmup} warm-up calls, "
          f"median of {args.iters}; budget {args.budget_s:.0f} s", flush=True)
    torch.manual_seed(0)
    recorder = Recorder(args.json, header)
    recorder.save()
    baseline = Baseline(args, recorder)
    baseline.run(shapes, compile_shapes, not args.no_compile)
    errors = len(recorder.data["errors"])
    print(f"{len(recorder.data['results'])} measurements, {errors} failed", flush=True)
    return 1 if errors else 0


# Comparing ----------------------------------------------------------------


def load(path):
    if not path:
        return None
    try:
        with open(path) as file:
            return json.load(file)
    except (OSError, ValueError) as error:
        print(f"gpu_torch_baseline.py: cannot read {path}: {error}", file=sys.stderr)
        return None


def rate_text(row):
    if row.get("bound") == "compute":
        return f"{row['tflops']:.1f} TFLOP/s"
    return f"{row['gbps']:.0f} GB/s"


def ratio(titan_ms, torch_ms):
    if titan_ms is None or not torch_ms:
        return None
    return titan_ms / torch_ms


def fmt(value, pattern):
    return "-" if value is None else pattern.format(value)


def compare(args):
    titan = load(args.titan_json)
    if titan is None:
        print("gpu_torch_baseline.py: no titan-cuda-bench results to compare",
              file=sys.stderr)
        return 2
    torch_data = load(args.torch_json) or {"results": [], "torch": None}
    torch_ms = {}
    for row in torch_data.get("results", []):
        torch_ms[(row["op"], row["shape"], row["mode"])] = row["median_ms"]

    columns = ["op", "shape", "titan ms", "titan rate", "% peak", "eager ms",
               "compile ms", "titan/eager", "titan/compile"]
    rows, ratios = [], {"eager": [], "compile": []}
    for result in titan.get("results", []):
        key = (result["op"], result["shape"])
        eager = torch_ms.get(key + ("eager",))
        compiled = torch_ms.get(key + ("compile",))
        over_eager = ratio(result["median_ms"], eager)
        over_compile = ratio(result["median_ms"], compiled)
        if over_eager:
            ratios["eager"].append(over_eager)
        if over_compile:
            ratios["compile"].append(over_compile)
        rows.append([result["op"], result["shape"], fmt(result["median_ms"], "{:.4f}"),
                     rate_text(result), fmt(result.get("peak_pct"), "{:.1f}%"),
                     fmt(eager, "{:.4f}"), fmt(compiled, "{:.4f}"),
                     fmt(over_eager, "{:.2f}"), fmt(over_compile, "{:.2f}")])

    def geomean(values):
        return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None

    summary = (f"geometric mean of titan/eager over {len(ratios['eager'])} ops: "
               f"{fmt(geomean(ratios['eager']), '{:.2f}')}; of titan/compile over "
               f"{len(ratios['compile'])} ops: {fmt(geomean(ratios['compile']), '{:.2f}')}")
    header = (f"titan-cuda-bench on {titan.get('device_description', titan.get('device'))}; "
              f"PyTorch {torch_data.get('torch') or '(not run)'} on the same GPU. "
              "Times are medians in ms; ratios are titan's time over PyTorch's "
              "(below 1: titan is faster); % peak is of 989 TFLOP/s bf16 (GEMMs, "
              "attention) or 4.8 TB/s HBM (the others).")
    widths = [max(len(str(row[i])) for row in rows + [columns]) for i in range(len(columns))]
    print(header)
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))
    print(summary)
    for failure in titan.get("failures", []):
        print(f"titan FAILED {failure['op']} {failure['shape']}: {failure['message']}")
    for failure in torch_data.get("errors", []):
        print(f"torch FAILED {failure['op']} {failure['shape']} {failure['mode']}: "
              f"{failure['message']}")
    for skipped in torch_data.get("skipped", []):
        print(f"torch skipped {skipped['what']}: {skipped['why']}")
    if args.markdown:
        with open(args.markdown, "w") as file:
            file.write(header + "\n\n")
            file.write("| " + " | ".join(columns) + " |\n")
            file.write("|" + "---|" * len(columns) + "\n")
            for row in rows:
                file.write("| " + " | ".join(str(c) for c in row) + " |\n")
            file.write("\n" + summary + "\n")
    return 0


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("measure", help="time PyTorch")
    run.add_argument("--json", default="")
    run.add_argument("--shapes", default="")
    run.add_argument("--compile-shapes", default="",
                     help="the shapes torch.compile runs, in order (default: --shapes)")
    run.add_argument("--warmup", type=int, default=3)
    run.add_argument("--iters", type=int, default=20)
    run.add_argument("--budget-s", type=float, default=240.0,
                     help="stop starting torch.compile measurements after this")
    run.add_argument("--no-compile", action="store_true")
    run.add_argument("--no-flush-l2", action="store_true")
    run.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    run.add_argument("--tiny", action="store_true",
                     help="small model and shapes (a smoke test)")
    join = commands.add_parser("compare", help="titan against PyTorch")
    join.add_argument("--titan-json", required=True)
    join.add_argument("--torch-json", default="")
    join.add_argument("--markdown", default="")
    args = parser.parse_args()
    return run_measure(args) if args.command == "measure" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
