"""The operators of PyTorch 2 that PyTorch 1.13 lacks, registered in this
process so that tests can trace and save models that call them, as PyTorch
2 records them (`torch.scaled_dot_product_attention(...)`,
`torch.nonzero_static(...)` and `torch.rms_norm(...)` in the saved code),
and compute their outputs.

Each kernel is PyTorch's documented reference for the op, written with
1.13's ops (autograd goes through them):

- scaled_dot_product_attention(query, key, value, attn_mask=None,
  dropout_p=0.0, is_causal=False, *, scale=None, enable_gqa=False): the
  reference implementation in the docs of
  torch.nn.functional.scaled_dot_product_attention (PyTorch 2.5);
- nonzero_static(input, *, size, fill_value=-1): the first `size` rows of
  torch.nonzero(input), then rows of fill_value up to `size` (PyTorch 2.1);
- rms_norm(input, normalized_shape, weight=None, eps=None):
  x * rsqrt(mean(x^2 over the normalized dims) + eps) * weight, eps None
  meaning torch.finfo(float32).eps (float64's for float64), as
  aten/src/ATen/native/layer_norm.cpp computes it (PyTorch 2.4).

Importing this module registers them once; importing it in a PyTorch that
has them changes nothing.
"""

import math

import torch

SCHEMAS = {
    "scaled_dot_product_attention":
        "scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, "
        "Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, "
        "float? scale=None, bool enable_gqa=False) -> Tensor",
    "nonzero_static":
        "nonzero_static(Tensor self, *, int size, int fill_value=-1) -> Tensor",
    "rms_norm":
        "rms_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, "
        "float? eps=None) -> Tensor",
}


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    attn_bias = torch.zeros(L, S, dtype=query.dtype)
    if is_causal:
        assert attn_mask is None
        temp_mask = torch.ones(L, S, dtype=torch.bool).tril(diagonal=0)
        attn_bias = attn_bias.masked_fill(temp_mask.logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn_bias = attn_bias.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            attn_bias = attn_mask + attn_bias
    if enable_gqa:
        key = key.repeat_interleave(query.size(-3) // key.size(-3), -3)
        value = value.repeat_interleave(query.size(-3) // value.size(-3), -3)
    attn_weight = query @ key.transpose(-2, -1) * scale_factor
    attn_weight = attn_weight + attn_bias
    attn_weight = torch.softmax(attn_weight, dim=-1)
    attn_weight = torch.dropout(attn_weight, dropout_p, train=True)
    return attn_weight @ value


def nonzero_static(input, size, fill_value=-1):
    found = torch.nonzero(input)
    if found.size(0) >= size:
        return found[:size]
    padding = torch.full((size - found.size(0), input.dim()), fill_value, dtype=torch.long)
    return torch.cat([found, padding])


def rms_norm(input, normalized_shape, weight=None, eps=None):
    if eps is None:
        eps = torch.finfo(torch.float64 if input.dtype == torch.float64 else torch.float32).eps
    dims = tuple(range(-len(normalized_shape), 0))
    result = input * torch.rsqrt(input.pow(2).mean(dims, keepdim=True) + eps)
    return result * weight if weight is not None else result


def _register() -> None:
    missing = [name for name in SCHEMAS if not _has_op(name)]
    if not missing:
        return
    global _LIBRARY
    _LIBRARY = torch.library.Library("aten", "IMPL")
    # 1.13's Python API opens "IMPL" and "DEF" libraries only; a FRAGMENT
    # adds definitions to the aten namespace.
    _LIBRARY.m = torch._C._dispatch_library("FRAGMENT", "aten", "", __file__, 0)
    for name in missing:
        _LIBRARY.define(SCHEMAS[name])
        _LIBRARY.impl(name, globals()[name], "CompositeImplicitAutograd")


def _has_op(name: str) -> bool:
    try:
        getattr(torch.ops.aten, name).default
        return True
    except (AttributeError, RuntimeError):
        return False


_LIBRARY = None
_register()
