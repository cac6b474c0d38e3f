//===- FuseAttention.cpp - recognize attention written with matmuls -------===//
//
// Implements titan-fuse-attention (see passes/Passes.td).
//
// The causal mask is proven, not guessed: every value the mask is computed
// from (constants, iotas, and elementwise and shape ops on them) is evaluated
// symbolically as a function of its element indices (IndexFunction), with
// the rounding of each op's element type, and the mask must let position j
// through to position i exactly when j <= i.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/IndexFunction.h"
#include "titan/Dialect/TensorBuilder.h"
#include "titan/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

namespace mlir::titan {
#define GEN_PASS_DEF_FUSEATTENTIONPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

//===----------------------------------------------------------------------===//
// Masks
//===----------------------------------------------------------------------===//

/// Whether a mask hides each key position from each query position of
/// scores [..., queries, keys], or [..., queries, heads, keys] when
/// `queriesFromEnd` is 3: `hidden(value at i_keys - i_queries)`.
/// Returns true for the causal mask (keys after the query hidden), false for
/// no mask (nothing hidden), nullopt for any other mask or one that is not a
/// compile-time function of the two positions.
std::optional<bool>
isCausal(IndexFunctionEvaluator &evaluator, Value mask,
         llvm::function_ref<std::optional<bool>(double)> hidden,
         int64_t queriesFromEnd) {
  std::optional<IndexFunction> f = evaluator.evaluate(mask);
  if (!f)
    return std::nullopt;
  RankedTensorType type = tensorTypeOf(mask);
  int64_t keys = type.getRank() - 1, queries = type.getRank() - queriesFromEnd;
  if (queriesFromEnd < 2 || queries < 0)
    return std::nullopt;
  int64_t n = type.getDimSize(keys);
  if (type.getDimSize(queries) != n)
    return std::nullopt;
  std::optional<std::vector<double>> table =
      tabulateDifference(*f, keys, queries, n);
  if (!table)
    return std::nullopt;
  bool causal = true, none = true;
  for (int64_t d = 1 - n; d < n; ++d) {
    std::optional<bool> isHidden = hidden((*table)[d + n - 1]);
    if (!isHidden)
      return std::nullopt;
    causal &= *isHidden == (d > 0);
    none &= !*isHidden;
  }
  if (none)
    return false;
  if (causal)
    return true;
  return std::nullopt;
}

/// Whether mask value `v` hides a score as -inf does: -inf, or a finite
/// value <= -3e38 (Hugging Face's masks use torch.finfo(dtype).min, about
/// -3.4e38 for f32 and bf16). Added to or put in place of any score of
/// magnitude below 1e38, it leaves the score more than 1e38 under the row's
/// largest visible score, whose exponential is exactly 0 in f32: the
/// probability -inf gives.
bool hidesLikeMinusInfinity(double v) { return v <= -3.0e38; }

//===----------------------------------------------------------------------===//
// The attention pattern
//===----------------------------------------------------------------------===//

/// What lies between the scores `q @ k^T` and the softmax: scales by
/// compile-time factors and causal masks (or masks that hide nothing).
struct ScoresChain {
  MatmulOp scores;
  /// The scores' operands before any scale of their own (nn.MultiheadAttention
  /// scales q before q @ k^T): the factor is part of `scale`.
  Value lhs, rhs;
  double scale = 1;
  bool causal = false;
  /// Whether the chain widens the scores (`.float()` on bf16 scores under
  /// mixed precision) before the softmax.
  bool widened = false;
};

/// Walks from the softmax input back to the scores matmul. Every value on
/// the way must have no other user. With `queriesFromEnd` 3, the softmax
/// input is [batch, queries, heads, keys], GPTBigCode's multi-query scores,
/// and the chain passes one reshape from [batch, queries * heads, keys]
/// (the product's layout), above which no mask may lie.
std::optional<ScoresChain> matchScoresChain(IndexFunctionEvaluator &evaluator,
                                            Value value,
                                            int64_t queriesFromEnd = 2) {
  ScoresChain chain;
  // An additive mask hides with -inf (or finfo.min) and lets through with 0.
  auto additive = [](double v) -> std::optional<bool> {
    if (v == 0)
      return false;
    if (hidesLikeMinusInfinity(v))
      return true;
    return std::nullopt;
  };
  auto isTrue = [](double v) -> std::optional<bool> { return v != 0; };
  auto isFalse = [](double v) -> std::optional<bool> { return v == 0; };
  auto hides = [&](Value v) {
    std::optional<double> c = evaluator.evaluateScalar(v);
    return c && hidesLikeMinusInfinity(*c);
  };
  while (value.hasOneUse()) {
    Operation *op = value.getDefiningOp();
    if (!op)
      return std::nullopt;
    if (auto scores = dyn_cast<MatmulOp>(op)) {
      if (scores.getAddend())
        return std::nullopt;
      chain.scores = scores;
      // A factor applied to q or k before the product is the scores'.
      auto unscaled = [&](Value operand) -> Value {
        auto scale = operand.getDefiningOp<ScaleOp>();
        if (!scale)
          return operand;
        chain.scale *=
            *roundToElementType(getElementTypeOrSelf(operand.getType()),
                                scale.getFactor().convertToDouble());
        return scale.getInput();
      };
      chain.lhs = unscaled(scores.getLhs());
      chain.rhs = unscaled(scores.getRhs());
      // q and k widened before the product (Phi's `query.to(torch.float32)
      // @ key.to(torch.float32).transpose(2, 3)` under mixed precision;
      // WidenAfterTranspose moves k's widening after its transpose): the
      // scores of the narrower q and k,
      // which the fused op computes in float32 alike (their products are
      // exact in float32), widened.
      auto lhsCast = chain.lhs.getDefiningOp<CastOp>();
      auto rhsCast = chain.rhs.getDefiningOp<CastOp>();
      if (!chain.widened && lhsCast && rhsCast &&
          lhsCast.getInput().getType().getElementType() ==
              rhsCast.getInput().getType().getElementType() &&
          isExactFloatWidening(lhsCast.getInput().getType(),
                               lhsCast.getType())) {
        chain.widened = true;
        chain.lhs = lhsCast.getInput();
        chain.rhs = rhsCast.getInput();
      }
      return chain;
    }
    Type element = getElementTypeOrSelf(value.getType());
    std::optional<Value> next;
    if (auto cast = dyn_cast<CastOp>(op)) {
      // `.float()` on f32, or once a widening of narrower scores (mixed
      // precision: the softmax in float32, as the fused op computes it).
      if (cast.getInput().getType() == cast.getType()) {
        next = cast.getInput();
      } else if (!chain.widened &&
                 isExactFloatWidening(cast.getInput().getType(),
                                      cast.getType())) {
        chain.widened = true;
        next = cast.getInput();
      }
    } else if (auto scale = dyn_cast<ScaleOp>(op)) {
      chain.scale *=
          *roundToElementType(element, scale.getFactor().convertToDouble());
      next = scale.getInput();
    } else if (auto mul = dyn_cast<MulOp>(op)) {
      for (auto [input, factor] : {std::pair{mul.getLhs(), mul.getRhs()},
                                   std::pair{mul.getRhs(), mul.getLhs()}})
        if (std::optional<double> c = evaluator.evaluateScalar(factor)) {
          chain.scale *= *c;
          next = input;
          break;
        }
    } else if (auto div = dyn_cast<DivOp>(op)) {
      if (std::optional<double> c = evaluator.evaluateScalar(div.getRhs())) {
        chain.scale /= *c;
        next = div.getLhs();
      }
    } else if (auto add = dyn_cast<AddOp>(op)) {
      for (auto [input, mask] : {std::pair{add.getLhs(), add.getRhs()},
                                 std::pair{add.getRhs(), add.getLhs()}})
        if (std::optional<bool> causal =
                isCausal(evaluator, mask, additive, queriesFromEnd)) {
          chain.causal |= *causal;
          next = input;
          break;
        }
    } else if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      // Heads folded into or out of the batch (`scores.view(b, h, t, s)`,
      // `view(b * h, t, s)`): the queries and keys stay the last two dims.
      RankedTensorType in = reshape.getInput().getType();
      RankedTensorType out = reshape.getType();
      if (queriesFromEnd == 2 && in.getRank() >= 2 && out.getRank() >= 2 &&
          in.getShape().take_back(2) == out.getShape().take_back(2))
        next = reshape.getInput();
      // [batch, queries * heads, keys] viewed [batch, queries, heads, keys].
      if (queriesFromEnd == 3 && in.getRank() == 3 && out.getRank() == 4 &&
          in.getDimSize(0) == out.getDimSize(0) &&
          in.getDimSize(1) == out.getDimSize(1) * out.getDimSize(2) &&
          in.getDimSize(2) == out.getDimSize(3)) {
        next = reshape.getInput();
        queriesFromEnd = 0; // No mask above: its rows mix queries and heads.
      }
    } else if (auto max = dyn_cast<MaxOp>(op)) {
      // torch.max(scores, finfo.min): no finite score is that low, and a
      // hidden one stays hidden.
      for (auto [input, floor] : {std::pair{max.getLhs(), max.getRhs()},
                                  std::pair{max.getRhs(), max.getLhs()}})
        if (hides(floor)) {
          next = input;
          break;
        }
    } else if (auto select = dyn_cast<SelectOp>(op)) {
      // masked_fill(mask, -inf) and where(mask, scores, -inf).
      std::optional<bool> causal;
      if (hides(select.getOnTrue()) &&
          (causal =
               isCausal(evaluator, select.getCond(), isTrue, queriesFromEnd)))
        next = select.getOnFalse();
      else if (hides(select.getOnFalse()) &&
               (causal = isCausal(evaluator, select.getCond(), isFalse,
                                  queriesFromEnd)))
        next = select.getOnTrue();
      if (causal)
        chain.causal |= *causal;
    }
    if (!next)
      return std::nullopt;
    value = *next;
  }
  return std::nullopt;
}

/// `transpose(source, permutation)`: a value seen through the transposes
/// that produce it.
struct TransposedView {
  Value source;
  SmallVector<int64_t> permutation;
};

/// `value` transposed by `permutation`, seen from before its transposes.
TransposedView viewThroughTransposes(Value value,
                                     ArrayRef<int64_t> permutation) {
  TransposedView view{value, SmallVector<int64_t>(permutation)};
  while (auto transpose = view.source.getDefiningOp<TransposeOp>()) {
    // transpose(transpose(x, inner), p) = transpose(x, inner[p[d]]).
    for (int64_t &dim : view.permutation)
      dim = transpose.getPermutation()[dim];
    view.source = transpose.getInput();
  }
  return view;
}

/// A tensor and the shape that views it without a repeated dim.
using Unrepeated = std::pair<Value, SmallVector<int64_t>>;

/// The KV heads before Llama's repeat_kv: if `value` repeats every index of
/// its dim `dim` r times in a row (`x.unsqueeze(dim + 1).expand(..., r,
/// ...).reshape(...)`: a broadcast_in_dim to [..., n, r, ...] and a reshape
/// to [..., n * r, ...]), the broadcast's input and the shape [..., n, ...]
/// that holds each index once.
std::optional<Unrepeated> matchRepeat(Value value, int64_t dim) {
  auto reshape = value.getDefiningOp<ReshapeOp>();
  if (!reshape)
    return std::nullopt;
  auto broadcast = reshape.getInput().getDefiningOp<BroadcastInDimOp>();
  if (!broadcast)
    return std::nullopt;
  ArrayRef<int64_t> shape = reshape.getType().getShape();
  ArrayRef<int64_t> expanded = broadcast.getType().getShape();
  if (expanded.size() != shape.size() + 1 ||
      expanded.take_front(dim) != shape.take_front(dim) ||
      expanded.drop_front(dim + 2) != shape.drop_front(dim + 1) ||
      expanded[dim] * expanded[dim + 1] != shape[dim])
    return std::nullopt;
  // Every dim but the repeat (dim + 1) comes whole and in order from the
  // input; the repeat is new or of size 1 there.
  ArrayRef<int64_t> inputShape = broadcast.getInput().getType().getShape();
  ArrayRef<int64_t> dims = broadcast.getDims();
  size_t whole = 0;
  for (auto [index, to] : llvm::enumerate(dims)) {
    if (index > 0 && to <= dims[index - 1])
      return std::nullopt;
    if (to == dim + 1 ? inputShape[index] != 1
                      : inputShape[index] != expanded[to])
      return std::nullopt;
    whole += to != dim + 1;
  }
  if (whole != shape.size())
    return std::nullopt;
  SmallVector<int64_t> once(shape);
  once[dim] = expanded[dim];
  return std::pair{broadcast.getInput(), once};
}

/// `value` ([..., rows, columns]) seen with the batch dims `batch`: itself,
/// or the input of a reshape that folded those dims into its own (GPT-NeoX
/// computes the scores of q.view(b * h, t, d)), also under a transpose of
/// the last two dims (then `flipped`); nullopt otherwise.
std::optional<std::pair<Value, bool>> withBatchDims(Value value,
                                                    ArrayRef<int64_t> batch) {
  auto hasBatch = [&](Value v) {
    return tensorTypeOf(v).getShape().drop_back(2) == batch;
  };
  if (hasBatch(value))
    return std::pair{value, false};
  bool flipped = false;
  if (auto transpose = value.getDefiningOp<TransposeOp>()) {
    int64_t rank = tensorTypeOf(value).getRank();
    SmallVector<int64_t> swapped = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    std::swap(swapped[rank - 1], swapped[rank - 2]);
    if (transpose.getPermutation() != ArrayRef<int64_t>(swapped))
      return std::nullopt;
    value = transpose.getInput();
    flipped = true;
  }
  auto reshape = value.getDefiningOp<ReshapeOp>();
  if (!reshape || !hasBatch(reshape.getInput()) ||
      tensorTypeOf(reshape.getInput()).getShape().take_back(2) !=
          tensorTypeOf(value).getShape().take_back(2))
    return std::nullopt;
  return std::pair{reshape.getInput(), flipped};
}

/// `probs @ v` with `probs = softmax(scale * q @ k^T + causal mask)` ->
/// `titan.attention q, k, v`.
struct FuseAttention : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  /// GPTBigCode's multi-query attention, the heads folded into the queries:
  /// `fold(softmax(chain(unfold(q @ k^T)))) @ v` with q [batch, queries *
  /// heads, head_dim] (rows by query, then head), k and v [batch, keys,
  /// head_dim] (one KV head), the scores viewed [batch, queries, heads,
  /// keys] for the mask and the softmax -> titan.attention of q as [batch,
  /// heads, queries, head_dim] and k, v as [batch, 1, keys, head_dim],
  /// whose output goes back to [batch, queries * heads, head_dim].
  LogicalResult fuseQueryFolded(MatmulOp output, ReshapeOp fold, bool narrowed,
                                PatternRewriter &rewriter) const {
    auto softmax = fold.getInput().getDefiningOp<SoftmaxOp>();
    RankedTensorType type = output.getType();
    if (!softmax || !fold->hasOneUse() || !softmax->hasOneUse() ||
        output.getTransposeLhs() || type.getRank() != 3 ||
        !type.hasStaticShape())
      return rewriter.notifyMatchFailure(output, "not folded softmax @ v");
    RankedTensorType probs = softmax.getType();
    if (probs.getRank() != 4 || softmax.getDim() != 3)
      return rewriter.notifyMatchFailure(
          output, "not a last-dim softmax of [batch, seq, heads, seq]");
    int64_t batch = probs.getDimSize(0), queries = probs.getDimSize(1),
            heads = probs.getDimSize(2), keys = probs.getDimSize(3);
    int64_t headDim = type.getDimSize(2);
    IndexFunctionEvaluator evaluator;
    std::optional<ScoresChain> chain =
        matchScoresChain(evaluator, softmax.getInput(), /*queriesFromEnd=*/3);
    if (!chain || !(chain->scale > 0) || std::isinf(chain->scale) ||
        narrowed != chain->widened || queries != keys)
      return rewriter.notifyMatchFailure(
          output, "no q @ k^T under positive scales and causal masks");
    MatmulOp scores = chain->scores;
    // The [batch, keys, head_dim] form of the product's k and of v.
    auto keysFirst = [&](Value value, bool keysLast) -> std::optional<Value> {
      RankedTensorType t = tensorTypeOf(value);
      SmallVector<int64_t> expected{batch, keys, headDim};
      if (keysLast)
        std::swap(expected[1], expected[2]);
      if (t.getShape() != ArrayRef<int64_t>(expected) ||
          t.getElementType() != type.getElementType())
        return std::nullopt;
      return value;
    };
    std::optional<Value> k = keysFirst(chain->rhs, !scores.getTransposeRhs());
    std::optional<Value> v =
        keysFirst(output.getRhs(), output.getTransposeRhs());
    RankedTensorType qType = tensorTypeOf(chain->lhs);
    if (scores.getTransposeLhs() || !k || !v ||
        qType.getShape() !=
            ArrayRef<int64_t>{batch, queries * heads, headDim} ||
        qType.getElementType() != type.getElementType())
      return rewriter.notifyMatchFailure(
          output, "q, k, v and the output differ in shape");

    Location loc = rewriter.getFusedLoc(
        {scores.getLoc(), softmax.getLoc(), output.getLoc()});
    TensorBuilder b(rewriter, loc);
    Value query = b.transpose(
        b.reshape(chain->lhs, {batch, queries, heads, headDim}), {0, 2, 1, 3});
    auto oneHead = [&](Value value, bool keysLast) {
      if (keysLast)
        value = b.transpose(value, {0, 2, 1});
      return b.reshape(value, {batch, 1, keys, headDim});
    };
    auto attention = AttentionOp::create(
        rewriter, loc, query.getType(), getAttentionLseType(query.getType()),
        query, oneHead(*k, !scores.getTransposeRhs()),
        oneHead(*v, output.getTransposeRhs()),
        chain->causal ? rewriter.getUnitAttr() : UnitAttr(),
        rewriter.getF64FloatAttr(chain->scale));
    Value result = b.transpose(attention.getResult(), {0, 2, 1, 3});
    rewriter.replaceOp(output, b.reshape(result, type.getShape()));
    return success();
  }

  LogicalResult matchAndRewrite(MatmulOp output,
                                PatternRewriter &rewriter) const override {
    if (output.getTransposeLhs())
      return rewriter.notifyMatchFailure(output, "transposed probabilities");
    if (output.getAddend())
      return rewriter.notifyMatchFailure(output, "a product with an addend");
    // The probabilities, through casts that change nothing and at most one
    // narrowing of a wider softmax (mixed precision).
    Value probs = output.getLhs();
    bool narrowed = false;
    while (auto cast = probs.getDefiningOp<CastOp>()) {
      bool narrowing =
          !narrowed &&
          isExactFloatWidening(cast.getType(), cast.getInput().getType());
      if ((cast.getInput().getType() != cast.getType() && !narrowing) ||
          !probs.hasOneUse())
        return rewriter.notifyMatchFailure(output, "not attention");
      narrowed |= narrowing;
      probs = cast.getInput();
    }
    if (auto fold = probs.getDefiningOp<ReshapeOp>())
      return fuseQueryFolded(output, fold, narrowed, rewriter);
    auto softmax = probs.getDefiningOp<SoftmaxOp>();
    if (!softmax || !probs.hasOneUse())
      return rewriter.notifyMatchFailure(output, "not softmax @ v");
    // [batch, heads, seq, seq], or [batch * heads, seq, seq] as
    // nn.MultiheadAttention computes it (one head per batch entry there).
    RankedTensorType type = output.getType();
    int64_t rank = type.getRank();
    if ((rank != 4 && rank != 3) || !type.hasStaticShape() ||
        static_cast<int64_t>(softmax.getDim()) != rank - 1)
      return rewriter.notifyMatchFailure(
          output, "not a last-dim softmax of [batch, (heads,) seq, seq]");
    IndexFunctionEvaluator evaluator;
    std::optional<ScoresChain> chain =
        matchScoresChain(evaluator, softmax.getInput());
    if (!chain || !(chain->scale > 0) || std::isinf(chain->scale))
      return rewriter.notifyMatchFailure(
          output, "no q @ k^T under positive scales and causal masks");
    MatmulOp scores = chain->scores;
    // Scores of q and k with the heads folded into the batch, unfolded
    // after: q and k with the output's batch dims.
    ArrayRef<int64_t> batch = type.getShape().drop_back(2);
    std::optional<std::pair<Value, bool>> lhs =
        withBatchDims(chain->lhs, batch);
    std::optional<std::pair<Value, bool>> rhs =
        withBatchDims(chain->rhs, batch);
    if (!lhs || !rhs)
      return rewriter.notifyMatchFailure(
          output, "q @ k^T and the output differ in batch dims");
    auto sameElements = [&](Value value) {
      RankedTensorType other = tensorTypeOf(value);
      return other.getRank() == rank &&
             other.getElementType() == type.getElementType();
    };
    if (!sameElements(lhs->first) || !sameElements(rhs->first) ||
        !sameElements(output.getRhs()) ||
        (!narrowed && !sameElements(softmax.getResult())))
      return rewriter.notifyMatchFailure(output, "element types differ");
    // A softmax widened for is narrowed after, and only then.
    if (narrowed != chain->widened)
      return rewriter.notifyMatchFailure(output, "unbalanced conversions");

    // q, k and v as [batch, (heads,) seq, head_dim]: the matmul operands,
    // transposed where the matmul reads them transposed.
    SmallVector<int64_t> identity =
        llvm::to_vector(llvm::seq<int64_t>(0, rank));
    SmallVector<int64_t> swapped(identity);
    std::swap(swapped[rank - 1], swapped[rank - 2]);
    struct Operand {
      Value value;
      TransposedView view;
      bool transposed;
    };
    auto operand = [&](Value value, bool transposed) {
      return Operand{
          value, viewThroughTransposes(value, transposed ? swapped : identity),
          transposed};
    };
    Operand q = operand(lhs->first, scores.getTransposeLhs() != lhs->second);
    Operand k = operand(rhs->first, scores.getTransposeRhs() == rhs->second);
    Operand v = operand(output.getRhs(), output.getTransposeRhs());
    auto shapeOf = [](const Operand &operand) {
      SmallVector<int64_t> shape;
      for (int64_t dim : operand.view.permutation)
        shape.push_back(tensorTypeOf(operand.view.source).getDimSize(dim));
      return shape;
    };
    SmallVector<int64_t> shape(type.getShape());
    if (shapeOf(q) != shape || shapeOf(k) != shape || shapeOf(v) != shape)
      return rewriter.notifyMatchFailure(
          output, "q, k, v and the output differ in shape");

    // Grouped KV heads: attention reads the KV heads before their repeat.
    std::optional<Unrepeated> kRepeat, vRepeat;
    if (rank == 4) {
      kRepeat = matchRepeat(k.view.source, k.view.permutation[1]);
      vRepeat = matchRepeat(v.view.source, v.view.permutation[1]);
    }
    bool grouped = kRepeat && vRepeat && kRepeat->second == vRepeat->second;

    Location loc = rewriter.getFusedLoc(
        {scores.getLoc(), softmax.getLoc(), output.getLoc()});
    TensorBuilder b(rewriter, loc);
    // Rank 3 is [batch * heads, 1 head, seq, head_dim] to titan.attention.
    auto withHeads = [&](Value value) {
      if (rank == 4)
        return value;
      SmallVector<int64_t> shape(tensorTypeOf(value).getShape());
      shape.insert(shape.begin() + 1, 1);
      return b.reshape(value, shape);
    };
    auto materialize = [&](const Operand &operand,
                           const std::optional<Unrepeated> &repeat) {
      bool unrepeat = grouped && repeat;
      if (!operand.transposed && !unrepeat)
        return withHeads(operand.value);
      Value source = unrepeat ? b.reshape(repeat->first, repeat->second)
                              : operand.view.source;
      return withHeads(operand.view.permutation == identity
                           ? source
                           : b.transpose(source, operand.view.permutation));
    };
    Value query = materialize(q, std::nullopt);
    auto attention = AttentionOp::create(
        rewriter, loc, query.getType(), getAttentionLseType(query.getType()),
        query, materialize(k, kRepeat), materialize(v, vRepeat),
        chain->causal ? rewriter.getUnitAttr() : UnitAttr(),
        rewriter.getF64FloatAttr(chain->scale));
    Value result = attention.getResult();
    rewriter.replaceOp(output, rank == 4 ? result : b.reshape(result, shape));
    return success();
  }
};

/// `transpose(widen(x))` -> `widen(transpose(x))` (the same values): a k
/// widened before its transpose (Phi's `key.to(torch.float32).transpose(2,
/// 3)`) then reaches the scores product as a widening of the narrower k,
/// which FuseAttention reads.
struct WidenAfterTranspose : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(TransposeOp transpose,
                                PatternRewriter &rewriter) const override {
    auto cast = transpose.getInput().getDefiningOp<CastOp>();
    if (!cast || !cast->hasOneUse() ||
        !isExactFloatWidening(cast.getInput().getType(), cast.getType()))
      return rewriter.notifyMatchFailure(transpose, "not of a widening");
    TensorBuilder b(rewriter, transpose.getLoc());
    Value narrow = b.transpose(cast.getInput(), transpose.getPermutation());
    rewriter.replaceOp(transpose,
                       b.cast(narrow, transpose.getType().getElementType()));
    return success();
  }
};

class FuseAttentionPass
    : public titan::impl::FuseAttentionPassBase<FuseAttentionPass> {
public:
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseAttention, WidenAfterTranspose>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
