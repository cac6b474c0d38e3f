//===- TitanComputeOps.td - tensor compute ops -------------*- tablegen -*-===//
//
// The compute of a Llama-class training step on global (or, after spmdize,
// local) tensors.
//
// Conventions shared by all compute ops:
//   - there is no implicit broadcasting: operands of elementwise ops have one
//     type, and `titan.broadcast_in_dim` makes shapes agree explicitly;
//   - dimension attributes are non-negative (no Python-style negative dims);
//   - attention activations are [batch, heads, seq, head_dim], RoPE inputs
//     are [batch, seq, heads, head_dim] (torchtitan's layouts);
//   - fused ops (rms_norm, layer_norm, rope, attention, cross_entropy) are
//     fused because each is one kernel on both backends and has one VJP rule;
//     everything else is decomposed into the elementwise ops below;
//   - the VJP rules (ComputeGradients.cpp) emit these ops and the
//     backward-only ops at the end of this file, where a decomposition would
//     be poor (norms, attention, cross-entropy, GELU) or impossible
//     (embedding's scatter-add, slice's strided zero padding).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_COMPUTE_OPS
#define TITAN_COMPUTE_OPS

/// Base class of compute ops: side-effect free, with a cost and a sharding
/// rule (ShardingRules.cpp). `partitionMethods` lists the methods of the
/// sharding-rule interface the op overrides ("checkPartition", "partition":
/// ops whose local computation is not the op on local shards; see
/// Partition*.cpp).
class Titan_ComputeOp<string mnemonic, list<Trait> traits = [],
                      list<string> partitionMethods = []>
    : Titan_Op<mnemonic, traits # [Pure,
        DeclareOpInterfaceMethods<Titan_CostOpInterface>,
        DeclareOpInterfaceMethods<Titan_ShardingRuleOpInterface,
                                  partitionMethods>]>;

/// A compute op with a reverse-mode rule (ComputeGradients.cpp). Every op of
/// the forward program has one, also the non-differentiable ones (constant,
/// iota, compare), whose rule returns no cotangent, so that
/// `titan-build-train-step` needs no list of exceptions; the backward-only
/// ops below (`*_grad`, `pad`) have none.
class Titan_DifferentiableOp<string mnemonic, list<Trait> traits = [],
                             list<string> partitionMethods = []>
    : Titan_ComputeOp<mnemonic, traits # [
        DeclareOpInterfaceMethods<Titan_DifferentiableOpInterface>],
        partitionMethods>;

//===----------------------------------------------------------------------===//
// Elementwise arithmetic
//===----------------------------------------------------------------------===//

/// Elementwise binary arithmetic on operands of one type (`tensor`: the
/// types the op takes; integer arithmetic wraps in two's complement, as
/// torch's does, and has no gradient).
class Titan_BinaryOp<string mnemonic, list<Trait> traits = [],
                     Type tensor = Titan_FloatTensor>
    : Titan_DifferentiableOp<mnemonic, traits # [SameOperandsAndResultType,
        Elementwise]> {
  let arguments = (ins tensor:$lhs, tensor:$rhs);
  let results = (outs tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Titan_AddOp : Titan_BinaryOp<"add", [Commutative],
                                 Titan_NumericTensor> {
  let summary = "Elementwise addition";
  let description = [{
    `result[i] = lhs[i] + rhs[i]`, of floats or integers (i64, i32:
    positions and masks, e.g. Hugging Face's `mask_cond + 1`).

    Example:

    ```mlir
    %2 = titan.add %0, %1 : tensor<2x64x256xf32>
    %3 = titan.add %ids, %one : tensor<64xi64>
    ```

    Canonicalization: the sum of two all-reduces (sum or avg, same mesh,
    axes and reduction, each used only here) is one all-reduce of the sum
    of their inputs (reductions are linear): one collective instead of two,
    e.g. the per-parameter squared norms of gradient clipping.
  }];
  let hasCanonicalizer = 1;
}

def Titan_SubOp : Titan_BinaryOp<"sub", [], Titan_NumericTensor> {
  let summary = "Elementwise subtraction";
  let description = [{
    `result[i] = lhs[i] - rhs[i]`, of floats or integers.

    Example:

    ```mlir
    %2 = titan.sub %0, %1 : tensor<2x64x256xf32>
    ```
  }];
}

def Titan_MulOp : Titan_BinaryOp<"mul", [Commutative],
                                 Titan_NumericTensor> {
  let summary = "Elementwise multiplication";
  let description = [{
    `result[i] = lhs[i] * rhs[i]` (e.g. the SwiGLU gate `silu(x W1) * x W3`),
    of floats or integers.

    Example:

    ```mlir
    %2 = titan.mul %0, %1 : tensor<2x64x1024xbf16>
    ```
  }];
}

def Titan_DivOp : Titan_BinaryOp<"div"> {
  let summary = "Elementwise division";
  let description = [{
    `result[i] = lhs[i] / rhs[i]` (IEEE division: x/0 is +-inf or NaN).

    Example:

    ```mlir
    %2 = titan.div %0, %1 : tensor<256xf32>
    ```
  }];
}

def Titan_MaxOp : Titan_BinaryOp<"max", [Commutative],
                                 Titan_NumericTensor> {
  let summary = "Elementwise maximum";
  let description = [{
    `result[i] = max(lhs[i], rhs[i])`; NaN if either is NaN
    (`torch.maximum`); of floats or integers (signed).

    Example:

    ```mlir
    %2 = titan.max %0, %1 : tensor<256xf32>
    ```
  }];
}

/// Elementwise division rounded to an integer, or its remainder, of floats
/// or (signed) integers: rounded toward -inf (Python's `//` and `%`,
/// torch.floor_divide and torch.remainder), or toward zero with `truncate`
/// (`torch.div(rounding_mode="trunc")`, torch.fmod).
class Titan_RoundingOp<string mnemonic>
    : Titan_DifferentiableOp<mnemonic, [SameOperandsAndResultType,
                                        Elementwise]> {
  let arguments = (ins Titan_NumericTensor:$lhs, Titan_NumericTensor:$rhs,
                       UnitAttr:$truncate);
  let results = (outs Titan_NumericTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`truncate` $truncate^)? attr-dict `:` type($result)
  }];
}

def Titan_RoundedDivOp : Titan_RoundingOp<"rounded_div"> {
  let summary = "Elementwise division rounded to an integer";
  let description = [{
    `result[i] = floor(lhs[i] / rhs[i])`, or `trunc(lhs[i] / rhs[i])` with
    `truncate`. Its gradient is zero (torch.floor_divide has none). An
    integer division by zero gives `lhs` (PyTorch raises an error).

    Example:

    ```mlir
    %block = titan.rounded_div %positions, %size : tensor<64xi64>
    ```
  }];
}

def Titan_RemainderOp : Titan_RoundingOp<"remainder"> {
  let summary = "Elementwise remainder of a rounded division";
  let description = [{
    `result[i] = lhs[i] - rhs[i] * q` for `q` the quotient of
    `titan.rounded_div` with the same rounding: the sign of `rhs` (Python's
    `%`, torch.remainder), or with `truncate` the sign of `lhs` (torch.fmod).
    Floats are computed as PyTorch does, from fmod. An integer remainder by
    zero gives 0.

    Example:

    ```mlir
    %slot = titan.remainder %positions, %window : tensor<64xi64>
    ```
  }];
}

/// Elementwise unary math on a tensor of `tensor` (floating-point but for
/// neg).
class Titan_UnaryOp<string mnemonic, list<Trait> traits = [],
                    Type tensor = Titan_FloatTensor>
    : Titan_DifferentiableOp<mnemonic, traits # [SameOperandsAndResultType,
        Elementwise]> {
  let arguments = (ins tensor:$input);
  let results = (outs tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Titan_NegOp : Titan_UnaryOp<"neg", [], Titan_NumericTensor> {
  let summary = "Elementwise negation";
  let description = [{
    `result[i] = -input[i]`, of floats or integers (wrapping).

    Example:

    ```mlir
    %1 = titan.neg %0 : tensor<256xf32>
    ```
  }];
}

def Titan_ExpOp : Titan_UnaryOp<"exp"> {
  let summary = "Elementwise natural exponential";
  let description = [{
    `result[i] = e^input[i]`.

    Example:

    ```mlir
    %1 = titan.exp %0 : tensor<256xf32>
    ```
  }];
}

def Titan_LogOp : Titan_UnaryOp<"log"> {
  let summary = "Elementwise natural logarithm";
  let description = [{
    `result[i] = ln(input[i])` (-inf at 0, NaN below).

    Example:

    ```mlir
    %1 = titan.log %0 : tensor<256xf32>
    ```
  }];
}

def Titan_SqrtOp : Titan_UnaryOp<"sqrt"> {
  let summary = "Elementwise square root";
  let description = [{
    `result[i] = sqrt(input[i])` (AdamW's denominator).

    Example:

    ```mlir
    %1 = titan.sqrt %0 : tensor<256xf32>
    ```
  }];
}

def Titan_RsqrtOp : Titan_UnaryOp<"rsqrt"> {
  let summary = "Elementwise reciprocal square root";
  let description = [{
    `result[i] = 1 / sqrt(input[i])`.

    Example:

    ```mlir
    %1 = titan.rsqrt %0 : tensor<2x64x1xf32>
    ```
  }];
}

def Titan_TanhOp : Titan_UnaryOp<"tanh"> {
  let summary = "Elementwise hyperbolic tangent";
  let description = [{
    `result[i] = tanh(input[i])`.

    Example:

    ```mlir
    %1 = titan.tanh %0 : tensor<256xf32>
    ```
  }];
}

def Titan_SigmoidOp : Titan_UnaryOp<"sigmoid"> {
  let summary = "Elementwise logistic sigmoid";
  let description = [{
    `result[i] = 1 / (1 + e^-input[i])`.

    Example:

    ```mlir
    %1 = titan.sigmoid %0 : tensor<256xf32>
    ```
  }];
}

def Titan_SiluOp : Titan_UnaryOp<"silu"> {
  let summary = "Elementwise SiLU (swish)";
  let description = [{
    `result[i] = input[i] * sigmoid(input[i])` (`torch.nn.functional.silu`,
    the activation of Llama's SwiGLU feed-forward).

    Example:

    ```mlir
    %1 = titan.silu %0 : tensor<2x64x1024xbf16>
    ```
  }];
}

def Titan_CosOp : Titan_UnaryOp<"cos"> {
  let summary = "Elementwise cosine";
  let description = [{
    `result[i] = cos(input[i])` (builds RoPE tables from the frequencies).

    Example:

    ```mlir
    %1 = titan.cos %0 : tensor<64x32xf32>
    ```
  }];
}

def Titan_SinOp : Titan_UnaryOp<"sin"> {
  let summary = "Elementwise sine";
  let description = [{
    `result[i] = sin(input[i])`.

    Example:

    ```mlir
    %1 = titan.sin %0 : tensor<64x32xf32>
    ```
  }];
}

def Titan_ErfOp : Titan_UnaryOp<"erf"> {
  let summary = "Elementwise error function";
  let description = [{
    `result[i] = erf(input[i])` (`torch.erf`: GELU written by hand as
    `x * (1 + erf(x / sqrt(2))) / 2`).

    Example:

    ```mlir
    %1 = titan.erf %0 : tensor<2x64x1024xf32>
    ```
  }];
}

def Titan_GeluOp : Titan_DifferentiableOp<"gelu",
    [SameOperandsAndResultType, Elementwise]> {
  let summary = "Elementwise GELU";
  let description = [{
    `torch.nn.functional.gelu(input, approximate)`: with `approximate` =
    `none`, `x * (1 + erf(x / sqrt(2))) / 2`; with `tanh` (GPT-2's "new
    GELU"), `x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) / 2`.

    Example:

    ```mlir
    %1 = titan.gelu %0 approximate tanh : tensor<2x64x1024xf32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$input, StrAttr:$approximate);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $input `approximate` custom<BareKeyword>($approximate) attr-dict
    `:` type($result)
  }];
  let hasVerifier = 1;
}

def Titan_ScaleOp : Titan_DifferentiableOp<"scale",
    [SameOperandsAndResultType, Elementwise]> {
  let summary = "Multiplies a tensor by a compile-time scalar";
  let description = [{
    `result[i] = input[i] * factor`, with `factor` rounded to the element
    type (attention's 1/sqrt(d), loss scaling, AdamW's step sizes).

    Example:

    ```mlir
    %1 = titan.scale %0 by 1.250000e-01 : tensor<256xbf16>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$input, F64Attr:$factor);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = "$input `by` $factor attr-dict `:` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Constants, conversions, masks
//===----------------------------------------------------------------------===//

def Titan_ConstantOp : Titan_DifferentiableOp<"constant", [ConstantLike,
    DeclareOpInterfaceMethods<InferTypeOpInterface>],
    ["checkPartition", "partition"]> {
  let summary = "A constant tensor";
  let description = [{
    `result = value`; the result type is the type of the elements attribute.

    Example:

    ```mlir
    %ninf = titan.constant dense<0xFF800000> : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Titan_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Titan_CastOp : Titan_DifferentiableOp<"cast",
    [SameOperandsAndResultShape, Elementwise]> {
  let summary = "Converts the element type of a tensor";
  let description = [{
    `result[i] = convert(input[i])` (`Tensor.to(dtype)`): floats round to
    nearest even, floats to integers truncate toward zero, i1 converts to
    0 or 1, and a value converts to i1 as `value != 0`.

    Example:

    ```mlir
    %1 = titan.cast %0 : tensor<2x64xf32> to tensor<2x64xbf16>
    ```
  }];
  let arguments = (ins Titan_Tensor:$input);
  let results = (outs Titan_Tensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `to` type($result)
  }];
  let hasFolder = 1;
}

def Titan_IotaOp : Titan_DifferentiableOp<"iota", [],
    ["checkPartition", "partition"]> {
  let summary = "A tensor of indices along one dimension";
  let description = [{
    `result[i_0, ..., i_n] = i_dim`, converted to the element type
    (positions for RoPE tables and causal masks).

    Example:

    ```mlir
    %rows = titan.iota dim 0 : tensor<64x64xi64>
    ```
  }];
  let arguments = (ins I64Attr:$dim);
  let results = (outs RankedTensorOf<[F32, F16, BF16, F64, I64, I32]>:$result);
  let assemblyFormat = "`dim` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

/// A 0-d f32 tensor, which assembly formats may leave out (the step).
def Titan_F32Scalar : 0DTensorOf<[F32]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getF32Type())">;

def Titan_RandomUniformOp : Titan_DifferentiableOp<"random_uniform"> {
  let summary = "Uniform random numbers in [0, 1) picked by counters";
  let description = [{
    `result[i]` is a number in [0, 1), a multiple of 2^-24, that depends
    only on `counters[i]`, `stream`, `seed` and `step` (0 when absent):
    a counter-based generator (splitmix64's mixing function applied to the
    counter offset by a key derived from the other three), so any element
    is computed where it is needed, the same on every rank and backend and
    again when recomputed. The importer makes dropout in training mode
    from it: the counters are the elements' positions in the whole
    (global) tensor, so that every parallel layout draws the same numbers,
    each dropout of the model has its own `stream`, and
    titan-build-train-step passes the step and the job's seed, so that
    every step draws new ones. No gradient.

    Example:

    ```mlir
    %u = titan.random_uniform %positions stream 3 seed 42 step %step
        : tensor<2x64x256xi64> -> tensor<2x64x256xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I64]>:$counters,
                       Optional<Titan_F32Scalar>:$step,
                       I64Attr:$stream, DefaultValuedAttr<I64Attr, "0">:$seed);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $counters `stream` $stream (`seed` $seed^)? (`step` $step^)? attr-dict
    `:` type($counters) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Titan_StopGradientOp : Titan_DifferentiableOp<"stop_gradient",
    [SameOperandsAndResultType, Elementwise]> {
  let summary = "The input, as a constant to differentiation";
  let description = [{
    `result = input`, through which no gradient flows (`Tensor.detach()`;
    the padding row of `nn.Embedding(padding_idx=...)`): its VJP gives the
    input no cotangent. titan-build-train-step replaces it by its input
    once the gradients are built, so later passes never see it.

    Example:

    ```mlir
    %1 = titan.stop_gradient %0 : tensor<4x64xf32>
    ```
  }];
  let arguments = (ins Titan_Tensor:$input);
  let results = (outs Titan_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Titan_CompareOp : Titan_DifferentiableOp<"compare",
    [AllTypesMatch<["lhs", "rhs"]>, SameOperandsAndResultShape,
     Elementwise]> {
  let summary = "Elementwise comparison";
  let description = [{
    `result[i] = lhs[i] <predicate> rhs[i]` with `predicate` one of `eq`,
    `ne`, `lt`, `le`, `gt`, `ge`. Floats compare as in PyTorch: a NaN
    operand makes every predicate false except `ne`.

    Example (GPT-2's `mask == 0`):

    ```mlir
    %m = titan.compare eq, %mask, %zero : tensor<64x64xf32> -> tensor<64x64xi1>
    ```
  }];
  let arguments = (ins StrAttr:$predicate, Titan_Tensor:$lhs,
                       Titan_Tensor:$rhs);
  let results = (outs RankedTensorOf<[I1]>:$result);
  let assemblyFormat = [{
    custom<BareKeyword>($predicate) `,` $lhs `,` $rhs attr-dict
    `:` type($lhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Titan_SelectOp : Titan_DifferentiableOp<"select",
    [AllTypesMatch<["on_true", "on_false", "result"]>,
     SameOperandsAndResultShape, Elementwise]> {
  let summary = "Elementwise choice between two tensors";
  let description = [{
    `result[i] = cond[i] ? on_true[i] : on_false[i]` (`torch.where`;
    `masked_fill(mask, v)` is `select(mask, splat(v), x)`).

    Example:

    ```mlir
    %s = titan.select %m, %ninf, %scores : tensor<64x64xi1>, tensor<64x64xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I1]>:$cond, Titan_Tensor:$on_true,
                       Titan_Tensor:$on_false);
  let results = (outs Titan_Tensor:$result);
  let assemblyFormat = [{
    $cond `,` $on_true `,` $on_false attr-dict
    `:` type($cond) `,` type($result)
  }];
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

/// Reduction over the dimensions `dims` (sorted, unique, in range); the
/// reduced dimensions are kept with size 1 when `keepdim` is set and dropped
/// otherwise.
class Titan_ReduceOp<string mnemonic, list<string> partitionMethods = []>
    : Titan_DifferentiableOp<mnemonic, [], partitionMethods> {
  let arguments = (ins Titan_FloatTensor:$input, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keepdim);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $input `dims` $dims (`keepdim` $keepdim^)? attr-dict
    `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Titan_ReduceSumOp : Titan_ReduceOp<"reduce_sum"> {
  let summary = "Sum over dimensions";
  let description = [{
    `result = input.sum(dims, keepdim)`.

    Example:

    ```mlir
    %1 = titan.reduce_sum %0 dims [0, 1] : tensor<2x64x256xf32> -> tensor<256xf32>
    ```
  }];
}

def Titan_ReduceMaxOp : Titan_ReduceOp<"reduce_max"> {
  let summary = "Maximum over dimensions";
  let description = [{
    `result = input.amax(dims, keepdim)`.

    Example:

    ```mlir
    %1 = titan.reduce_max %0 dims [1] keepdim : tensor<64x256xf32> -> tensor<64x1xf32>
    ```
  }];
}

def Titan_ReduceMeanOp : Titan_ReduceOp<"reduce_mean",
    ["checkPartition", "partition"]> {
  let summary = "Arithmetic mean over dimensions";
  let description = [{
    `result = input.mean(dims, keepdim)`.

    Example:

    ```mlir
    %1 = titan.reduce_mean %0 dims [2] keepdim : tensor<2x64x256xf32> -> tensor<2x64x1xf32>
    ```
  }];
}

/// Softmax-like normalization along one dimension.
class Titan_SoftmaxOp<string mnemonic> : Titan_DifferentiableOp<mnemonic,
    [SameOperandsAndResultType]> {
  let arguments = (ins Titan_FloatTensor:$input, I64Attr:$dim);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = "$input `dim` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Titan_SoftmaxOp : Titan_SoftmaxOp<"softmax"> {
  let summary = "Softmax along one dimension";
  let description = [{
    `result = exp(input - max) / sum(exp(input - max))` along `dim`
    (`torch.softmax(input, dim)`, computed stably).

    Example:

    ```mlir
    %p = titan.softmax %s dim 3 : tensor<2x16x64x64xf32>
    ```
  }];
}

def Titan_LogSoftmaxOp : Titan_SoftmaxOp<"log_softmax"> {
  let summary = "Log-softmax along one dimension";
  let description = [{
    `result = input - max - log(sum(exp(input - max)))` along `dim`
    (`torch.log_softmax(input, dim)`).

    Example:

    ```mlir
    %p = titan.log_softmax %logits dim 1 : tensor<128x2048xf32>
    ```
  }];
}

def Titan_RmsNormOp : Titan_DifferentiableOp<"rms_norm",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "RMSNorm over the last dimension";
  let description = [{
    `result = input * rsqrt(mean(input^2, -1) + eps) * weight`, `weight` of
    the size of the last dimension (Llama's RMSNorm; `eps` > 0).

    Example:

    ```mlir
    %1 = titan.rms_norm %x, %w eps 1.000000e-05 : tensor<2x64x256xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$input, Titan_FloatTensor:$weight,
                       F64Attr:$eps);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `eps` $eps attr-dict `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

def Titan_LayerNormOp : Titan_DifferentiableOp<"layer_norm",
    [AllTypesMatch<["input", "result"]>, AllTypesMatch<["weight", "bias"]>]> {
  let summary = "LayerNorm over the last dimension";
  let description = [{
    `result = (input - mean) * rsqrt(var + eps) * weight + bias` over the last
    dimension, with the biased variance (GPT-2's `nn.LayerNorm`; `eps` > 0).

    Example:

    ```mlir
    %1 = titan.layer_norm %x, %w, %b eps 1.000000e-05 : tensor<2x64x768xf32>, tensor<768xf32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$input, Titan_FloatTensor:$weight,
                       Titan_FloatTensor:$bias, F64Attr:$eps);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias `eps` $eps attr-dict
    `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Contractions and model-level ops
//===----------------------------------------------------------------------===//

def Titan_MatmulOp : Titan_DifferentiableOp<"matmul", [
    OptionalTypesMatchWith<"addend has the result's type", "result", "addend",
                           "$_self">]> {
  let summary = "Batched matrix multiplication";
  let description = [{
    `result[b..., m, n] = sum_k lhs'[b..., m, k] * rhs'[b..., k, n]`, where
    `lhs'` is `lhs` with its last two dims swapped when `transpose_lhs` is
    set (likewise `rhs'`). `lhs` has rank >= 2; `rhs` has the rank of `lhs`
    (same batch dims) or rank 2 (one matrix shared by every batch, e.g. a
    weight). All element types agree; accumulation is in f32 at least.

    With an `addend` (the result's type), `addend[b..., m, n]` is added to
    the sum before it is rounded to the result type, once (cuBLASLt's
    `beta = 1`): `titan-fuse-addends` makes the residual adds and
    gradient sums that read a product so. A sharded contraction dim would
    add the addend once per shard, so it stays whole on every rank then.

    Example (`x @ W.T` of `nn.Linear`, and `h + x @ W.T`):

    ```mlir
    %y = titan.matmul %x, %w transpose_rhs
        : tensor<2x64x256xbf16>, tensor<1024x256xbf16> -> tensor<2x64x1024xbf16>
    %z = titan.matmul %x, %w transpose_rhs plus %h
        : tensor<2x64x256xbf16>, tensor<1024x256xbf16> -> tensor<2x64x1024xbf16>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$lhs, Titan_FloatTensor:$rhs,
                       Optional<Titan_FloatTensor>:$addend,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)?
    (`transpose_rhs` $transpose_rhs^)? (`plus` $addend^)? attr-dict
    `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Titan_EmbeddingOp : Titan_DifferentiableOp<"embedding", [],
    ["partition"]> {
  let summary = "Looks up rows of an embedding table";
  let description = [{
    `result[i..., :] = table[ids[i...], :]` (`nn.Embedding`); `table` is
    [vocab, dim], the result is `ids`' shape followed by dim. Ids outside
    [0, vocab) are undefined behavior.

    Example:

    ```mlir
    %h = titan.embedding %tok_embeddings, %tokens
        : tensor<2048x256xf32>, tensor<2x64xi64> -> tensor<2x64x256xf32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$table, Titan_IndexTensor:$ids);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $ids attr-dict `:` type($table) `,` type($ids) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Titan_CheckIdsOp : Titan_DifferentiableOp<"check_ids",
    [SameOperandsAndResultType]> {
  let summary = "Stops the step at an id outside a table's rows";
  let description = [{
    `result = ids` when every id lies in [0, `bound`); otherwise the step
    stops with an error that names `table` (the tensor the ids index, for
    the message), the first id outside and its position. The importer puts
    it before a lookup whose ids the model computes (OPT's positions from
    `cumsum` of a mask) where it can neither prove them in range nor leave
    them to the check of the step's inputs: lookups do not check their ids.
    The runtime executes it (a host op whose result is a view of `ids`);
    it has no gradient. Pure: a check whose result nothing reads guards no
    lookup and may go.

    Example:

    ```mlir
    %p = titan.check_ids %positions below 18 of "pos.weight"
        : tensor<2x64xi64>
    ```
  }];
  let arguments = (ins Titan_IndexTensor:$ids, I64Attr:$bound,
                       StrAttr:$table);
  let results = (outs Titan_IndexTensor:$result);
  let assemblyFormat = [{
    $ids `below` $bound `of` $table attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Titan_RopeOp : Titan_DifferentiableOp<"rope",
    [AllTypesMatch<["input", "result"]>, AllTypesMatch<["cos", "sin"]>]> {
  let summary = "Rotary position embedding";
  let description = [{
    Rotates pairs of `input` [batch, seq, heads, head_dim] by the angles whose
    cosines and sines are `cos`, `sin` [seq, head_dim / 2]: for pair `j` of
    position `s`, `(a, b) -> (a cos - b sin, a sin + b cos)`. With `style` =
    `interleaved` the pairs are (2j, 2j+1) (torchtitan's complex form,
    `view_as_complex(x) * freqs_cis`); with `half` they are (j, j + head_dim/2)
    (the rotate-half form of Hugging Face models). head_dim must be even. The
    tables may have another float type than `input` (torchtitan keeps them in
    f32); the rotation computes in the wider type and rounds to `input`'s.

    Example:

    ```mlir
    %q = titan.rope %xq, %cos, %sin interleaved
        : tensor<2x64x16x16xbf16>, tensor<64x8xf32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$input, Titan_FloatTensor:$cos,
                       Titan_FloatTensor:$sin, StrAttr:$style);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $cos `,` $sin custom<BareKeyword>($style) attr-dict
    `:` type($input) `,` type($cos)
  }];
  let hasVerifier = 1;
}

def Titan_AttentionOp : Titan_DifferentiableOp<"attention",
    [AllTypesMatch<["q", "result"]>, AllTypesMatch<["k", "v"]>,
     TypesMatchWith<"lse is q's [batch, q_heads, seq] in f32 (f64 for f64 q)",
                    "q", "lse", "::mlir::titan::getAttentionLseType($_self)">]> {
  let summary = "Scaled dot-product attention with grouped KV heads";
  let description = [{
    `result = softmax(q k^T * scale + mask) v` per batch and query head, with
    `q` [batch, q_heads, seq, head_dim] and `k`, `v` [batch, kv_heads, seq,
    head_dim]; query head `h` reads KV head `h / (q_heads / kv_heads)`, so
    kv_heads must divide q_heads (GQA; MHA when equal); the three share
    batch, seq and head_dim and one element type. With `causal`,
    position `i` attends to positions `<= i` only. `scale` defaults to
    `1 / sqrt(head_dim)` and must be positive
    (`F.scaled_dot_product_attention(q, k, v, is_causal, scale,
    enable_gqa=True)`).

    `lse` [batch, q_heads, seq] is each query row's log-sum-exp of its
    masked, scaled scores (natural log; f32, f64 for f64 `q`), what a
    flash-attention forward keeps for its backward: `titan.attention_grad`
    recomputes the probabilities from it instead of the whole forward.

    Example:

    ```mlir
    %o, %lse = titan.attention %q, %k, %v causal
        : tensor<2x32x64x128xbf16>, tensor<2x8x64x128xbf16>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$q, Titan_FloatTensor:$k,
                       Titan_FloatTensor:$v, UnitAttr:$causal,
                       OptionalAttr<F64Attr>:$scale);
  let results = (outs Titan_FloatTensor:$result, Titan_FloatTensor:$lse);
  let assemblyFormat = [{
    $q `,` $k `,` $v (`causal` $causal^)? (`scale` $scale^)? attr-dict
    `:` type($q) `,` type($k)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The softmax scale: `scale` if set, else 1/sqrt(head_dim).
    double getScaleOrDefault();
  }];
}

def Titan_CrossEntropyOp : Titan_DifferentiableOp<"cross_entropy", [],
    ["checkPartition", "partition"]> {
  let summary = "Mean cross-entropy loss of logits against labels";
  let description = [{
    `result = mean over {i : labels[i] != ignore_index} of
    (logsumexp(logits[i, :]) - logits[i, labels[i]])`
    (`F.cross_entropy(logits, labels, ignore_index=ignore_index)`, reduction
    "mean"; NaN when every label is ignored). `logits` is [..., vocab],
    `labels` has `logits`' shape without the last dim; the loss is computed
    and returned in f32 (in f64 for f64 logits, so that gradients can be
    checked by finite differences).

    With `replicated_vocab` (torchtitan's `disable_loss_parallel`), the
    sharding rule keeps the vocab dim whole: no loss parallelism, the logits
    are gathered before the loss.

    Example:

    ```mlir
    %loss = titan.cross_entropy %logits, %labels
        : tensor<128x2048xbf16>, tensor<128xi64> -> tensor<f32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$logits, Titan_IndexTensor:$labels,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                       UnitAttr:$replicated_vocab);
  let results = (outs 0DTensorOf<[F32, F64]>:$result);
  let assemblyFormat = [{
    $logits `,` $labels (`ignore_index` $ignore_index^)? attr-dict
    `:` type($logits) `,` type($labels) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

def Titan_ReshapeOp : Titan_DifferentiableOp<"reshape"> {
  let summary = "Reinterprets a tensor with another shape";
  let description = [{
    `result` holds `input`'s elements in row-major order with the result's
    shape (`Tensor.reshape`); element types and element counts agree.

    Example:

    ```mlir
    %1 = titan.reshape %0 : tensor<2x64x256xf32> -> tensor<2x64x16x16xf32>
    ```
  }];
  let arguments = (ins Titan_Tensor:$input);
  let results = (outs Titan_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Titan_TransposeOp : Titan_DifferentiableOp<"transpose"> {
  let summary = "Permutes the dimensions of a tensor";
  let description = [{
    `result[j] = input[k]` with `k[permutation[d]] = j[d]`, so
    `result.shape[d] = input.shape[permutation[d]]`
    (`Tensor.permute(permutation)`).

    Example:

    ```mlir
    %1 = titan.transpose %0 [0, 2, 1, 3]
        : tensor<2x64x16x16xf32> -> tensor<2x16x64x16xf32>
    ```
  }];
  let arguments = (ins Titan_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Titan_Tensor:$result);
  let assemblyFormat = [{
    $input $permutation attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Titan_SliceOp : Titan_DifferentiableOp<"slice", [], ["partition"]> {
  let summary = "A strided static slice";
  let description = [{
    `result[j] = input[start + j * step]` per dim, for
    `0 <= start <= limit <= size` and `step >= 1`; the result dim is
    `ceil((limit - start) / step)` (`x[start:limit:step, ...]`).

    Example:

    ```mlir
    %1 = titan.slice %0 [0, 0] to [64, 64] step [1, 1]
        : tensor<128x64xf32> -> tensor<64x64xf32>
    ```
  }];
  let arguments = (ins Titan_Tensor:$input, DenseI64ArrayAttr:$start,
                       DenseI64ArrayAttr:$limit, DenseI64ArrayAttr:$step);
  let results = (outs Titan_Tensor:$result);
  let assemblyFormat = [{
    $input $start `to` $limit `step` $step attr-dict
    `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Titan_ConcatOp : Titan_DifferentiableOp<"concat"> {
  let summary = "Concatenates tensors along one dimension";
  let description = [{
    `result = torch.cat(inputs, dim)`: the operands have one rank and element
    type and agree on every dim except `dim`, which the result sums.

    Example:

    ```mlir
    %1 = titan.concat %a, %b dim 1
        : (tensor<64x8xf32>, tensor<64x8xf32>) -> tensor<64x16xf32>
    ```
  }];
  let arguments = (ins Variadic<Titan_Tensor>:$inputs, I64Attr:$dim);
  let results = (outs Titan_Tensor:$result);
  let assemblyFormat = [{
    $inputs `dim` $dim attr-dict `:` functional-type($inputs, $result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Titan_BroadcastInDimOp : Titan_DifferentiableOp<"broadcast_in_dim"> {
  let summary = "Broadcasts a tensor to a larger shape";
  let description = [{
    `result[j] = input[k]` with `k[d] = size(input, d) == 1 ? 0 :
    j[dims[d]]` (stablehlo.broadcast_in_dim): operand dim `d` maps to result
    dim `dims[d]`; the `dims` are unique and each operand dim is 1 or equal
    to its result dim. This is how titan broadcasts: no other op does it
    implicitly.

    Example (a bias over [batch, seq, dim]):

    ```mlir
    %1 = titan.broadcast_in_dim %bias dims [2]
        : tensor<768xf32> -> tensor<2x64x768xf32>
    ```
  }];
  let arguments = (ins Titan_Tensor:$input, DenseI64ArrayAttr:$dims);
  let results = (outs Titan_Tensor:$result);
  let assemblyFormat = [{
    $input `dims` $dims attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Backward-only ops (emitted by the VJP rules, not differentiable again)
//===----------------------------------------------------------------------===//

def Titan_GeluGradOp : Titan_ComputeOp<"gelu_grad",
    [SameOperandsAndResultType, Elementwise]> {
  let summary = "Cotangent of GELU's input";
  let description = [{
    `result[i] = grad[i] * gelu'(input[i])` for `titan.gelu` with the same
    `approximate` (`none`: `Phi(x) + x phi(x)` with the normal CDF and
    density; `tanh`: the derivative of the tanh form). Fused because the exact
    form needs `erf`, which titan has no op for.

    Example:

    ```mlir
    %dx = titan.gelu_grad %x, %dy approximate tanh : tensor<2x64x1024xf32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$input, Titan_FloatTensor:$grad,
                       StrAttr:$approximate);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad `approximate` custom<BareKeyword>($approximate) attr-dict
    `:` type($result)
  }];
  let hasVerifier = 1;
}

def Titan_RmsNormGradOp : Titan_ComputeOp<"rms_norm_grad",
    [AllTypesMatch<["input", "grad", "input_grad"]>,
     AllTypesMatch<["weight", "weight_grad"]>,
     OptionalTypesMatchWith<"addend has the input's type", "input", "addend",
                            "$_self">]> {
  let summary = "Cotangents of RMSNorm's input and weight";
  let description = [{
    For `y = x * r * w` with `r = rsqrt(mean(x^2, -1) + eps)` per row and the
    cotangent `grad` of `y`: `input_grad = r * (g - x * r^2 * mean(g * x, -1))`
    with `g = grad * w`, and `weight_grad = sum over rows of grad * x * r`.
    The statistics are recomputed from `input`. With an `addend` (the
    input's type), it is added to `input_grad` before the one rounding: the
    residual stream's cotangent, which `titan-fuse-addends` folds in.

    Example:

    ```mlir
    %dx, %dw = titan.rms_norm_grad %x, %w, %dy eps 1.000000e-05
        : tensor<2x64x256xf32>, tensor<256xf32>
    %dh, %dw2 = titan.rms_norm_grad %x, %w, %dy plus %g eps 1.000000e-05
        : tensor<2x64x256xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$input, Titan_FloatTensor:$weight,
                       Titan_FloatTensor:$grad,
                       Optional<Titan_FloatTensor>:$addend, F64Attr:$eps);
  let results = (outs Titan_FloatTensor:$input_grad,
                      Titan_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $grad (`plus` $addend^)? `eps` $eps attr-dict
    `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

def Titan_LayerNormGradOp : Titan_ComputeOp<"layer_norm_grad",
    [AllTypesMatch<["input", "grad", "input_grad"]>,
     AllTypesMatch<["weight", "weight_grad", "bias_grad"]>]> {
  let summary = "Cotangents of LayerNorm's input, weight and bias";
  let description = [{
    For `y = xhat * w + b` with `xhat = (x - mean) * r`, `r = rsqrt(var +
    eps)` per row and the cotangent `grad` of `y`: `input_grad = r * (g -
    mean(g, -1) - xhat * mean(g * xhat, -1))` with `g = grad * w`,
    `weight_grad = sum over rows of grad * xhat`, `bias_grad = sum over rows
    of grad`. The statistics are recomputed from `input`; the bias is not
    needed.

    Example:

    ```mlir
    %dx, %dw, %db = titan.layer_norm_grad %x, %w, %dy eps 1.000000e-05
        : tensor<2x64x768xf32>, tensor<768xf32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$input, Titan_FloatTensor:$weight,
                       Titan_FloatTensor:$grad, F64Attr:$eps);
  let results = (outs Titan_FloatTensor:$input_grad,
                      Titan_FloatTensor:$weight_grad,
                      Titan_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $grad `eps` $eps attr-dict
    `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

def Titan_EmbeddingGradOp : Titan_DifferentiableOp<"embedding_grad", [],
    ["partition"]> {
  let summary = "Cotangent of an embedding table (scatter-add of rows)";
  let description = [{
    `result = zeros; result[ids[i...], :] += grad[i..., :]` for every index
    `i...` of `ids`: the cotangent of `titan.embedding`'s table, of the
    result type [vocab, dim]; `grad` has `ids`' shape followed by dim. Ids
    outside [0, vocab) are undefined behavior.

    The importer also builds the model's own scatters on it (`scatter_add`,
    `scatter`, `index_add`, `x[ids] = v`): its VJP is the lookup of the
    result's cotangent at `ids` (`titan.embedding`).

    Example:

    ```mlir
    %dtable = titan.embedding_grad %tokens, %dh
        : tensor<2x64xi64>, tensor<2x64x256xf32> -> tensor<2048x256xf32>
    ```
  }];
  let arguments = (ins Titan_IndexTensor:$ids, Titan_FloatTensor:$grad);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $ids `,` $grad attr-dict `:` type($ids) `,` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Titan_AttentionGradOp : Titan_ComputeOp<"attention_grad",
    [AllTypesMatch<["q", "out", "grad", "q_grad"]>,
     AllTypesMatch<["k", "v", "k_grad", "v_grad"]>,
     TypesMatchWith<"lse is q's [batch, q_heads, seq] in f32 (f64 for f64 q)",
                    "q", "lse", "::mlir::titan::getAttentionLseType($_self)">]> {
  let summary = "Cotangents of attention's q, k and v";
  let description = [{
    The VJP of `titan.attention` with the same `causal` and `scale`, given
    its results `out` and `lse` and the cotangent `grad` of `out`: the
    probabilities `p = exp(q k^T * scale + mask - lse)` are recomputed
    blockwise from `q`, `k` and `lse`, then `dv = p^T grad`, `ds = p *
    (grad v^T - rowsum(grad * out))`, `dq = ds k * scale`, `dk = ds^T q *
    scale`. With grouped KV heads, `k_grad` and `v_grad` sum over the query
    heads that read each KV head.

    Example:

    ```mlir
    %dq, %dk, %dv = titan.attention_grad %q, %k, %v, %o, %lse, %do causal
        : tensor<2x32x64x128xbf16>, tensor<2x8x64x128xbf16>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$q, Titan_FloatTensor:$k,
                       Titan_FloatTensor:$v, Titan_FloatTensor:$out,
                       Titan_FloatTensor:$lse, Titan_FloatTensor:$grad,
                       UnitAttr:$causal, OptionalAttr<F64Attr>:$scale);
  let results = (outs Titan_FloatTensor:$q_grad, Titan_FloatTensor:$k_grad,
                      Titan_FloatTensor:$v_grad);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $out `,` $lse `,` $grad (`causal` $causal^)?
    (`scale` $scale^)? attr-dict `:` type($q) `,` type($k)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The softmax scale: `scale` if set, else 1/sqrt(head_dim).
    double getScaleOrDefault();
  }];
}

def Titan_CrossEntropyGradOp : Titan_ComputeOp<"cross_entropy_grad",
    [AllTypesMatch<["logits", "result"]>], ["partition"]> {
  let summary = "Cotangent of cross-entropy's logits";
  let description = [{
    `result[i, :] = grad * (softmax(logits[i, :]) - onehot(labels[i])) /
    count` for rows whose label is not `ignore_index` and zero for the
    others, where `count` is the number of rows not ignored and `grad` the
    cotangent of `titan.cross_entropy`'s 0-d loss (all zero when every label
    is ignored, as in PyTorch). `replicated_vocab` as in
    `titan.cross_entropy`.

    Example:

    ```mlir
    %dlogits = titan.cross_entropy_grad %logits, %labels, %dloss
        : tensor<128x2048xbf16>, tensor<128xi64>, tensor<f32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$logits, Titan_IndexTensor:$labels,
                       0DTensorOf<[F32, F64]>:$grad,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                       UnitAttr:$replicated_vocab);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $grad (`ignore_index` $ignore_index^)? attr-dict
    `:` type($logits) `,` type($labels) `,` type($grad)
  }];
  let hasVerifier = 1;
}

def Titan_PadOp : Titan_DifferentiableOp<"pad"> {
  let summary = "Places a tensor at a strided position in a zero tensor";
  let description = [{
    `result = zeros; result[start + j * step] = input[j]` per dim: the
    inverse of `titan.slice` (the cotangent of a slice's input), with the
    shape of the result type. `start` >= 0, `step` >= 1 and the last element
    `start + (size - 1) * step` lies within the result. Its VJP is that
    slice of the result's cotangent (the importer pads in the forward too:
    `torch.diag` of a vector, strided writes past the end).

    Example:

    ```mlir
    %1 = titan.pad %0 [0, 1, 0] step [1, 2, 1]
        : tensor<2x8x64xf32> -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins Titan_Tensor:$input, DenseI64ArrayAttr:$start,
                       DenseI64ArrayAttr:$step);
  let results = (outs Titan_Tensor:$result);
  let assemblyFormat = [{
    $input $start `step` $step attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

/// A 0-d f32 tensor, whose type the assembly format need not spell.
def Titan_ScalarF32 : 0DTensorOf<[F32]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getF32Type())">;

def Titan_AdamWOp : Titan_ComputeOp<"adamw", [AllTypesMatch<["param",
    "exp_avg", "exp_avg_sq", "new_param", "new_exp_avg", "new_exp_avg_sq"]>]> {
  let summary = "One AdamW step of one parameter";
  let description = [{
    torch.optim.AdamW's update of `param` and its moments `exp_avg`,
    `exp_avg_sq` from `grad` (of the parameter's shape; any float type,
    widened or narrowed to the compute type first), multiplied first by
    `grad_scale` when given (the global-norm clipping coefficient). The
    compute type is the parameter's, or f32 for a bf16 or f16 parameter.
    With t = step + 1 and the step-dependent scalars computed in f64 (as
    PyTorch computes them in Python floats), then rounded to the compute
    type:

    ```
    decay = 1 - lr * weight_decay
    step_size = lr / (1 - beta1^t)
    correction2_sqrt = sqrt(1 - beta2^t)
    new_exp_avg = exp_avg * beta1 + g * (1 - beta1)
    new_exp_avg_sq = exp_avg_sq * beta2 + (g * g) * (1 - beta2)
    new_param = param * decay - (new_exp_avg / (sqrt(new_exp_avg_sq) /
                correction2_sqrt + eps)) * step_size
    ```

    each elementwise operation in the compute type, in this order (beta^t is
    computed as exp(t * log(beta))). A bf16 or f16 parameter and its moments
    are read widened to f32 and the three results round to their type once
    (to nearest even), as torch's fused AdamW computes low-precision
    parameters (pure bf16 training, `training.dtype = "bfloat16"`). titan-build-train-step emits
    one per parameter; titan-fuse-kernels keeps it for the runtime's kernel
    (`runtime-ops` "adamw", the CUDA backend's default) or expands it into
    these elementwise ops, which it fuses.

    With a `copy` type, the op also returns `new_param_copy`: `new_param`
    rounded (to nearest even) to that narrower float type, the copy the next
    step's forward reads under mixed precision (titan-keep-param-copies),
    written in the same pass over the parameter.

    Example:

    ```mlir
    %p1, %m1, %v1 = titan.adamw %p, %g, %m, %v lr %lr step %step
        grad_scale %clip betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08
        weight_decay 1.000000e-01 : tensor<256x64xf32>, tensor<256x64xf32>
    %p2, %m2, %v2, %c2 = titan.adamw %p, %g, %m, %v lr %lr step %step
        betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08
        weight_decay 1.000000e-01 : tensor<256x64xf32>, tensor<256x64xbf16>
        copy tensor<256x64xbf16>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$param, Titan_FloatTensor:$grad,
                       Titan_FloatTensor:$exp_avg,
                       Titan_FloatTensor:$exp_avg_sq, Titan_ScalarF32:$lr,
                       Titan_ScalarF32:$step,
                       Optional<Titan_ScalarF32>:$grad_scale, F64Attr:$beta1,
                       F64Attr:$beta2, F64Attr:$eps, F64Attr:$weight_decay);
  let results = (outs Titan_FloatTensor:$new_param,
                      Titan_FloatTensor:$new_exp_avg,
                      Titan_FloatTensor:$new_exp_avg_sq,
                      Optional<Titan_FloatTensor>:$new_param_copy);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `lr` $lr `step` $step
    (`grad_scale` $grad_scale^)? `betas` $beta1 `,` $beta2 `eps` $eps
    `weight_decay` $weight_decay attr-dict `:` type($param) `,` type($grad)
    (`copy` type($new_param_copy)^)?
  }];
  let hasVerifier = 1;
}

#endif // TITAN_COMPUTE_OPS
