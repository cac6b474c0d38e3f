"""PyTorch 1.13 oracle for titan's @train_step.

Loads an exported model (models/export.py) with torch.jit.load, takes its
tokens.npy as the batch and a deterministic labels.npy (written next to it),
and trains with F.cross_entropy (plus the scalar losses the model returns
after its logits, as titan adds them), clip_grad_norm_ and torch.optim.AdamW
on the same batch for --steps steps. Writes into OUT:

    labels.npy                 the labels (int64, like tokens)
    expected/losses.npy        the loss before each step
    expected/lrs.npy           the learning rate of each step
    expected/grad_norms.npy    the gradient norm of each step (with --max-norm)
    expected/grad.<fqn>.npy    gradients of the first step (after clipping;
                               zeros where no gradient reaches the parameter)
    expected/no_grad.txt       the parameters no gradient reaches (AdamW
                               skips them), one per line
    expected/param.<fqn>.npy   parameters after the first step

usage: train_oracle.py MODEL_DIR OUT --lr L --beta1 B1 --beta2 B2 --eps E
       --weight-decay W --max-norm M [--ignore-index I] [--steps N]
       [--training-steps T --warmup-steps W --decay-ratio R --decay-type D
        --min-lr-factor F]

With --param-dtype bfloat16 (or float16), the step runs as FSDP2's mixed
precision does (torchtitan's mixed_precision_param, reduce dtype float32):
the float32 parameters are the master weights; each step the module computes
with copies cast to the param dtype, their gradients are widened to float32,
and clipping and AdamW run on the masters. The model should be traced in that
dtype (models/export.py --trace-dtype). Three computations are made to round
once, as titan's fused kernels (and PyTorch 2's scaled_dot_product_attention
and nn.RMSNorm, and torch.compile's kernels) do: PyTorch 1.13's CPU silu
rounds each step of x / (1 + exp(-x)) to bf16, RMSNorm's
`normed.type_as(x) * weight` rounds the normalized value before the product,
and the explicit attention rounds the scores and the probabilities; the
oracle computes each in float32 and rounds the result (see
docs/mixed-precision.md).

With --dtype bfloat16 the step is pure bf16 training (torchtitan's
training.dtype = "bfloat16"): the parameters are bf16 (no masters), their
gradients and AdamW's moments too. AdamW runs as torch's fused AdamW
(optimizer.implementation = "fused", torchtitan's default) does: each
element computes in float32 from the bf16 values and rounds once; the
gradient norm is summed in float32 and the clipping coefficient scales the
gradient inside that computation. The same three computations round once
as under --param-dtype. Gradients and parameters are written as float32.

With --training-steps, the learning rate follows torchtitan's [lr_scheduler]
through torch.optim.lr_scheduler.LambdaLR, with the lambda torchtitan
defines (torchtitan/components/lr_scheduler.py, linear_warmup_stable_decay;
written out below from its definition).
"""

import argparse
import math
import os
import sys
from typing import List, Optional

import numpy as np
import torch
import torch.nn.functional as F

# Models saved calling PyTorch 2's scaled_dot_product_attention and rms_norm
# load with the reference kernels that torch2_ops.py registers.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Import", "Inputs"))
import torch2_ops  # noqa: E402,F401


def logits_and_losses(outputs):
    """The logits and the scalar losses a model returns after them (titan
    adds those to the cross-entropy)."""
    if isinstance(outputs, (tuple, list)):
        return outputs[0], list(outputs[1:])
    return outputs, []


def torchtitan_lr_lambda(training_steps, warmup_steps, decay_ratio, decay_type,
                         min_lr_factor):
    """torchtitan's build_lr_schedulers: the LambdaLR factor by step."""
    warmup_steps = min(int(warmup_steps), training_steps)
    if decay_ratio is not None:
        decay_steps = round(training_steps * decay_ratio)
        if warmup_steps + decay_steps > training_steps:
            decay_steps = training_steps - warmup_steps
    else:
        decay_steps = training_steps - warmup_steps
    # A virtual last step keeps the last rate above the minimum.
    stable_steps = training_steps + 1 - warmup_steps - decay_steps

    def factor(current_step):
        warmup_stable_steps = warmup_steps + stable_steps
        if current_step < warmup_steps:
            return float((current_step + 1) / warmup_steps)
        if current_step < warmup_stable_steps:
            return 1.0
        progress = float(current_step + 1 - warmup_stable_steps) / decay_steps
        if decay_type == "linear":
            adjustment = 1 - progress
        elif decay_type == "sqrt":
            adjustment = 1 - math.sqrt(progress)
        else:
            adjustment = 0.5 * (1.0 + math.cos(math.pi * progress))
        return min_lr_factor + (1 - min_lr_factor) * adjustment

    return factor


# aten::silu on a float copy, rounded once to the input's dtype.
SILU = """
graph(%x):
  %r = aten::silu(%x)
  return (%r)"""
FLOAT_SILU = """
graph(%x):
  %f : int = prim::Constant[value=6]()
  %false : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %xf = aten::to(%x, %f, %false, %false, %none)
  %s = aten::silu(%xf)
  %r = aten::type_as(%s, %x)
  return (%r)"""


# RMSNorm's weight product on the float32 normalized value, rounded once.
NORM_PRODUCT = """
graph(%normed, %x, %w):
  %n = aten::type_as(%normed, %x)
  %r = aten::mul(%n, %w)
  return (%r)"""
FLOAT_NORM_PRODUCT = """
graph(%normed, %x, %w):
  %p = aten::mul(%normed, %w)
  %r = aten::type_as(%p, %x)
  return (%r)"""


# Llama's explicit attention, softmax((q @ k^T / c + mask).float()).type_as(q)
# @ v, all in float32.
ATTENTION = """
graph(%q, %kt, %c, %mask, %alpha, %f32, %false, %none, %dim, %v):
  %s = aten::matmul(%q, %kt)
  %scores = aten::div(%s, %c)
  %a = aten::add(%scores, %mask, %alpha)
  %wide = aten::to(%a, %f32, %false, %false, %none)
  %p = aten::softmax(%wide, %dim, %none)
  %probs = aten::type_as(%p, %q)
  %out = aten::matmul(%probs, %v)
  return (%out)"""
FLOAT_ATTENTION = """
graph(%q, %kt, %c, %mask, %alpha, %f32, %false, %none, %dim, %v):
  %qf = aten::to(%q, %f32, %false, %false, %none)
  %ktf = aten::to(%kt, %f32, %false, %false, %none)
  %vf = aten::to(%v, %f32, %false, %false, %none)
  %s = aten::matmul(%qf, %ktf)
  %scores = aten::div(%s, %c)
  %a = aten::add(%scores, %mask, %alpha)
  %p = aten::softmax(%a, %dim, %none)
  %o = aten::matmul(%p, %vf)
  %out = aten::type_as(%o, %q)
  return (%out)"""


def round_once(model) -> None:
    """Rewrites silu, RMSNorm's weight product and attention in the module's methods."""
    for _, module in model.named_modules():
        if not hasattr(module, "forward"):
            continue
        # The norm first: the silu rewrite makes a type_as -> mul of its own.
        for pattern, replacement in ((NORM_PRODUCT, FLOAT_NORM_PRODUCT), (SILU, FLOAT_SILU),
                                     (ATTENTION, FLOAT_ATTENTION)):
            torch._C._jit_pass_custom_pattern_based_rewrite_graph(pattern, replacement, module.forward.graph)


def fused_adamw_step(params, moments, lr: float, step: int, args, scale: float) -> None:
    """One step of torch's fused AdamW on low-precision parameters: each
    element computes in float32 (torch.optim.AdamW's formula, the gradient
    times the clipping coefficient `scale` first) and rounds once."""
    correction1 = 1 - args.beta1 ** step
    correction2 = math.sqrt(1 - args.beta2 ** step)
    with torch.no_grad():
        for name, p in params.items():
            if p.grad is None:
                continue  # AdamW skips a parameter without gradient.
            if name not in moments:
                moments[name] = (torch.zeros_like(p), torch.zeros_like(p))
            exp_avg, exp_avg_sq = moments[name]
            g = p.grad.float() * scale
            m = exp_avg.float() * args.beta1 + g * (1 - args.beta1)
            v = exp_avg_sq.float() * args.beta2 + (g * g) * (1 - args.beta2)
            updated = p.float() * (1 - lr * args.weight_decay) - (
                m / (v.sqrt() / correction2 + args.eps)) * (lr / correction1)
            p.copy_(updated)
            exp_avg.copy_(m)
            exp_avg_sq.copy_(v)


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model_dir")
    parser.add_argument("out")
    for name in ("lr", "beta1", "beta2", "eps", "weight-decay", "max-norm"):
        parser.add_argument("--" + name, type=float, required=True)
    parser.add_argument("--ignore-index", type=int, default=-100)
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--training-steps", type=int)
    parser.add_argument("--warmup-steps", type=int, default=0)
    parser.add_argument("--decay-ratio", type=float)
    parser.add_argument("--decay-type", default="linear",
                        choices=("linear", "sqrt", "cosine"))
    parser.add_argument("--min-lr-factor", type=float, default=0.0)
    parser.add_argument("--param-dtype", default="float32",
                        choices=("float32", "bfloat16", "float16"))
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"),
                        help="the dtype of the parameters, gradients and moments "
                        "(bfloat16: pure bf16 training)")
    args = parser.parse_args(argv)
    pure = args.dtype != "float32"

    torch.manual_seed(0)
    model = torch.jit.load(os.path.join(args.model_dir, "model.pt"))
    # Eager autograd through the graph (the JIT's own differentiation does not
    # follow the dtypes of rewritten graphs, and gives zeros, not None, to
    # parameters that only non-differentiable ops read, which AdamW would
    # then decay where eager PyTorch skips them).
    torch._C._jit_set_profiling_executor(False)
    torch._C._jit_set_profiling_mode(False)
    torch._C._set_graph_executor_optimize(False)
    if args.param_dtype != "float32" or pure:
        round_once(model)  # Before the first call compiles it.
    if pure:
        for p in model.parameters():
            p.data = p.data.to(getattr(torch, args.dtype))
    tokens = torch.from_numpy(np.load(os.path.join(args.model_dir, "tokens.npy")))
    # The whole batch (a model traced on it may not run on fewer positions),
    # leaving the random state as it was.
    with torch.no_grad(), torch.random.fork_rng():
        vocab = logits_and_losses(model(tokens))[0].shape[-1]
    # Next-token labels, with a few ignored positions to exercise ignore_index.
    labels = torch.roll(tokens, shifts=-1, dims=1) % vocab
    labels[:, -1] = args.ignore_index
    os.makedirs(os.path.join(args.out, "expected"), exist_ok=True)
    np.save(os.path.join(args.out, "labels.npy"), labels.numpy())

    # The module's parameters compute; the masters are trained (the same
    # tensors without mixed precision).
    compute = dict(model.named_parameters())
    param_dtype = getattr(torch, args.param_dtype)
    if param_dtype == torch.float32 or pure:
        params = compute
    else:
        params = {name: torch.nn.Parameter(p.detach().clone()) for name, p in compute.items()}
    optimizer = torch.optim.AdamW(
        params.values(), lr=args.lr, betas=(args.beta1, args.beta2), eps=args.eps,
        weight_decay=args.weight_decay)
    scheduler = None
    if args.training_steps is not None:
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, torchtitan_lr_lambda(
                args.training_steps, args.warmup_steps, args.decay_ratio,
                args.decay_type, args.min_lr_factor))
    losses, lrs, grad_norms = [], [], []
    moments = {}  # name -> (exp_avg, exp_avg_sq) of the pure low-precision step
    for step in range(args.steps):
        optimizer.zero_grad()
        if params is not compute:
            for name, p in compute.items():
                p.data = params[name].detach().to(param_dtype)
                p.grad = None
        logits, auxiliary = logits_and_losses(model(tokens))
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1),
                               ignore_index=args.ignore_index)
        for extra in auxiliary:
            loss = loss + extra.float()
        loss.backward()
        if params is not compute:
            for name, p in compute.items():
                params[name].grad = None if p.grad is None else p.grad.float()
        scale = 1.0
        if args.max_norm > 0 and pure:
            # In float32; the coefficient scales the gradients inside AdamW.
            norm = math.sqrt(sum(float((p.grad.float() ** 2).sum())
                                 for p in params.values() if p.grad is not None))
            grad_norms.append(norm)
            scale = min(1.0, args.max_norm / (norm + 1e-6))
        elif args.max_norm > 0:
            grad_norms.append(
                torch.nn.utils.clip_grad_norm_(list(params.values()), args.max_norm).item())
        losses.append(loss.item())
        if step == 0:
            # A parameter no gradient reaches keeps .grad None, and AdamW
            # skips it: its gradient is written as zeros and its name to
            # no_grad.txt.
            no_grad = [name for name, p in params.items() if p.grad is None]
            with open(os.path.join(args.out, "expected", "no_grad.txt"), "w") as f:
                f.writelines(name + "\n" for name in no_grad)
            for name, p in params.items():
                grad = torch.zeros_like(p) if p.grad is None else p.grad * scale
                np.save(os.path.join(args.out, "expected", f"grad.{name}.npy"),
                        grad.detach().float().numpy())
        lrs.append(optimizer.param_groups[0]["lr"])
        if pure:
            fused_adamw_step(params, moments, lrs[-1], step + 1, args, scale)
        else:
            optimizer.step()
        if scheduler is not None:
            scheduler.step()
        if step == 0:
            for name, p in params.items():
                np.save(os.path.join(args.out, "expected", f"param.{name}.npy"),
                        p.detach().float().numpy())
    np.save(os.path.join(args.out, "expected", "losses.npy"), np.array(losses, dtype=np.float64))
    np.save(os.path.join(args.out, "expected", "lrs.npy"), np.array(lrs, dtype=np.float64))
    if grad_norms:
        np.save(os.path.join(args.out, "expected", "grad_norms.npy"),
                np.array(grad_norms, dtype=np.float64))


if __name__ == "__main__":
    main()
