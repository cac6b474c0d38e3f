"""PyTorch's side of tools/bench/gpu.sh: the operations titan-cuda-bench
times, and a whole training step of its proxy, in PyTorch eager and under
torch.compile, on the same GPU and shapes, and the table of titan's times
against them.

usage:
  gpu_torch_baseline.py measure --json OUT [--shapes 1x2048,4x4096]
      [--compile-shapes 4x4096,...] [--warmup N] [--iters N] [--budget-s S]
      [--no-compile] [--no-flush-l2] [--device cuda|cpu] [--tiny]
  gpu_torch_baseline.py step --json OUT [--batch 1] [--seq 2048] [--steps 10]
      [--warmup 3] [--modes eager,compile] [--device cuda|cpu]
      [--precision bf16-params|autocast|bf16] [--ops torchtitan|as-written]
      [--compile-scope block|model] [--count-only]
      [--dim D --layers L --heads H --kv-heads K --ffn F --vocab V]
  gpu_torch_baseline.py compare --titan-json T [--torch-json P]
      [--titan-step S --torch-step P2]... [--titan-step-compiled S2]
      [--titan-step-bf16 S3 --torch-step-bf16 P3] [--markdown OUT]

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

`step` times a whole training step of the same proxy (dim 2048, 16
layers, 16 query heads of 128, 8 KV heads, FFN 8192, vocabulary 128,256,
untied output, RoPE theta 500,000, norm eps 1e-5: 1,532,037,120
parameters), built by the repository's own models/llama3/model.py, on
seeded random token ids and labels, --batch x --seq (1 x 2048): the step
torchtitan runs under FSDP2's mixed precision on one GPU (TrainStep
below: f32 masters, a bf16 copy computing, f32 logits and loss, clipping
to 1.0, fused AdamW, zero_grad), in eager mode and under torch.compile
(each block and the loss, as torchtitan). By default the model's
attention and RMSNorm are swapped for F.scaled_dot_product_attention and
F.rms_norm (torchtitan's; the model itself is written for torch 1.13's
TorchScript). The first --warmup steps are untimed (the first, compiling,
timed on its own); then --steps steps, each between CUDA events: median
and mean ms per step, tokens/s (batch * seq over the median), MFU
(torchtitan's FLOPs per token times tokens/s over the H200's 989.5 TFLOP/s
dense bf16) and torch.cuda.max_memory_allocated. The JSON
({"device", "torch", "proxy": {shapes, params}, "options",
"steps": {"eager": {...}, "compile": {...}}, "notes"}) is rewritten after
each mode; a mode that fails records {"error"}, one not run {"skipped"}.
--count-only prints the parameter and FLOP counts (from the model on the
meta device) and stops.

`compare` needs no torch: it joins titan-cuda-bench's JSON with this
script's and prints one table, per operation and shape: titan's time,
achieved rate and share of the H200's peak, PyTorch's eager and compiled
times, and the ratios titan/eager and titan/compile (time over time: below
1, titan is faster), with the geometric mean of each ratio. With
--titan-step, titan's training-step JSON:

    {"ms_per_step_median": 61.2,     # ms per training step, the median
     "tokens_per_second": 33463.0,   # batch * seq over that median
     "mfu": 0.285,                   # a fraction (not %) of 989.5e12 FLOP/s,
                                     # torchtitan's FLOPs per token (above)
     "memory_bytes": 41234567890,    # the step's GPU memory, bytes
     "batch": 1, "seq": 2048}        # optional: the shape it ran

it adds a table "training step: titan vs PyTorch eager / compile" (ms per
step, tokens/s, MFU, memory, titan/eager and titan/compile; with
--titan-step-compiled, of the same form, a row for the step with RMSNorm
and the loss as compiled kernels; with --titan-step-bf16 and
--torch-step-bf16, rows for both steps in pure bf16) to both outputs, from the `step` JSON's "steps": --torch-step's, or
--torch-json's if it has them (a missing value prints as -). --titan-step
and --torch-step repeat in pairs: one table per batch shape.

--device cpu --tiny runs the whole flow on small shapes on the CPU (a
smoke test of this script where no GPU is).
"""

import argparse
import contextlib
import copy
import gc
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
        # float32 parameters (titan's masters) and bf16 ones (pure bf16
        # training: titanrt_fused_adamw's bf16_params), gradients alike.
        for dtype, op in ((torch.float32, "adamw.grad_f32"),
                          (torch.bfloat16, "adamw.bf16_params")):
            try:
                params = [torch.nn.Parameter(self.randn(*s, dtype=dtype, scale=0.02))
                          for s in shapes]
                for p in params:
                    p.grad = self.randn(*p.shape, dtype=dtype, scale=1e-3)
            except Exception as error:  # noqa: BLE001
                self.recorder.error(op, "model", "eager", f"allocation: {error}")
                continue
            for kind in ("fused", "foreach"):
                try:
                    optimizer = torch.optim.AdamW(params, lr=8e-4, betas=(0.9, 0.95),
                                                  eps=1e-8, weight_decay=0.1,
                                                  **{kind: True})
                except Exception as error:  # noqa: BLE001 - fused needs PyTorch 2.0
                    self.recorder.error(op, "model", kind, f"{error}")
                    continue
                # "eager" is torch's best eager optimizer (fused); foreach is
                # recorded as its own mode.
                mode = "eager" if kind == "fused" else "foreach"
                step = optimizer.step
                self.measure(op, "model", mode,
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
        # One compiled graph per shape and function: more than the default.
        raise_dynamo_cache_limit()
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


# The training step ---------------------------------------------------------

# The H200's dense bf16 peak (docs/cost-model.md), MFU's denominator.
H200_BF16_PEAK_FLOPS = 989.5e12
# titan-cuda-bench's ~1B proxy as the repository's ModelArgs describes it.
PROXY = {"dim": 2048, "layers": 16, "heads": 16, "kv_heads": 8, "ffn": 8192,
         "vocab": 128256, "rope_theta": 500000.0, "norm_eps": 1e-5}
PROXY_PARAMS = 1_532_037_120
STEP_MODES = ("eager", "compile")


def import_llama3():
    """models/llama3/model.py (the repository's own Llama 3)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    models = os.path.join(root, "models")
    if models not in sys.path:
        sys.path.insert(0, models)
    from llama3 import model as llama3  # noqa: E402 - after the path
    return llama3


def step_model_args(llama3, args):
    """ModelArgs for --dim/--layers/... (the proxy by default).

    head_dim is dim / heads. The FFN hidden size is ModelArgs' rule,
    multiple_of * ceil(int(multiplier * int(8 * dim / 3)) / multiple_of):
    for the proxy, int(1.3 * 5461) = 7099 rounded up to 8192 (multiple_of
    8192); for another --ffn, multiple_of = --ffn and a multiplier that
    puts the product in (0, ffn]."""
    base = int(2 * (4 * args.dim) / 3)
    if (args.dim, args.ffn) == (PROXY["dim"], PROXY["ffn"]):
        multiple_of, multiplier = PROXY["ffn"], 1.3
    else:
        multiple_of, multiplier = args.ffn, args.ffn / base
    margs = llama3.ModelArgs(
        dim=args.dim, n_layers=args.layers, n_heads=args.heads,
        n_kv_heads=args.kv_heads, vocab_size=args.vocab, multiple_of=multiple_of,
        ffn_dim_multiplier=multiplier, norm_eps=PROXY["norm_eps"],
        rope_theta=PROXY["rope_theta"], max_seq_len=args.seq, rope_style="complex")
    margs.validate()
    if margs.ffn_hidden_dim != args.ffn:
        raise SystemExit(f"gpu_torch_baseline.py: FFN hidden size {margs.ffn_hidden_dim} "
                         f"is not --ffn {args.ffn}")
    return margs


def parameter_counts(torch, llama3, margs):
    """(all parameters, the token embedding's), from the model built on the
    meta device (no storage), checked against the shapes' sums."""
    d, q = margs.dim, margs.n_heads * margs.head_dim
    kv, ffn, vocab = margs.kv_heads * margs.head_dim, margs.ffn_hidden_dim, margs.vocab_size
    per_layer = q * d + 2 * kv * d + d * q + 3 * ffn * d + 2 * d
    embedding = vocab * d
    by_shapes = 2 * embedding + margs.n_layers * per_layer + d  # untied output
    try:
        model = llama3.Transformer(margs, device=torch.device("meta"))
        total = sum(p.numel() for p in model.parameters())
        embedding = model.tok_embeddings.weight.numel()
    except Exception as error:  # noqa: BLE001 - no meta device: the shapes
        print(f"(meta device: {type(error).__name__}: {error}; counted from the shapes)")
        return by_shapes, embedding
    if total != by_shapes:
        raise SystemExit(f"gpu_torch_baseline.py: the model has {total} parameters, "
                         f"its shapes {by_shapes}")
    return total, embedding


def flops_per_token(margs, params, embedding, seq):
    """torchtitan's model FLOPs per token (get_nparams_and_flops):

        6 * (N - N_embedding) + 12 * l * h * q * t

    N the parameters, N_embedding the token embedding's (the untied output
    projection counts), l layers, h query heads, q head_dim, t the
    sequence: 6 FLOPs per weight and token (2 forward, 4 backward) and
    12 * l * h * q * t for QK^T and PV, forward and backward (causality
    not discounted)."""
    return (6 * (params - embedding)
            + 12 * margs.n_layers * margs.n_heads * margs.head_dim * seq)


def torchtitan_modules(torch, F, llama3):
    """Subclasses of the model's Attention and RMSNorm that compute as
    torchtitan's do where this PyTorch can: attention through
    F.scaled_dot_product_attention (flash, causal; K and V repeated per
    query head as torchtitan's repeat_kv) instead of matmul + mask +
    softmax, and F.rms_norm (nn.RMSNorm's) instead of the hand-written
    norm. None for either that this PyTorch lacks."""
    attention = norm = None
    if hasattr(F, "scaled_dot_product_attention"):
        class SdpaAttention(llama3.Attention):
            def forward(self, x, rope_a, rope_b):
                bsz, seqlen, _ = x.shape
                xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)
                xk = self.wk(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
                xv = self.wv(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
                xq = llama3.apply_rope_complex(xq, rope_a)
                xk = llama3.apply_rope_complex(xk, rope_a)
                q = xq.transpose(1, 2)
                k = llama3.repeat_kv(xk, self.n_rep).transpose(1, 2)
                v = llama3.repeat_kv(xv, self.n_rep).transpose(1, 2)
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                return self.wo(out.transpose(1, 2).contiguous().view(bsz, seqlen, -1))
        attention = SdpaAttention
    if hasattr(F, "rms_norm"):
        class FusedRMSNorm(llama3.RMSNorm):
            def forward(self, x):
                return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)
        norm = FusedRMSNorm
    return attention, norm


def cross_entropy_loss(F):
    """torchtitan's loss: cross-entropy over the logits in f32 (a plain
    function, for torch.compile)."""
    def cross_entropy(logits, labels):
        return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(0, 1))
    return cross_entropy


class TrainStep:
    """One Llama 3 training step of the model, as torchtitan runs it under
    FSDP2's mixed precision on one GPU (param_dtype bf16, reduce_dtype f32).

    --precision bf16-params (the default): f32 master parameters, and a
    bf16 copy of the model that computes: each step copies the masters
    into it (FSDP2's all-gather copy-in casts them), runs the forward and
    backward in bf16 (bf16 activations and gradients), and casts its
    gradients to new f32 gradients of the masters (FSDP2's reduce-scatter
    in f32). --precision autocast: the f32 model under
    torch.autocast(bfloat16) (torchtitan's single-device path without
    FSDP: the matmuls in bf16, the residual stream and norms in f32).
    --precision bf16: pure bf16 training (torchtitan's training.dtype =
    "bfloat16"): the model's parameters are bf16, with no f32 masters, so
    its gradients, the clipping and fused AdamW's moments are bf16 too.
    Either way the logits are f32 (the model's .float()) and the
    cross-entropy is over them in f32, then clip_grad_norm_(1.0, foreach)
    and AdamW (fused; lr 8e-4, betas (0.9, 0.95), weight decay 0.1, eps
    1e-8) on the f32 masters, and zero_grad(set_to_none=True)."""

    def __init__(self, torch, F, llama3, margs, args, notes):
        self.torch = torch
        self.F = F
        self.device = args.device
        self.precision = args.precision
        self.notes = notes
        master = llama3.Transformer(margs, device=torch.device(args.device))
        master.to(args.device)  # the RoPE table is built on the CPU
        master.init_weights(args.seed)
        if self.precision == "bf16":
            for p in master.parameters():  # not .to(): it would cast freqs_cis
                p.data = p.data.to(torch.bfloat16)
        self.ops = self._use_torchtitan_ops(torch, F, llama3, master, args.ops)
        self.master = master
        self.master_params = list(master.parameters())
        if self.precision == "bf16-params":
            compute = copy.deepcopy(master)
            for p in compute.parameters():  # not .to(): it would cast freqs_cis
                p.data = p.data.to(torch.bfloat16)
            self.compute = compute
        else:
            self.compute = master
        self.compute_params = list(self.compute.parameters())
        self.cross_entropy = cross_entropy_loss(F)
        self.loss_fn = self.cross_entropy
        self.optimizer, self.optimizer_text = self._adamw()
        self.clip_foreach = True

    def note(self, text):
        if text not in self.notes:
            self.notes.append(text)

    def _use_torchtitan_ops(self, torch, F, llama3, model, ops):
        if ops == "as-written":
            return "as written (matmul + mask + softmax attention, hand-written RMSNorm)"
        attention, norm = torchtitan_modules(torch, F, llama3)
        for module in model.modules():
            if attention and type(module) is llama3.Attention:
                module.__class__ = attention
            elif norm and type(module) is llama3.RMSNorm:
                module.__class__ = norm
        parts = ["attention: F.scaled_dot_product_attention (causal, repeat_kv)"
                 if attention else "attention: as written (no SDPA in this PyTorch)",
                 "RMSNorm: F.rms_norm" if norm
                 else "RMSNorm: as written (no F.rms_norm in this PyTorch)"]
        if not attention or not norm:
            self.note("torchtitan ops partly unavailable: " + "; ".join(parts))
        return "; ".join(parts)

    def _adamw(self):
        torch = self.torch
        options = dict(lr=8e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
        try:
            return (torch.optim.AdamW(self.master_params, fused=True, **options),
                    "torch.optim.AdamW(fused=True)")
        except Exception as error:  # noqa: BLE001 - 1.13 has no fused AdamW
            self.note(f"AdamW(fused=True) unavailable ({type(error).__name__}: "
                              f"{str(error).splitlines()[0][:200]}); foreach instead")
            return (torch.optim.AdamW(self.master_params, foreach=True, **options),
                    "torch.optim.AdamW(foreach=True)")

    def compile(self, scope):
        """torch.compile (default mode): each TransformerBlock with
        fullgraph=True and the loss, as torchtitan's compile (components
        model and loss), or --compile-scope model: the whole model."""
        torch = self.torch
        if scope == "model":
            self.compute = torch.compile(self.compute)
        else:
            layers = self.compute.layers
            for index, block in enumerate(layers):
                layers[index] = torch.compile(block, fullgraph=True)
        self.loss_fn = torch.compile(self.cross_entropy)

    def _autocast(self):
        if self.precision == "autocast":
            return self.torch.autocast(self.device, dtype=self.torch.bfloat16)
        return contextlib.nullcontext()

    def _clip(self):
        clip = self.torch.nn.utils.clip_grad_norm_
        if self.clip_foreach:
            try:
                return clip(self.master_params, 1.0, foreach=True)
            except TypeError:  # 1.13: no foreach argument
                self.clip_foreach = False
                self.note("clip_grad_norm_ has no foreach in this PyTorch")
        return clip(self.master_params, 1.0)

    def step(self, tokens, labels):
        """One training step; the loss (a tensor: no synchronization)."""
        torch = self.torch
        if self.precision == "bf16-params":
            with torch.no_grad():
                if hasattr(torch, "_foreach_copy_"):
                    torch._foreach_copy_(self.compute_params, self.master_params)
                else:
                    for low, master in zip(self.compute_params, self.master_params):
                        low.copy_(master)
        with self._autocast():
            loss = self.loss_fn(self.compute(tokens), labels)
        loss.backward()
        if self.precision == "bf16-params":
            for low, master in zip(self.compute_params, self.master_params):
                master.grad = low.grad.float()
                low.grad = None
        self._clip()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return loss.detach()


def time_steps(torch, trainer, tokens, labels, warmup, steps, cuda):
    """The first step's wall time (compilation, in compile mode), then the
    rest of the warm-up, then `steps` steps each between CUDA events
    (perf_counter on the CPU); per-step times in ms and the losses."""
    def synchronize():
        if cuda:
            torch.cuda.synchronize()

    synchronize()
    begin = time.perf_counter()
    losses = [trainer.step(tokens, labels)]
    synchronize()
    first_s = time.perf_counter() - begin
    for _ in range(warmup - 1):
        losses.append(trainer.step(tokens, labels))
    synchronize()
    times, events = [], []
    begin = time.perf_counter()
    for _ in range(steps):
        if cuda:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            losses.append(trainer.step(tokens, labels))
            end.record()
            events.append((start, end))
        else:
            started = time.perf_counter()
            losses.append(trainer.step(tokens, labels))
            times.append((time.perf_counter() - started) * 1e3)
    synchronize()
    wall_ms = (time.perf_counter() - begin) * 1e3
    if cuda:
        times = [start.elapsed_time(end) for start, end in events]
    return first_s, times, wall_ms, [float(loss) for loss in losses]


def run_step_mode(torch, F, llama3, margs, args, mode, tokens, flops_token, notes):
    """Builds the model and its optimizer, compiles them in compile mode,
    times the steps; the mode's JSON entry."""
    cuda = args.device == "cuda"
    trainer = TrainStep(torch, F, llama3, margs, args, notes)
    if mode == "compile":
        trainer.compile(args.compile_scope)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    warmup = max(1, args.warmup)  # the first step (compilation) is never timed
    first_s, times, wall_ms, losses = time_steps(
        torch, trainer, tokens[0], tokens[1], warmup, args.steps, cuda)
    median = statistics.median(times)
    tokens_per_second = args.batch * args.seq / (median / 1e3)
    entry = {
        "ms_per_step_median": median,
        "ms_per_step_mean": statistics.mean(times),
        "ms_per_step_min": min(times),
        "ms_per_step": times,
        "wall_ms_per_step": wall_ms / args.steps,
        "tokens_per_second": tokens_per_second,
        "mfu": tokens_per_second * flops_token / H200_BF16_PEAK_FLOPS,
        "memory_bytes": torch.cuda.max_memory_allocated() if cuda else None,
        "memory_reserved_bytes": torch.cuda.max_memory_reserved() if cuda else None,
        "first_step_s": first_s,
        "warmup": warmup,
        "steps": args.steps,
        "timer": "CUDA events per step" if cuda else "perf_counter per step",
        "loss_first": losses[0],
        "loss_last": losses[-1],
        "precision": trainer.precision,
        "ops": trainer.ops,
        "optimizer": trainer.optimizer_text,
        "clip": ("clip_grad_norm_(max_norm=1.0, foreach=True)" if trainer.clip_foreach
                 else "clip_grad_norm_(max_norm=1.0)"),
    }
    if mode == "compile":
        entry["compile_s"] = first_s
        entry["compile"] = ("torch.compile default mode: " +
                            ("the whole model" if args.compile_scope == "model" else
                             "each TransformerBlock (fullgraph=True)") +
                            " and the loss")
    del trainer
    return entry


def raise_dynamo_cache_limit():
    """torch._dynamo's recompilation limit raised to 64."""
    try:
        import torch._dynamo as dynamo
        for name in ("cache_size_limit", "recompile_limit"):
            if hasattr(dynamo.config, name):
                setattr(dynamo.config, name, 64)
    except ImportError:
        pass


def run_step(args):
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as error:
        print(f"gpu_torch_baseline.py: no PyTorch: {error}", file=sys.stderr)
        return 2
    llama3 = import_llama3()
    margs = step_model_args(llama3, args)
    params, embedding = parameter_counts(torch, llama3, margs)
    flops_token = flops_per_token(margs, params, embedding, args.seq)
    is_proxy = all(getattr(args, key) == PROXY[key] for key in
                   ("dim", "layers", "heads", "kv_heads", "ffn", "vocab"))
    print(f"Llama 3 {'~1B proxy' if is_proxy else 'model'}: dim {margs.dim}, "
          f"{margs.n_layers} layers, {margs.n_heads} heads of {margs.head_dim}, "
          f"{margs.kv_heads} KV heads, FFN {margs.ffn_hidden_dim}, vocabulary "
          f"{margs.vocab_size}: {params:,} parameters ({params - embedding:,} without "
          f"the embedding); {flops_token:,} FLOPs per token at seq {args.seq}",
          flush=True)
    if is_proxy and params != PROXY_PARAMS:
        print(f"gpu_torch_baseline.py: the proxy has {params} parameters, "
              f"not {PROXY_PARAMS}", file=sys.stderr)
        return 1
    if args.count_only:
        return 0
    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu_torch_baseline.py: PyTorch has no usable CUDA device "
              f"(torch {torch.__version__})", file=sys.stderr)
        return 2
    modes = [m for m in args.modes.split(",") if m]
    for mode in modes:
        if mode not in STEP_MODES:
            raise SystemExit(f"gpu_torch_baseline.py: unknown mode '{mode}' "
                             f"({', '.join(STEP_MODES)})")
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    header = {
        "tool": "gpu_torch_baseline step",
        "torch": torch.__version__,
        "device": device_name,
        "proxy": {"dim": margs.dim, "layers": margs.n_layers, "heads": margs.n_heads,
                  "kv_heads": margs.kv_heads, "head_dim": margs.head_dim,
                  "ffn": margs.ffn_hidden_dim, "vocab": margs.vocab_size,
                  "rope_theta": margs.rope_theta, "norm_eps": margs.norm_eps,
                  "tied_embedding": False, "params": params,
                  "params_embedding": embedding,
                  "params_non_embedding": params - embedding,
                  "is_proxy": is_proxy},
        "options": {"batch": args.batch, "seq": args.seq, "steps": args.steps,
                    "warmup": args.warmup, "precision": args.precision,
                    "ops": args.ops, "compile_scope": args.compile_scope,
                    "seed": args.seed, "modes": modes},
        "flops_per_token": flops_token,
        "flops_formula": "6 * (params - params_embedding) + 12 * layers * heads "
                         "* head_dim * seq (torchtitan)",
        "peak_flops": H200_BF16_PEAK_FLOPS,
        "peak": "H200 dense bf16",
        "steps": {},
        "notes": [],
    }
    recorder = Recorder(args.json, header)
    recorder.save()
    notes = recorder.data["notes"]
    torch.manual_seed(args.seed)
    ids = torch.randint(0, margs.vocab_size, (2, args.batch, args.seq),
                        device=args.device)
    failed = 0
    for mode in modes:
        if mode == "compile" and not hasattr(torch, "compile"):
            why = f"PyTorch {torch.__version__} has no torch.compile"
            recorder.data["steps"][mode] = {"skipped": why}
            recorder.skip("step compile", why)
            continue
        if mode == "compile":
            raise_dynamo_cache_limit()
        print(f"step {mode}: batch {args.batch} x seq {args.seq}, {args.precision}, "
              f"{max(1, args.warmup)} warm-up and {args.steps} timed steps", flush=True)
        try:
            entry = run_step_mode(torch, F, llama3, margs, args, mode, ids, flops_token,
                                  notes)
            memory = entry["memory_bytes"]
            print(f"step {mode}: {entry['ms_per_step_median']:.2f} ms/step median "
                  f"({entry['ms_per_step_mean']:.2f} mean), "
                  f"{entry['tokens_per_second']:.0f} tokens/s, MFU "
                  f"{100 * entry['mfu']:.1f}%, memory "
                  f"{'-' if memory is None else f'{memory / 2**30:.2f} GiB'}, first step "
                  f"{entry['first_step_s']:.1f} s, loss {entry['loss_first']:.4f} -> "
                  f"{entry['loss_last']:.4f}", flush=True)
        except Exception as error:  # noqa: BLE001 - record and go on
            failed += 1
            message = f"{type(error).__name__}: {error}".splitlines()[0][:400]
            entry = {"error": message}
            recorder.error("step", f"b{args.batch}s{args.seq}", mode, message)
            if os.environ.get("TITAN_BENCH_TRACEBACK"):
                traceback.print_exc()
        recorder.data["steps"][mode] = entry
        recorder.save()
        gc.collect()
        if args.device == "cuda":
            torch.cuda.empty_cache()
    for note in notes:
        print(f"note: {note}")
    return 1 if failed else 0


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


def gib(value):
    return "-" if value is None else f"{value / 2**30:.2f} GiB"


def step_row(label, step, over_pytorch, note):
    """A row of the training-step table for a step JSON `step` (titan's, or
    one mode of PyTorch's): time, tokens/s, MFU, memory, `over_pytorch`
    (titan's time over this one, or None) and `note`."""
    return [label, fmt(step.get("ms_per_step_median"), "{:.2f}"),
            fmt(step.get("tokens_per_second"), "{:.0f}"),
            fmt(None if step.get("mfu") is None else 100 * step["mfu"], "{:.1f}%"),
            gib(step.get("memory_bytes")), fmt(over_pytorch, "{:.2f}"), note]


def step_table(titan_step, torch_step, titan_compiled=None, titan_bf16=None,
               torch_bf16=None):
    """The training-step table: (title, columns, rows, ratio line).

    titan_step is the --titan-step JSON; torch_step the `step` JSON (its
    "steps"), or None; titan_compiled the --titan-step-compiled JSON (the
    same step with RMSNorm and the loss as compiled kernels), or None;
    titan_bf16 and torch_bf16 the --titan-step-bf16 and --torch-step-bf16
    JSONs (pure bf16 training, the second's eager step), or None."""
    steps = (torch_step or {}).get("steps") or {}
    options = (torch_step or {}).get("options") or {}
    proxy = (torch_step or {}).get("proxy") or {}
    batch = titan_step.get("batch", options.get("batch"))
    seq = titan_step.get("seq", options.get("seq"))
    shape = f"batch {batch} x seq {seq}" if batch and seq else "shape not recorded"
    if options and (batch, seq) != (options.get("batch"), options.get("seq")):
        shape += (f"; SHAPES DIFFER: PyTorch batch {options.get('batch')} x seq "
                  f"{options.get('seq')}")
    params = f"{proxy['params']:,} parameters, " if proxy.get("params") else ""
    title = (f"training step: titan vs PyTorch eager / compile ({params}{shape}; "
             f"PyTorch {options.get('precision', '-')}, MFU of 989.5 TFLOP/s dense bf16; "
             "titan/PyTorch is time over time: below 1, titan is faster)")
    columns = ["run", "ms/step", "tokens/s", "MFU", "memory", "titan/PyTorch", "note"]
    titan_ms = titan_step.get("ms_per_step_median")

    def variant_row(label, step, what):
        """A row for another titan step: `what`, and its time over titan's."""
        over_titan = ratio(step.get("ms_per_step_median"), titan_ms)
        return step_row(label, step, None,
                        f"{what}: {fmt(over_titan, '{:.2f}')} x titan's time")

    rows = [step_row("titan", titan_step, None, "memory planned" + (
        f"; {gib(titan_step['memory_measured_bytes'])} in use on the "
        "GPU (cudaMemGetInfo)" if titan_step.get("memory_measured_bytes") else ""))]
    if titan_compiled is not None:
        rows.append(variant_row("titan, --runtime-ops=none", titan_compiled,
                                "RMSNorm and the loss as compiled kernels"))
    ratios = {}
    for mode in STEP_MODES:
        entry = steps.get(mode)
        if not entry or "ms_per_step_median" not in entry:
            why = ("not measured" if not entry else
                   entry.get("skipped") and f"skipped: {entry['skipped']}" or
                   f"failed: {entry.get('error', '?')}")
            rows.append([f"PyTorch {mode}", "-", "-", "-", "-", "-", why[:120]])
            continue
        ratios[mode] = ratio(titan_ms, entry["ms_per_step_median"])
        note = f"mean {entry['ms_per_step_mean']:.2f} ms" if "ms_per_step_mean" in entry else ""
        if mode == "compile" and entry.get("compile_s") is not None:
            note += f"; compiled in {entry['compile_s']:.0f} s"
        rows.append(step_row(f"PyTorch {mode}", entry, ratios[mode], note))
    line = (f"titan/eager {fmt(ratios.get('eager'), '{:.2f}')}, "
            f"titan/compile {fmt(ratios.get('compile'), '{:.2f}')} (ms per step)")
    if titan_bf16 is not None:
        rows.append(variant_row("titan, pure bf16", titan_bf16,
                                "training.dtype = \"bfloat16\": bf16 parameters "
                                "and moments"))
        eager = ((torch_bf16 or {}).get("steps") or {}).get("eager") or {}
        if "ms_per_step_median" in eager:
            bf16_ratio = ratio(titan_bf16.get("ms_per_step_median"),
                               eager["ms_per_step_median"])
            rows.append(step_row("PyTorch eager, pure bf16", eager, bf16_ratio,
                                 "bf16 parameters, fused AdamW; the ratio is "
                                 "titan's pure bf16 step over it"))
            line += f"; pure bf16: titan/eager {fmt(bf16_ratio, '{:.2f}')}"
    return title, columns, rows, line


def compare(args):
    titan = load(args.titan_json)
    if titan is None and not args.titan_step:
        print("gpu_torch_baseline.py: no titan-cuda-bench results to compare",
              file=sys.stderr)
        return 2
    # Without titan-cuda-bench's results (its build failed), the training
    # step's table alone.
    titan = titan or {"results": []}
    torch_data = load(args.torch_json) or {"results": [], "torch": None}
    torch_ms = {}
    for row in torch_data.get("results", []):
        torch_ms[(row["op"], row["shape"], row["mode"])] = row["median_ms"]

    columns = ["op", "shape", "titan ms", "titan rate", "% peak", "eager ms",
               "compile ms", "titan/eager", "titan/compile"]
    rows, ratios = [], {"eager": [], "compile": []}
    for result in titan.get("results", []):
        # cuDNN's attention rows against PyTorch's attention (titan's own
        # kernels' rows are "attention.*").
        key = (result["op"].replace("attention_cudnn.", "attention."), result["shape"])
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
    # One training-step table per --titan-step (with the --torch-step of the
    # same position; the first also gets --titan-step-compiled's row).
    steps = []
    for index, path in enumerate(args.titan_step):
        titan_step = load(path)
        if titan_step is None:
            continue
        torch_path = args.torch_step[index] if index < len(args.torch_step) else ""
        torch_step = load(torch_path) if torch_path else torch_data
        first = index == 0
        compiled = (load(args.titan_step_compiled)
                    if args.titan_step_compiled and first else None)
        titan_bf16 = load(args.titan_step_bf16) if args.titan_step_bf16 and first else None
        torch_bf16 = load(args.torch_step_bf16) if args.torch_step_bf16 and first else None
        steps.append(step_table(titan_step, torch_step, compiled, titan_bf16, torch_bf16))
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
    for title, step_columns, step_rows, step_line in steps:
        step_widths = [max(len(str(row[i])) for row in step_rows + [step_columns])
                       for i in range(len(step_columns))]
        print()
        print(title)
        print("  ".join(c.ljust(w) for c, w in zip(step_columns, step_widths)).rstrip())
        for row in step_rows:
            print("  ".join(str(c).ljust(w) for c, w in zip(row, step_widths)).rstrip())
        print(step_line)
    if args.markdown:
        with open(args.markdown, "w") as file:
            file.write(header + "\n\n")
            file.write("| " + " | ".join(columns) + " |\n")
            file.write("|" + "---|" * len(columns) + "\n")
            for row in rows:
                file.write("| " + " | ".join(str(c) for c in row) + " |\n")
            file.write("\n" + summary + "\n")
            for title, step_columns, step_rows, step_line in steps:
                file.write("\n" + title + "\n\n")
                file.write("| " + " | ".join(step_columns) + " |\n")
                file.write("|" + "---|" * len(step_columns) + "\n")
                for row in step_rows:
                    file.write("| " + " | ".join(str(c) for c in row) + " |\n")
                file.write("\n" + step_line + "\n")
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
    join.add_argument("--titan-step", action="append", default=[],
                      help="titan's training-step JSON: adds a training-step "
                           "table (repeatable: one table per batch shape)")
    join.add_argument("--titan-step-compiled", default="",
                      help="the same training step with --runtime-ops=none: "
                           "a row of the training-step table")
    join.add_argument("--titan-step-bf16", default="",
                      help="the same training step in pure bf16 (training.dtype = "
                           "\"bfloat16\"): a row of the first training-step table")
    join.add_argument("--torch-step-bf16", default="",
                      help="PyTorch's `step --precision bf16` JSON: a row of the "
                           "first training-step table")
    join.add_argument("--torch-step", action="append", default=[],
                      help="the `step` JSON of the --titan-step at the same "
                           "position (default: --torch-json, if it has \"steps\")")
    train = commands.add_parser("step", help="time a whole training step of the proxy")
    train.add_argument("--json", default="")
    train.add_argument("--batch", type=int, default=1)
    train.add_argument("--seq", type=int, default=2048)
    train.add_argument("--steps", type=int, default=10, help="timed steps")
    train.add_argument("--warmup", type=int, default=3,
                       help="untimed steps first (at least 1)")
    train.add_argument("--modes", default="eager,compile")
    train.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    train.add_argument("--precision", choices=("bf16-params", "autocast", "bf16"),
                       default="bf16-params",
                       help="f32 masters with a bf16 copy (FSDP2's mixed precision), "
                            "torch.autocast, or pure bf16 parameters")
    train.add_argument("--ops", choices=("torchtitan", "as-written"), default="torchtitan",
                       help="SDPA attention and F.rms_norm, or the model's own")
    train.add_argument("--compile-scope", choices=("block", "model"), default="block")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--count-only", action="store_true",
                       help="print the parameter and FLOP counts only")
    for name, default in (("dim", PROXY["dim"]), ("layers", PROXY["layers"]),
                          ("heads", PROXY["heads"]), ("kv-heads", PROXY["kv_heads"]),
                          ("ffn", PROXY["ffn"]), ("vocab", PROXY["vocab"])):
        train.add_argument("--" + name, type=int, default=default)
    args = parser.parse_args()
    if args.command == "step":
        return run_step(args)
    return run_measure(args) if args.command == "measure" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
