//===- FuseRope.cpp - recognize complex-multiply RoPE ---------------------===//
//
// Implements titan-fuse-rope (see passes/Passes.td).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/ArgRole.h"
#include "titan/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::titan {
#define GEN_PASS_DEF_FUSEROPEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// The shape of a RoPE input [batch, seq, heads, head_dim] as pairs.
struct RopeShape {
  int64_t batch, seq, heads, pairs;
};

/// If `value` is `reshape(slice(pairsValue))` selecting part `part` (0: the
/// real, 1: the imaginary) of every pair, with `pairsValue` [batch, seq,
/// heads, pairs, 2] and `value` [batch, seq, heads, pairs], returns
/// `pairsValue`.
Value matchPart(Value value, int64_t part) {
  auto reshape = value.getDefiningOp<ReshapeOp>();
  auto slice =
      reshape ? reshape.getInput().getDefiningOp<SliceOp>() : SliceOp();
  if (!slice)
    return Value();
  ArrayRef<int64_t> shape =
      cast<RankedTensorType>(slice.getInput().getType()).getShape();
  if (shape.size() != 5 || shape.back() != 2 ||
      cast<RankedTensorType>(value.getType()).getShape() != shape.drop_back())
    return Value();
  SmallVector<int64_t> start(5, 0), limit(shape);
  start.back() = part;
  limit.back() = part + 1;
  if (slice.getStart() != ArrayRef(start) ||
      slice.getLimit() != ArrayRef(limit) ||
      llvm::any_of(slice.getStep(), [](int64_t step) { return step != 1; }))
    return Value();
  return slice.getInput();
}

/// Whether `value` depends on a trainable parameter of its function: the
/// fused op has no gradient for its tables.
bool dependsOnParameter(Value value) {
  SetVector<Operation *> producers;
  BackwardSliceOptions options;
  options.omitBlockArguments = false;
  options.inclusive = true;
  (void)getBackwardSlice(value, &producers, options);
  SmallVector<Value> values = {value};
  for (Operation *producer : producers)
    llvm::append_range(values, producer->getOperands());
  return llvm::any_of(values, [](Value value) {
    auto arg = dyn_cast<BlockArgument>(value);
    auto function =
        arg ? dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp())
            : FunctionOpInterface();
    return function && arg.getOwner()->isEntryBlock() &&
           getArgRole(function, arg.getArgNumber()) == ArgRole::Param;
  });
}

/// If `value` [batch, seq, heads, pairs] varies along seq and pairs only (a
/// table [seq, pairs] broadcast over batch and heads, through a reshape
/// that adds unit dims), returns that broadcast's input, of `shape.seq` x
/// `shape.pairs` elements in row-major [seq, pairs] order; the caller
/// reshapes it.
Value matchTable(Value value, const RopeShape &shape) {
  Value source = value;
  SmallVector<int64_t> dims = {0, 1, 2, 3};
  if (auto broadcast = value.getDefiningOp<BroadcastInDimOp>()) {
    source = broadcast.getInput();
    dims = llvm::to_vector(broadcast.getDims());
  }
  ArrayRef<int64_t> sourceShape =
      cast<RankedTensorType>(source.getType()).getShape();
  const int64_t sizes[] = {1, shape.seq, 1, shape.pairs};
  for (auto [index, dim] : llvm::enumerate(dims))
    if ((index > 0 && dim <= dims[index - 1]) ||
        sourceShape[index] != sizes[dim])
      return Value();
  // Dims of extent 1 may be left out of a broadcast, the others not (a
  // scalar angle broadcast everywhere stays explicit).
  if (ShapedType::getNumElements(sourceShape) != shape.seq * shape.pairs ||
      !isa<FloatType>(getElementTypeOrSelf(source.getType())) ||
      dependsOnParameter(source))
    return Value();
  return source;
}

/// The operands of `mul` as a pair, in both orders.
std::array<std::pair<Value, Value>, 2> operandOrders(MulOp mul) {
  return {std::pair{mul.getLhs(), mul.getRhs()},
          std::pair{mul.getRhs(), mul.getLhs()}};
}

/// Whether `value` is `mul(a, b)` in either order.
bool isProduct(Value value, Value a, Value b) {
  auto mul = value.getDefiningOp<MulOp>();
  return mul && llvm::is_contained(operandOrders(mul), std::pair{a, b});
}

/// What a complex rotation `(a + b i) (c + s i)` multiplies: the input's
/// pairs [batch, seq, heads, pairs, 2] and the cos and sin table sources.
struct Rotation {
  Value pairs, cos, sin;
};

/// Matches `real = a c - b s` and `imaginary = a s + b c` (products and the
/// sum in any order), with a and b the parts of one input's pairs and c and
/// s tables.
std::optional<Rotation> matchRotation(Value real, Value imaginary,
                                      const RopeShape &shape) {
  auto sub = real.getDefiningOp<SubOp>();
  auto sum = imaginary.getDefiningOp<AddOp>();
  auto first = sub ? sub.getLhs().getDefiningOp<MulOp>() : MulOp();
  auto second = sub ? sub.getRhs().getDefiningOp<MulOp>() : MulOp();
  if (!sum || !first || !second)
    return std::nullopt;
  for (auto [a, cos] : operandOrders(first)) {
    Value pairs = matchPart(a, 0);
    if (!pairs)
      continue;
    for (auto [b, sin] : operandOrders(second)) {
      if (matchPart(b, 1) != pairs)
        continue;
      bool imaginaryMatches =
          (isProduct(sum.getLhs(), a, sin) &&
           isProduct(sum.getRhs(), b, cos)) ||
          (isProduct(sum.getRhs(), a, sin) && isProduct(sum.getLhs(), b, cos));
      Value cosTable = matchTable(cos, shape),
            sinTable = matchTable(sin, shape);
      if (imaginaryMatches && cosTable && sinTable &&
          cosTable.getType() == sinTable.getType())
        return Rotation{pairs, cosTable, sinTable};
    }
  }
  return std::nullopt;
}

/// If `value` is `reshape(part)` adding a trailing unit dim to a [batch,
/// seq, heads, pairs] part, returns the part.
Value dropUnitDim(Value value) {
  auto reshape = value.getDefiningOp<ReshapeOp>();
  if (!reshape)
    return Value();
  ArrayRef<int64_t> shape = cast<RankedTensorType>(value.getType()).getShape();
  if (cast<RankedTensorType>(reshape.getInput().getType()).getShape() !=
      shape.drop_back())
    return Value();
  return reshape.getInput();
}

/// `reshape(concat(reshape(a c - b s), reshape(a s + b c), last dim))` with
/// `(a, b)` the pairs of `reshape(x)` and c, s tables -> `titan.rope x, c', s'
/// interleaved` (c', s' the tables as [seq, pairs]); with a narrow x
/// widened before the rotation and the result narrowed back right after
/// (`.float()` ... `.type_as(x)`), the rope reads x and is the narrowed
/// result.
struct FuseComplexRope : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    auto concat = op.getInput().getDefiningOp<ConcatOp>();
    RankedTensorType type = op.getType();
    if (!concat || concat.getInputs().size() != 2 || type.getRank() != 4 ||
        !type.hasStaticShape() || concat.getDim() != 4)
      return failure();
    ArrayRef<int64_t> dims = type.getShape();
    RopeShape shape{dims[0], dims[1], dims[2], dims[3] / 2};
    Value real = dropUnitDim(concat.getInputs()[0]);
    Value imaginary = dropUnitDim(concat.getInputs()[1]);
    if (!real || !imaginary || dims[3] % 2 != 0 ||
        cast<RankedTensorType>(real.getType()).getShape() !=
            ArrayRef<int64_t>{shape.batch, shape.seq, shape.heads, shape.pairs})
      return failure();
    std::optional<Rotation> rotation = matchRotation(real, imaginary, shape);
    if (!rotation)
      return failure();
    auto split = rotation->pairs.getDefiningOp<ReshapeOp>();
    if (!split || split.getInput().getType() != type)
      return failure();
    Value input = split.getInput();

    Location loc = op.getLoc();
    auto tableType =
        RankedTensorType::get({shape.seq, shape.pairs},
                              getElementTypeOrSelf(rotation->cos.getType()));
    auto asTable = [&](Value source) -> Value {
      if (source.getType() == tableType)
        return source;
      return ReshapeOp::create(rewriter, loc, tableType, source);
    };
    Value cos = asTable(rotation->cos), sin = asTable(rotation->sin);
    StringAttr style = rewriter.getStringAttr("interleaved");
    // Mixed precision: the rope computes in the wider of its input's and
    // the tables' types and rounds once, as the widened form does.
    auto widen = input.getDefiningOp<CastOp>();
    if (widen && op->hasOneUse() &&
        isExactFloatWidening(widen.getInput().getType(), widen.getType())) {
      auto narrow = dyn_cast<CastOp>(*op->getUsers().begin());
      if (narrow && narrow.getType() == widen.getInput().getType()) {
        rewriter.replaceOpWithNewOp<RopeOp>(narrow, narrow.getType(),
                                            widen.getInput(), cos, sin, style);
        return success();
      }
    }
    rewriter.replaceOpWithNewOp<RopeOp>(op, type, input, cos, sin, style);
    return success();
  }
};

class FuseRopePass : public titan::impl::FuseRopePassBase<FuseRopePass> {
public:
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseComplexRope>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
