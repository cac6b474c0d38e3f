//===- ShardingRules.cpp - ShardingRuleOpInterface of the compute ops -----===//
//
// The factor rule of every compute op (see ShardingRule.h for what a rule
// means on one mesh axis). Decisions per op family:
//
//  - Elementwise ops, constant, iota: one Parallel factor per dim. Linear in:
//    add/sub both operands together, mul either operand, div the dividend,
//    neg/scale the input, select both branches, gelu_grad the cotangent, a
//    cast that widens floats exactly (bf16/f16 -> f32) its input.
//  - Reductions: reduced dims are Reduction factors (reduce_max leaves
//    P(max)); a keepdim dim has no factor. reduce_sum/reduce_mean are linear.
//  - softmax/log_softmax: the normalized dim is NeedReplication.
//  - rms_norm/layer_norm: the normalized (last) dim is NeedReplication, as is
//    the weight (and bias) that spans it; the leading dims are Parallel, so
//    sequence parallelism shards them. Their *_grad ops: the leading dims
//    become Reduction factors (the weight and bias cotangents lack them and
//    come out Partial), linear in the cotangent.
//  - matmul: [b..., m, k] x [(b...,) k, n] -> [b..., m, n], k Reduction,
//    linear in either operand.
//  - rope: batch, seq and heads Parallel, head_dim and the tables' half dim
//    NeedReplication (pairs rotate within a head); linear in the input.
//  - attention: batch and KV heads Parallel; a query head dim is the two
//    factors [kv_heads, group] (GQA), so sharding KV heads shards query heads
//    alike and the group factor may shard query heads alone; seq and
//    head_dim NeedReplication (context parallel is a later rule). Linear in
//    v. attention_grad: the group factor is Reduction (dk, dv sum over the
//    query heads of a group), linear in the cotangent.
//  - Shape ops: transpose permutes factors; reshape factors both shapes into
//    common factors, outer first (gcd steps; a group of dims without a
//    common factor gets NeedReplication factors); slice and pad share a
//    factor only on dims they leave whole, concat on the dims it does not
//    concatenate; broadcast_in_dim maps kept dims and gives new and
//    expanded dims result-only factors. All are linear.
//
// Factors with custom lowering (OpShardingRule::customLowering): when one is
// sharded on a mesh axis, `titan-spmdize` must lower the op as follows
// (n = the ranks of the axis, r = this rank's coordinate, [lo, hi) = the
// rank's chunk of the factor):
//  - constant, non-splat: the rank's chunk of the value (a splat constant is
//    not custom: it is the same op on the local shape);
//  - iota along its dim: values lo + local index;
//  - reduce_mean's reduced dims: a local sum scaled by 1 / global count (the
//    result is P(sum), exact for uneven shards);
//  - embedding's vocabulary (Reduction, result P(sum)): look up ids - lo,
//    rows whose id is outside [lo, hi) are zero (masked lookup);
//  - embedding_grad's vocabulary (Parallel, result-only): scatter-add only
//    the ids in [lo, hi), at id - lo;
//  - cross_entropy's tokens (Reduction, result P(sum)): the local sum of the
//    token losses divided by the global count of non-ignored labels (an
//    all-reduce of the count over the axis);
//  - cross_entropy's vocabulary (Reduction, loss parallel, result P(sum)):
//    logsumexp from an all-reduce(max) of the row maxima and an
//    all-reduce(sum) of the shifted exp-sums over the axis; the target logit
//    is read only where labels fall in [lo, hi) (zero elsewhere); the
//    logsumexp term is counted on coordinate 0 only, so the local values sum
//    to the loss;
//  - cross_entropy_grad's tokens: the global count as for cross_entropy;
//    its vocabulary: softmax with the all-reduced logsumexp, one-hot only
//    for labels in [lo, hi).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/TitanDialect.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <numeric>

using namespace mlir;
using namespace mlir::titan;

//===----------------------------------------------------------------------===//
// OpShardingRule
//===----------------------------------------------------------------------===//

StringRef mlir::titan::stringifyFactorKind(FactorKind kind) {
  switch (kind) {
  case FactorKind::Parallel:
    return "parallel";
  case FactorKind::Reduction:
    return "reduction";
  case FactorKind::NeedReplication:
    return "need_replication";
  }
  llvm_unreachable("unknown factor kind");
}

int64_t OpShardingRule::addFactor(int64_t size, FactorKind kind, bool custom) {
  factorSizes.push_back(size);
  factorKinds.push_back(kind);
  customLowering.push_back(custom);
  return factorSizes.size() - 1;
}

/// Prints factor `index` as a letter (a..z) or f<index>.
static void printFactorName(raw_ostream &os, int64_t index) {
  if (index < 26)
    os << static_cast<char>('a' + index);
  else
    os << 'f' << index;
}

/// Prints a list of values' dims as `([a, b*c], [])`.
static void printDims(raw_ostream &os,
                      ArrayRef<SmallVector<SmallVector<int64_t, 1>>> values) {
  os << '(';
  llvm::interleaveComma(values, os, [&](const auto &dims) {
    os << '[';
    llvm::interleaveComma(dims, os, [&](const auto &factors) {
      if (factors.empty())
        os << '1';
      llvm::interleave(
          factors, os, [&](int64_t f) { printFactorName(os, f); }, "*");
    });
    os << ']';
  });
  os << ')';
}

std::string OpShardingRule::str() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  printDims(os, operandDims);
  os << " -> ";
  printDims(os, resultDims);
  os << " {";
  llvm::interleaveComma(llvm::seq<int64_t>(0, factorSizes.size()), os,
                        [&](int64_t f) {
                          printFactorName(os, f);
                          os << '=';
                          if (ShapedType::isDynamic(factorSizes[f]))
                            os << '?';
                          else
                            os << factorSizes[f];
                          if (factorKinds[f] != FactorKind::Parallel)
                            os << ' ' << stringifyFactorKind(factorKinds[f]);
                          if (customLowering[f])
                            os << " custom";
                        });
  os << '}';
  if (partialKind != ReduceKind::Sum)
    os << " partial=" << stringifyReduce(partialKind);
  if (!linearOperandGroups.empty()) {
    os << " linear=";
    llvm::interleaveComma(linearOperandGroups, os, [&](const auto &group) {
      os << '{';
      llvm::interleaveComma(group, os);
      os << '}';
    });
  }
  return text;
}

//===----------------------------------------------------------------------===//
// Rule builders shared by op families
//===----------------------------------------------------------------------===//

namespace {
/// The factors of each dim of one value.
using ValueDims = SmallVector<SmallVector<int64_t, 1>>;
using LinearGroups = ArrayRef<SmallVector<unsigned, 2>>;
} // namespace

/// The shape of a ranked tensor value.
static ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

/// Adds one factor of kind `kind` per dim of `shape`; returns the dims.
static ValueDims addFactorPerDim(OpShardingRule &rule, ArrayRef<int64_t> shape,
                                 FactorKind kind) {
  ValueDims dims;
  for (int64_t size : shape)
    dims.push_back({rule.addFactor(size, kind)});
  return dims;
}

/// Every operand and result has the dims of result 0, each a Parallel factor.
static OpShardingRule elementwiseRule(Operation *op, LinearGroups linear) {
  OpShardingRule rule;
  ValueDims dims =
      addFactorPerDim(rule, shapeOf(op->getResult(0)), FactorKind::Parallel);
  rule.operandDims.assign(op->getNumOperands(), dims);
  rule.resultDims.assign(op->getNumResults(), dims);
  rule.linearOperandGroups.assign(linear.begin(), linear.end());
  return rule;
}

/// Elementwise, with dim `dim` NeedReplication (softmax).
static OpShardingRule softmaxRule(Operation *op, int64_t dim) {
  OpShardingRule rule = elementwiseRule(op, {});
  rule.factorKinds[dim] = FactorKind::NeedReplication;
  return rule;
}

/// A reduction of the single operand over `reduced`.
static OpShardingRule reductionRule(Operation *op, ArrayRef<int64_t> reduced,
                                    bool keepdim, ReduceKind kind, bool custom,
                                    LinearGroups linear) {
  OpShardingRule rule;
  ValueDims input, result;
  for (auto [dim, size] : llvm::enumerate(shapeOf(op->getOperand(0)))) {
    bool isReduced = llvm::is_contained(reduced, static_cast<int64_t>(dim));
    int64_t f = rule.addFactor(
        size, isReduced ? FactorKind::Reduction : FactorKind::Parallel,
        isReduced && custom);
    input.push_back({f});
    if (!isReduced)
      result.push_back({f});
    else if (keepdim)
      result.push_back({});
  }
  rule.operandDims = {input};
  rule.resultDims = {result};
  rule.partialKind = kind;
  rule.linearOperandGroups.assign(linear.begin(), linear.end());
  return rule;
}

/// A norm over the last dim of operand 0 with per-channel parameters (the
/// other operands, except a cotangent operand `grad` that has operand 0's
/// shape). Forward: one result like operand 0. Backward (`isGrad`): the
/// first result is like operand 0, the others per-channel, and the leading
/// dims are Reduction factors.
static OpShardingRule normRule(Operation *op, bool isGrad) {
  OpShardingRule rule;
  ArrayRef<int64_t> shape = shapeOf(op->getOperand(0));
  ValueDims full =
      addFactorPerDim(rule, shape.drop_back(),
                      isGrad ? FactorKind::Reduction : FactorKind::Parallel);
  int64_t channel = rule.addFactor(shape.back(), FactorKind::NeedReplication);
  full.push_back({channel});
  ValueDims perChannel = {{channel}};
  for (Value operand : op->getOperands())
    rule.operandDims.push_back(
        shapeOf(operand).size() == shape.size() ? full : perChannel);
  for (Value result : op->getResults())
    rule.resultDims.push_back(
        shapeOf(result).size() == shape.size() ? full : perChannel);
  if (isGrad)
    rule.linearOperandGroups = {{2}};
  return rule;
}

/// The shape of a value of attention or its VJP.
enum class AttentionValue {
  /// [b, kv_heads * group, s, d]: q, the output and their cotangents.
  QLike,
  /// [b, kv_heads, s, d]: k, v and their cotangents.
  KLike,
  /// [b, kv_heads * group, s]: the log-sum-exp of each query row.
  RowStatistic,
};

/// Attention and its VJP, the shapes of whose operands and results are
/// `operands` and `results`.
static OpShardingRule attentionRule(Operation *op,
                                    ArrayRef<AttentionValue> operands,
                                    ArrayRef<AttentionValue> results,
                                    bool isGrad, LinearGroups linear) {
  OpShardingRule rule;
  ArrayRef<int64_t> q = shapeOf(op->getOperand(0));
  ArrayRef<int64_t> k = shapeOf(op->getOperand(1));
  int64_t batch = rule.addFactor(q[0], FactorKind::Parallel);
  int64_t kvHeads = rule.addFactor(k[1], FactorKind::Parallel);
  int64_t group =
      rule.addFactor(ShapedType::isDynamic(q[1]) || ShapedType::isDynamic(k[1])
                         ? ShapedType::kDynamic
                         : q[1] / k[1],
                     isGrad ? FactorKind::Reduction : FactorKind::Parallel);
  int64_t seq = rule.addFactor(q[2], FactorKind::NeedReplication);
  int64_t headDim = rule.addFactor(q[3], FactorKind::NeedReplication);
  auto dimsOf = [&](AttentionValue value) -> ValueDims {
    switch (value) {
    case AttentionValue::QLike:
      return {{batch}, {kvHeads, group}, {seq}, {headDim}};
    case AttentionValue::KLike:
      return {{batch}, {kvHeads}, {seq}, {headDim}};
    case AttentionValue::RowStatistic:
      return {{batch}, {kvHeads, group}, {seq}};
    }
    llvm_unreachable("an attention value");
  };
  for (AttentionValue value : operands)
    rule.operandDims.push_back(dimsOf(value));
  for (AttentionValue value : results)
    rule.resultDims.push_back(dimsOf(value));
  rule.linearOperandGroups.assign(linear.begin(), linear.end());
  return rule;
}

/// Cross-entropy and its VJP over logits [tokens..., vocab] and labels
/// [tokens...] (custom-lowered factors, see the file header); with
/// `replicatedVocab` the vocab must be whole (no loss parallelism).
static OpShardingRule crossEntropyRule(Operation *op, bool isGrad,
                                       bool replicatedVocab) {
  OpShardingRule rule;
  FactorKind kind = isGrad ? FactorKind::Parallel : FactorKind::Reduction;
  ArrayRef<int64_t> logits = shapeOf(op->getOperand(0));
  ValueDims tokens;
  for (int64_t size : logits.drop_back())
    tokens.push_back({rule.addFactor(size, kind, /*custom=*/true)});
  ValueDims full = tokens;
  int64_t vocab =
      replicatedVocab
          ? rule.addFactor(logits.back(), FactorKind::NeedReplication)
          : rule.addFactor(logits.back(), kind, /*custom=*/true);
  full.push_back({vocab});
  rule.operandDims = {full, tokens};
  if (isGrad) {
    rule.operandDims.push_back({});
    rule.resultDims = {full};
    rule.linearOperandGroups = {{2}};
  } else {
    rule.resultDims = {{}};
  }
  return rule;
}

/// An op whose operand 0 and result share a factor on the dims where
/// `isWhole(dim)` holds (of equal rank) and have separate NeedReplication
/// factors elsewhere (slice, pad).
static OpShardingRule
windowRule(Operation *op, llvm::function_ref<bool(int64_t dim)> isWhole) {
  OpShardingRule rule;
  ArrayRef<int64_t> in = shapeOf(op->getOperand(0));
  ArrayRef<int64_t> out = shapeOf(op->getResult(0));
  ValueDims input, result;
  for (int64_t dim : llvm::seq<int64_t>(0, in.size())) {
    if (isWhole(dim)) {
      int64_t f = rule.addFactor(in[dim], FactorKind::Parallel);
      input.push_back({f});
      result.push_back({f});
      continue;
    }
    input.push_back({rule.addFactor(in[dim], FactorKind::NeedReplication)});
    result.push_back({rule.addFactor(out[dim], FactorKind::NeedReplication)});
  }
  rule.operandDims = {input};
  rule.resultDims = {result};
  rule.linearOperandGroups = {{0}};
  return rule;
}

/// Factors `in` and `out` (shapes of equal element count) into common
/// factors, outer first: each step takes the gcd of what is left of the
/// current dims; where it is 1, the dims up to the next point where both
/// prefixes have equal products get NeedReplication factors of their own.
static OpShardingRule reshapeRule(ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
  OpShardingRule rule;
  ValueDims input(in.size()), result(out.size());
  auto isUsable = [](int64_t size) {
    return !ShapedType::isDynamic(size) && size > 0;
  };
  if (!llvm::all_of(in, isUsable) || !llvm::all_of(out, isUsable)) {
    rule.operandDims = {addFactorPerDim(rule, in, FactorKind::NeedReplication)};
    rule.resultDims = {addFactorPerDim(rule, out, FactorKind::NeedReplication)};
    rule.linearOperandGroups = {{0}};
    return rule;
  }
  size_t i = 0, j = 0;
  int64_t inLeft = in.empty() ? 1 : in[0];
  int64_t outLeft = out.empty() ? 1 : out[0];
  auto nextIn = [&] {
    ++i;
    inLeft = i < in.size() ? in[i] : 1;
  };
  auto nextOut = [&] {
    ++j;
    outLeft = j < out.size() ? out[j] : 1;
  };
  auto addReplicated = [&](ValueDims &dims, size_t dim, int64_t size) {
    if (size > 1)
      dims[dim].push_back(rule.addFactor(size, FactorKind::NeedReplication));
  };
  while (i < in.size() && j < out.size()) {
    if (inLeft == 1) {
      nextIn();
      continue;
    }
    if (outLeft == 1) {
      nextOut();
      continue;
    }
    int64_t common = std::gcd(inLeft, outLeft);
    if (common > 1) {
      int64_t f = rule.addFactor(common, FactorKind::Parallel);
      input[i].push_back(f);
      result[j].push_back(f);
      inLeft /= common;
      outLeft /= common;
      continue;
    }
    int64_t inProduct = inLeft, outProduct = outLeft;
    addReplicated(input, i, inLeft);
    addReplicated(result, j, outLeft);
    while (inProduct != outProduct) {
      if (inProduct < outProduct) {
        nextIn();
        addReplicated(input, i, inLeft);
        inProduct *= inLeft;
      } else {
        nextOut();
        addReplicated(result, j, outLeft);
        outProduct *= outLeft;
      }
    }
    nextIn();
    nextOut();
  }
  rule.operandDims = {input};
  rule.resultDims = {result};
  rule.linearOperandGroups = {{0}};
  return rule;
}

//===----------------------------------------------------------------------===//
// Elementwise ops, constants, masks
//===----------------------------------------------------------------------===//

OpShardingRule AddOp::getShardingRule() {
  return elementwiseRule(*this, {{0, 1}});
}
OpShardingRule SubOp::getShardingRule() {
  return elementwiseRule(*this, {{0, 1}});
}
OpShardingRule MulOp::getShardingRule() {
  return elementwiseRule(*this, {{0}, {1}});
}
OpShardingRule DivOp::getShardingRule() {
  return elementwiseRule(*this, {{0}});
}
OpShardingRule MaxOp::getShardingRule() { return elementwiseRule(*this, {}); }
OpShardingRule RoundedDivOp::getShardingRule() {
  return elementwiseRule(*this, {});
}
OpShardingRule RemainderOp::getShardingRule() {
  return elementwiseRule(*this, {});
}
OpShardingRule StopGradientOp::getShardingRule() {
  return elementwiseRule(*this, {{0}});
}
OpShardingRule NegOp::getShardingRule() {
  return elementwiseRule(*this, {{0}});
}
OpShardingRule ExpOp::getShardingRule() { return elementwiseRule(*this, {}); }
OpShardingRule LogOp::getShardingRule() { return elementwiseRule(*this, {}); }
OpShardingRule SqrtOp::getShardingRule() { return elementwiseRule(*this, {}); }
OpShardingRule RsqrtOp::getShardingRule() { return elementwiseRule(*this, {}); }
OpShardingRule TanhOp::getShardingRule() { return elementwiseRule(*this, {}); }
OpShardingRule SigmoidOp::getShardingRule() {
  return elementwiseRule(*this, {});
}
OpShardingRule SiluOp::getShardingRule() { return elementwiseRule(*this, {}); }
OpShardingRule CosOp::getShardingRule() { return elementwiseRule(*this, {}); }
OpShardingRule SinOp::getShardingRule() { return elementwiseRule(*this, {}); }
OpShardingRule ErfOp::getShardingRule() { return elementwiseRule(*this, {}); }
OpShardingRule GeluOp::getShardingRule() { return elementwiseRule(*this, {}); }
OpShardingRule ScaleOp::getShardingRule() {
  return elementwiseRule(*this, {{0}});
}
OpShardingRule CastOp::getShardingRule() {
  // An exact widening is linear: a sum of partial values may be widened
  // before it is reduced (gradients reduced in float32 under mixed
  // precision), which only rounds the sum less.
  if (isExactFloatWidening(getInput().getType().getElementType(),
                           getType().getElementType()))
    return elementwiseRule(*this, {{0}});
  return elementwiseRule(*this, {});
}
OpShardingRule CompareOp::getShardingRule() {
  return elementwiseRule(*this, {});
}
OpShardingRule SelectOp::getShardingRule() {
  return elementwiseRule(*this, {{1, 2}});
}
OpShardingRule GeluGradOp::getShardingRule() {
  return elementwiseRule(*this, {{1}});
}

OpShardingRule ConstantOp::getShardingRule() {
  OpShardingRule rule = elementwiseRule(*this, {});
  auto dense = dyn_cast<DenseElementsAttr>(getValue());
  rule.customLowering.assign(rule.factorSizes.size(),
                             !dense || !dense.isSplat());
  return rule;
}

OpShardingRule RandomUniformOp::getShardingRule() {
  OpShardingRule rule = elementwiseRule(*this, {});
  if (getStep())
    rule.operandDims[1].clear();
  return rule;
}

OpShardingRule CheckIdsOp::getShardingRule() {
  return elementwiseRule(*this, {});
}

OpShardingRule IotaOp::getShardingRule() {
  OpShardingRule rule = elementwiseRule(*this, {});
  rule.customLowering[getDim()] = true;
  return rule;
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

OpShardingRule ReduceSumOp::getShardingRule() {
  return reductionRule(*this, getDims(), getKeepdim(), ReduceKind::Sum,
                       /*custom=*/false, {{0}});
}
OpShardingRule ReduceMaxOp::getShardingRule() {
  return reductionRule(*this, getDims(), getKeepdim(), ReduceKind::Max,
                       /*custom=*/false, {});
}
OpShardingRule ReduceMeanOp::getShardingRule() {
  return reductionRule(*this, getDims(), getKeepdim(), ReduceKind::Sum,
                       /*custom=*/true, {{0}});
}
OpShardingRule SoftmaxOp::getShardingRule() {
  return softmaxRule(*this, getDim());
}
OpShardingRule LogSoftmaxOp::getShardingRule() {
  return softmaxRule(*this, getDim());
}
OpShardingRule RmsNormOp::getShardingRule() {
  return normRule(*this, /*isGrad=*/false);
}
OpShardingRule LayerNormOp::getShardingRule() {
  return normRule(*this, /*isGrad=*/false);
}
OpShardingRule RmsNormGradOp::getShardingRule() {
  OpShardingRule rule = normRule(*this, /*isGrad=*/true);
  if (getAddend())
    rule.linearOperandGroups = {{2, 3}};
  return rule;
}
OpShardingRule LayerNormGradOp::getShardingRule() {
  return normRule(*this, /*isGrad=*/true);
}

/// Elementwise over the parameter, its gradient and moments and the
/// updated three; the scalars (lr, step, the clipping coefficient) have no
/// dims. Not linear in anything: a Partial gradient is reduced first.
OpShardingRule AdamWOp::getShardingRule() {
  OpShardingRule rule = elementwiseRule(*this, {});
  for (unsigned scalar = 4; scalar < getNumOperands(); ++scalar)
    rule.operandDims[scalar].clear();
  return rule;
}

//===----------------------------------------------------------------------===//
// Contractions and model-level ops
//===----------------------------------------------------------------------===//

OpShardingRule MatmulOp::getShardingRule() {
  OpShardingRule rule;
  ArrayRef<int64_t> lhs = shapeOf(getLhs());
  ArrayRef<int64_t> result = shapeOf(getResult());
  size_t rank = lhs.size();
  ValueDims batch =
      addFactorPerDim(rule, result.drop_back(2), FactorKind::Parallel);
  int64_t m = rule.addFactor(result[rank - 2], FactorKind::Parallel);
  int64_t n = rule.addFactor(result[rank - 1], FactorKind::Parallel);
  // Each shard of a sharded contraction dim would add the addend.
  int64_t k = rule.addFactor(lhs[getTransposeLhs() ? rank - 2 : rank - 1],
                             getAddend() ? FactorKind::NeedReplication
                                         : FactorKind::Reduction);
  auto matrix = [](ValueDims dims, int64_t rows, int64_t cols,
                   bool transposed) {
    dims.push_back({transposed ? cols : rows});
    dims.push_back({transposed ? rows : cols});
    return dims;
  };
  bool sharedRhs = shapeOf(getRhs()).size() == 2 && rank != 2;
  rule.operandDims = {
      matrix(batch, m, k, getTransposeLhs()),
      matrix(sharedRhs ? ValueDims() : batch, k, n, getTransposeRhs())};
  rule.resultDims = {matrix(batch, m, n, /*transposed=*/false)};
  rule.linearOperandGroups = {{0}, {1}};
  if (getAddend()) {
    // Jointly linear in either factor and the addend.
    rule.operandDims.push_back(rule.resultDims.front());
    rule.linearOperandGroups = {{0, 2}, {1, 2}};
  }
  return rule;
}

OpShardingRule EmbeddingOp::getShardingRule() {
  OpShardingRule rule;
  ArrayRef<int64_t> table = shapeOf(getTable());
  int64_t vocab =
      rule.addFactor(table[0], FactorKind::Reduction, /*custom=*/true);
  int64_t dim = rule.addFactor(table[1], FactorKind::Parallel);
  ValueDims ids =
      addFactorPerDim(rule, shapeOf(getIds()), FactorKind::Parallel);
  ValueDims result = ids;
  result.push_back({dim});
  rule.operandDims = {{{vocab}, {dim}}, ids};
  rule.resultDims = {result};
  rule.linearOperandGroups = {{0}};
  return rule;
}

OpShardingRule EmbeddingGradOp::getShardingRule() {
  OpShardingRule rule;
  ArrayRef<int64_t> table = shapeOf(getResult());
  ValueDims ids =
      addFactorPerDim(rule, shapeOf(getIds()), FactorKind::Reduction);
  int64_t vocab =
      rule.addFactor(table[0], FactorKind::Parallel, /*custom=*/true);
  int64_t dim = rule.addFactor(table[1], FactorKind::Parallel);
  ValueDims grad = ids;
  grad.push_back({dim});
  rule.operandDims = {ids, grad};
  rule.resultDims = {{{vocab}, {dim}}};
  rule.linearOperandGroups = {{1}};
  return rule;
}

OpShardingRule RopeOp::getShardingRule() {
  OpShardingRule rule;
  ArrayRef<int64_t> input = shapeOf(getInput());
  ValueDims dims =
      addFactorPerDim(rule, input.drop_back(), FactorKind::Parallel);
  dims.push_back({rule.addFactor(input.back(), FactorKind::NeedReplication)});
  ValueDims table = {
      dims[1],
      {rule.addFactor(shapeOf(getCos()).back(), FactorKind::NeedReplication)}};
  rule.operandDims = {dims, table, table};
  rule.resultDims = {dims};
  rule.linearOperandGroups = {{0}};
  return rule;
}

OpShardingRule AttentionOp::getShardingRule() {
  using V = AttentionValue;
  // Linear in v for the output only, not for the log-sum-exp (which v does
  // not change): no Partial operand.
  return attentionRule(*this, {V::QLike, V::KLike, V::KLike},
                       {V::QLike, V::RowStatistic}, /*isGrad=*/false, {});
}
OpShardingRule AttentionGradOp::getShardingRule() {
  using V = AttentionValue;
  // Linear in the output's cotangent (operand 5).
  return attentionRule(
      *this,
      {V::QLike, V::KLike, V::KLike, V::QLike, V::RowStatistic, V::QLike},
      {V::QLike, V::KLike, V::KLike}, /*isGrad=*/true, {{5}});
}
OpShardingRule CrossEntropyOp::getShardingRule() {
  return crossEntropyRule(*this, /*isGrad=*/false, getReplicatedVocab());
}
OpShardingRule CrossEntropyGradOp::getShardingRule() {
  return crossEntropyRule(*this, /*isGrad=*/true, getReplicatedVocab());
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

OpShardingRule ReshapeOp::getShardingRule() {
  return reshapeRule(shapeOf(getInput()), shapeOf(getResult()));
}

OpShardingRule TransposeOp::getShardingRule() {
  OpShardingRule rule;
  ValueDims input =
      addFactorPerDim(rule, shapeOf(getInput()), FactorKind::Parallel);
  ValueDims result;
  for (int64_t dim : getPermutation())
    result.push_back(input[dim]);
  rule.operandDims = {input};
  rule.resultDims = {result};
  rule.linearOperandGroups = {{0}};
  return rule;
}

OpShardingRule SliceOp::getShardingRule() {
  ArrayRef<int64_t> in = shapeOf(getInput());
  return windowRule(*this, [&](int64_t dim) {
    return getStart()[dim] == 0 && getLimit()[dim] == in[dim] &&
           getStep()[dim] == 1;
  });
}

OpShardingRule PadOp::getShardingRule() {
  ArrayRef<int64_t> in = shapeOf(getInput());
  ArrayRef<int64_t> out = shapeOf(getResult());
  return windowRule(*this, [&](int64_t dim) {
    return getStart()[dim] == 0 && getStep()[dim] == 1 && in[dim] == out[dim];
  });
}

OpShardingRule ConcatOp::getShardingRule() {
  OpShardingRule rule;
  int64_t concatDim = getDim();
  ValueDims shared =
      addFactorPerDim(rule, shapeOf(getResult()), FactorKind::Parallel);
  SmallVector<unsigned, 2> all;
  for (auto [index, input] : llvm::enumerate(getInputs())) {
    ValueDims dims = shared;
    dims[concatDim] = {
        rule.addFactor(shapeOf(input)[concatDim], FactorKind::NeedReplication)};
    rule.operandDims.push_back(dims);
    all.push_back(index);
  }
  rule.factorKinds[concatDim] = FactorKind::NeedReplication;
  rule.resultDims = {shared};
  rule.linearOperandGroups = {all};
  return rule;
}

OpShardingRule BroadcastInDimOp::getShardingRule() {
  OpShardingRule rule;
  ArrayRef<int64_t> in = shapeOf(getInput());
  ArrayRef<int64_t> out = shapeOf(getResult());
  ValueDims result = addFactorPerDim(rule, out, FactorKind::Parallel);
  ValueDims input;
  for (auto [dim, target] : llvm::enumerate(getDims())) {
    if (in[dim] == out[target])
      input.push_back(result[target]);
    else
      input.push_back({});
  }
  rule.operandDims = {input};
  rule.resultDims = {result};
  rule.linearOperandGroups = {{0}};
  return rule;
}
