//===- ComputeOps.cpp - tensor compute ops --------------------------------===//
//
// Verifiers, folders and costs of the compute ops (TitanComputeOps.td).
//
//===----------------------------------------------------------------------===//

#include "AsmDirectives.h"
#include "OpVerification.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::titan;

//===----------------------------------------------------------------------===//
// Custom directives
//===----------------------------------------------------------------------===//

ParseResult mlir::titan::parseBareKeyword(OpAsmParser &parser,
                                          StringAttr &keyword) {
  StringRef value;
  if (parser.parseKeyword(&value))
    return failure();
  keyword = parser.getBuilder().getStringAttr(value);
  return success();
}

void mlir::titan::printBareKeyword(OpAsmPrinter &printer, Operation *,
                                   StringAttr keyword) {
  printer << keyword.getValue();
}

//===----------------------------------------------------------------------===//
// Verifier helpers
//===----------------------------------------------------------------------===//

/// True when two dimension sizes may be equal: either is dynamic or they
/// agree.
static bool isCompatibleDim(int64_t lhs, int64_t rhs) {
  return ShapedType::isDynamic(lhs) || ShapedType::isDynamic(rhs) || lhs == rhs;
}

/// Checks that `actual` has element type `elementType` and a shape
/// compatible with `expected`; `what` names the value in the diagnostic.
static LogicalResult verifyType(Operation *op, StringRef what,
                                ArrayRef<int64_t> expected, Type elementType,
                                ShapedType actual) {
  if (actual.getElementType() == elementType &&
      actual.getRank() == static_cast<int64_t>(expected.size()) &&
      llvm::all_of(llvm::zip_equal(expected, actual.getShape()), [](auto dims) {
        return isCompatibleDim(std::get<0>(dims), std::get<1>(dims));
      }))
    return success();
  return op->emitOpError() << "expected " << what << " type "
                           << RankedTensorType::get(expected, elementType)
                           << ", got " << actual;
}

/// Checks that `type` has rank `rank`, or at least `rank` when `orMore`.
static LogicalResult verifyRank(Operation *op, StringRef what, ShapedType type,
                                int64_t rank, bool orMore = false) {
  if (type.getRank() == rank || (orMore && type.getRank() > rank))
    return success();
  return op->emitOpError() << "expects " << what << " of rank "
                           << (orMore ? ">= " : "") << rank << ", got " << type;
}

/// Checks that the attribute `what` is strictly positive.
static LogicalResult verifyPositive(Operation *op, StringRef what,
                                    double value) {
  if (value > 0 && std::isfinite(value))
    return success();
  return op->emitOpError() << what << " must be positive and finite, got "
                           << value;
}

/// Checks that the string attribute `what` is one of `allowed`.
static LogicalResult verifyKeyword(Operation *op, StringRef what,
                                   StringAttr value,
                                   ArrayRef<StringRef> allowed) {
  if (llvm::is_contained(allowed, value.getValue()))
    return success();
  InFlightDiagnostic diag = op->emitOpError()
                            << "unknown " << what << " '" << value.getValue()
                            << "', expected one of: ";
  llvm::interleaveComma(allowed, diag);
  return diag;
}

/// Checks that `dims` are in range for a rank-`rank` tensor and unique,
/// and strictly increasing when `sorted`.
static LogicalResult verifyDimList(Operation *op, ArrayRef<int64_t> dims,
                                   int64_t rank, bool sorted) {
  SmallVector<bool> seen(rank, false);
  for (auto [index, dim] : llvm::enumerate(dims)) {
    if (failed(verifyDimInRange(op, "dim", dim, rank)))
      return failure();
    if (seen[dim])
      return op->emitOpError()
             << "dims [" << dims << "] name dim " << dim << " more than once";
    if (sorted && index > 0 && dims[index - 1] > dim)
      return op->emitOpError()
             << "dims [" << dims << "] must be sorted in increasing order";
    seen[dim] = true;
  }
  return success();
}

/// Checks a reduction over `dims` of `input` into `result`.
static LogicalResult verifyReduction(Operation *op, RankedTensorType input,
                                     ArrayRef<int64_t> dims, bool keepdim,
                                     RankedTensorType result) {
  if (failed(verifyDimList(op, dims, input.getRank(), /*sorted=*/true)))
    return failure();
  SmallVector<int64_t> expected;
  for (auto [dim, size] : llvm::enumerate(input.getShape())) {
    if (!llvm::is_contained(dims, static_cast<int64_t>(dim)))
      expected.push_back(size);
    else if (keepdim)
      expected.push_back(1);
  }
  return verifyType(op, "result", expected, input.getElementType(), result);
}

/// Checks the scale or shift `param` of a normalization over the last dim of
/// `input`: a vector of that size and of `input`'s element type.
static LogicalResult verifyNormParam(Operation *op, StringRef what,
                                     RankedTensorType input,
                                     RankedTensorType param) {
  if (failed(verifyRank(op, "input", input, 1, /*orMore=*/true)))
    return failure();
  return verifyType(op, what, {input.getShape().back()}, input.getElementType(),
                    param);
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

LogicalResult GeluOp::verify() {
  return verifyKeyword(*this, "approximate", getApproximateAttr(),
                       {"none", "tanh"});
}

namespace {
/// The all-reduce that defines `value` when it is a linear one (sum or avg)
/// used only once.
AllReduceOp linearAllReduce(Value value) {
  auto reduce = value.getDefiningOp<AllReduceOp>();
  if (!reduce || !reduce->hasOneUse())
    return {};
  ReduceKind kind = reduce.getReduce().getValue();
  return kind == ReduceKind::Sum || kind == ReduceKind::Avg ? reduce
                                                            : AllReduceOp();
}

/// True when `a` and `b` reduce alike over the same group.
bool sameGroup(AllReduceOp a, AllReduceOp b) {
  return a != b && a.getReduce() == b.getReduce() &&
         a.getMesh() == b.getMesh() && a.getAxes() == b.getAxes() &&
         a.getInput().getType() == b.getInput().getType();
}

/// Replaces `add` by `combine(x, y)` of its two terms, or, where one term
/// is an add used only here, by `rest + combine(x, y)` of a term of that
/// add and the outer add's other term: `add(add(rest, x), y)`. `combine`
/// returns null where the terms do not combine.
LogicalResult combineTerms(AddOp add, PatternRewriter &rewriter,
                           llvm::function_ref<Value(Value, Value)> combine) {
  for (auto [first, second] : {std::pair(add.getLhs(), add.getRhs()),
                               std::pair(add.getRhs(), add.getLhs())}) {
    if (Value combined = combine(first, second)) {
      rewriter.replaceOp(add, combined);
      return success();
    }
    auto partial = first.getDefiningOp<AddOp>();
    if (!partial || !partial->hasOneUse())
      continue;
    for (auto [rest, term] : {std::pair(partial.getLhs(), partial.getRhs()),
                              std::pair(partial.getRhs(), partial.getLhs())}) {
      if (Value combined = combine(term, second)) {
        rewriter.replaceOpWithNewOp<AddOp>(add, rest, combined);
        return success();
      }
    }
  }
  return failure();
}

/// `add(all_reduce(a), all_reduce(b))` -> `all_reduce(add(a, b))`, and
/// `add(add(x, all_reduce(a)), all_reduce(b))` ->
/// `add(x, all_reduce(add(a, b)))`, for linear reductions of one group,
/// each all-reduce (and the inner add) used only here.
struct MergeAllReducesOfSum : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    return combineTerms(add, rewriter, [&](Value x, Value y) -> Value {
      AllReduceOp inner = linearAllReduce(x), outer = linearAllReduce(y);
      if (!inner || !outer || !sameGroup(inner, outer))
        return {};
      Value sum = AddOp::create(rewriter, add.getLoc(), inner.getInput(),
                                outer.getInput());
      return AllReduceOp::create(rewriter, add.getLoc(), sum,
                                 inner.getMeshAttr(), inner.getAxesAttr(),
                                 inner.getReduceAttr());
    });
  }
};

/// Sums two pads whose windows lie side by side along one dim (and match
/// along the others) as one pad of their inputs' concatenation, or as the
/// concatenation alone when it fills the result: the cotangent of a tensor
/// split into slices (GPT-2's q, k and v of one projection) is assembled
/// in place instead of as one zero-filled tensor per slice and their sum.
/// Each element is one input's element plus zeros, so the value is exact.
/// The pads may also meet through a sum they are the last terms of:
/// add(add(x, pad(a)), pad(b)) -> add(x, pad(concat(a, b))).
struct MergeAdjacentPads : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    return combineTerms(add, rewriter, [&](Value x, Value y) -> Value {
      auto a = x.getDefiningOp<PadOp>(), b = y.getDefiningOp<PadOp>();
      if (!a || !b || !a->hasOneUse() || !b->hasOneUse())
        return {};
      return merge(rewriter, add.getLoc(), a, b);
    });
  }

private:
  /// The pad of `a`'s and `b`'s inputs concatenated, if their windows
  /// (step 1, static shapes) differ along exactly one dim, where they
  /// touch; null otherwise.
  static Value merge(PatternRewriter &rewriter, Location loc, PadOp a,
                     PadOp b) {
    RankedTensorType aType = a.getInput().getType();
    RankedTensorType bType = b.getInput().getType();
    if (a.getType() != b.getType() || !aType.hasStaticShape() ||
        !bType.hasStaticShape() ||
        !llvm::all_of(a.getStep(), [](int64_t s) { return s == 1; }) ||
        !llvm::all_of(b.getStep(), [](int64_t s) { return s == 1; }))
      return {};
    std::optional<int64_t> along;
    for (int64_t dim = 0; dim < aType.getRank(); ++dim) {
      if (a.getStart()[dim] == b.getStart()[dim] &&
          aType.getDimSize(dim) == bType.getDimSize(dim))
        continue;
      if (along)
        return {};
      along = dim;
    }
    if (!along)
      return {}; // The same window.
    int64_t dim = *along;
    if (b.getStart()[dim] + bType.getDimSize(dim) == a.getStart()[dim])
      std::swap(a, b);
    else if (a.getStart()[dim] + aType.getDimSize(dim) != b.getStart()[dim])
      return {};
    // Concatenations of earlier merges along the same dim are flattened.
    SmallVector<Value> inputs;
    for (PadOp pad : {a, b}) {
      auto concat = pad.getInput().getDefiningOp<ConcatOp>();
      if (concat && static_cast<int64_t>(concat.getDim()) == dim &&
          concat->hasOneUse())
        llvm::append_range(inputs, concat.getInputs());
      else
        inputs.push_back(pad.getInput());
    }
    SmallVector<int64_t> shape(aType.getShape());
    shape[dim] += bType.getDimSize(dim);
    auto type = RankedTensorType::get(shape, aType.getElementType());
    Value concat = ConcatOp::create(rewriter, loc, type, inputs,
                                    rewriter.getI64IntegerAttr(dim));
    ArrayRef<int64_t> start = a.getStart();
    if (type == a.getType() &&
        llvm::all_of(start, [](int64_t s) { return s == 0; }))
      return concat;
    return PadOp::create(rewriter, loc, a.getType(), concat,
                         rewriter.getDenseI64ArrayAttr(start), a.getStepAttr());
  }
};
} // namespace

void AddOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                        MLIRContext *context) {
  patterns.add<MergeAllReducesOfSum, MergeAdjacentPads>(context);
}

OpFoldResult ScaleOp::fold(FoldAdaptor) {
  return getFactor().convertToDouble() == 1.0 ? getInput() : Value();
}

LogicalResult
ConstantOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                             ValueRange operands, DictionaryAttr attributes,
                             OpaqueProperties properties, RegionRange regions,
                             SmallVectorImpl<Type> &inferredReturnTypes) {
  ConstantOp::Adaptor adaptor(operands, attributes, properties, regions);
  if (!adaptor.getValueAttr())
    return failure();
  inferredReturnTypes.push_back(adaptor.getValueAttr().getType());
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValueAttr(); }

OpFoldResult CastOp::fold(FoldAdaptor) {
  return getInput().getType() == getType() ? getInput() : Value();
}

LogicalResult IotaOp::verify() {
  return verifyDimInRange(*this, "dim", static_cast<int64_t>(getDim()),
                          getType().getRank());
}

LogicalResult CompareOp::verify() {
  return verifyKeyword(*this, "predicate", getPredicateAttr(),
                       {"eq", "ne", "lt", "le", "gt", "ge"});
}

OpFoldResult SelectOp::fold(FoldAdaptor adaptor) {
  if (getOnTrue() == getOnFalse())
    return getOnTrue();
  if (auto cond = dyn_cast_or_null<SplatElementsAttr>(adaptor.getCond()))
    return cond.getSplatValue<bool>() ? getOnTrue() : getOnFalse();
  return {};
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

LogicalResult ReduceSumOp::verify() {
  return verifyReduction(*this, getInput().getType(), getDims(), getKeepdim(),
                         getType());
}

LogicalResult ReduceMaxOp::verify() {
  return verifyReduction(*this, getInput().getType(), getDims(), getKeepdim(),
                         getType());
}

LogicalResult ReduceMeanOp::verify() {
  return verifyReduction(*this, getInput().getType(), getDims(), getKeepdim(),
                         getType());
}

LogicalResult SoftmaxOp::verify() {
  return verifyDimInRange(*this, "dim", static_cast<int64_t>(getDim()),
                          getType().getRank());
}

LogicalResult LogSoftmaxOp::verify() {
  return verifyDimInRange(*this, "dim", static_cast<int64_t>(getDim()),
                          getType().getRank());
}

LogicalResult RmsNormOp::verify() {
  if (failed(verifyPositive(*this, "eps", getEps().convertToDouble())))
    return failure();
  return verifyNormParam(*this, "weight", getInput().getType(),
                         getWeight().getType());
}

LogicalResult LayerNormOp::verify() {
  if (failed(verifyPositive(*this, "eps", getEps().convertToDouble())))
    return failure();
  return verifyNormParam(*this, "weight", getInput().getType(),
                         getWeight().getType());
}

//===----------------------------------------------------------------------===//
// Contractions and model-level ops
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  RankedTensorType lhs = getLhs().getType();
  RankedTensorType rhs = getRhs().getType();
  if (failed(verifyRank(*this, "lhs", lhs, 2, /*orMore=*/true)))
    return failure();
  int64_t rank = lhs.getRank();
  if (rhs.getRank() != 2 && rhs.getRank() != rank)
    return emitOpError() << "expects rhs of rank 2 or of lhs's rank " << rank
                         << ", got " << rhs;
  if (lhs.getElementType() != rhs.getElementType())
    return emitOpError() << "operand element types differ: "
                         << lhs.getElementType() << " and "
                         << rhs.getElementType();

  int64_t m = lhs.getDimSize(rank - (getTransposeLhs() ? 1 : 2));
  int64_t k = lhs.getDimSize(rank - (getTransposeLhs() ? 2 : 1));
  int64_t rhsRank = rhs.getRank();
  int64_t rhsK = rhs.getDimSize(rhsRank - (getTransposeRhs() ? 1 : 2));
  int64_t n = rhs.getDimSize(rhsRank - (getTransposeRhs() ? 2 : 1));
  if (!isCompatibleDim(k, rhsK))
    return emitOpError() << "contraction dims differ: lhs has " << k
                         << ", rhs has " << rhsK;

  SmallVector<int64_t> expected(lhs.getShape().drop_back(2));
  if (rhsRank == rank) {
    for (auto [dim, rhsSize] : llvm::enumerate(rhs.getShape().drop_back(2))) {
      if (!isCompatibleDim(expected[dim], rhsSize))
        return emitOpError() << "batch dim " << dim << " differs: lhs has "
                             << expected[dim] << ", rhs has " << rhsSize;
      if (ShapedType::isDynamic(expected[dim]))
        expected[dim] = rhsSize;
    }
  }
  expected.append({m, n});
  return verifyType(*this, "result", expected, lhs.getElementType(), getType());
}

LogicalResult EmbeddingOp::verify() {
  RankedTensorType table = getTable().getType();
  if (failed(verifyRank(*this, "table", table, 2)))
    return failure();
  SmallVector<int64_t> expected(getIds().getType().getShape());
  expected.push_back(table.getDimSize(1));
  return verifyType(*this, "result", expected, table.getElementType(),
                    getType());
}

LogicalResult RandomUniformOp::verify() {
  if (getCounters().getType().getShape() != getType().getShape())
    return emitOpError() << "result shape must equal the counters' shape";
  return success();
}

LogicalResult CheckIdsOp::verify() {
  if (getBound() < 1)
    return emitOpError() << "bound " << getBound()
                         << " must be at least 1: a table without rows "
                            "has no valid id";
  return success();
}

LogicalResult RopeOp::verify() {
  if (failed(verifyKeyword(*this, "style", getStyleAttr(),
                           {"interleaved", "half"})))
    return failure();
  RankedTensorType input = getInput().getType();
  if (failed(verifyRank(*this, "input", input, 4)))
    return failure();
  int64_t headDim = input.getDimSize(3);
  if (!ShapedType::isDynamic(headDim) && headDim % 2 != 0)
    return emitOpError() << "head_dim " << headDim << " must be even";
  RankedTensorType table = getCos().getType();
  int64_t pairs =
      ShapedType::isDynamic(headDim) ? ShapedType::kDynamic : headDim / 2;
  return verifyType(*this, "cos/sin table", {input.getDimSize(1), pairs},
                    table.getElementType(), table);
}

Type mlir::titan::getAttentionLseType(Type q) {
  auto type = dyn_cast<RankedTensorType>(q);
  if (!type) // the operand's own constraint reports it
    return q;
  Type element = type.getElementType().isF64()
                     ? type.getElementType()
                     : Float32Type::get(q.getContext());
  ArrayRef<int64_t> shape = type.getShape();
  return RankedTensorType::get(shape.drop_back(shape.empty() ? 0 : 1), element);
}

/// Checks the operands of attention or its VJP: `q` [batch, q_heads, seq,
/// head_dim], `k` (and `v`, which must match it) [batch, kv_heads, seq,
/// head_dim] with kv_heads dividing q_heads, and a positive `scale`.
static LogicalResult verifyAttention(Operation *op, RankedTensorType q,
                                     RankedTensorType k,
                                     std::optional<APFloat> scale) {
  if (failed(verifyRank(op, "q", q, 4)) ||
      failed(verifyRank(op, "k and v", k, 4)))
    return failure();
  if (q.getElementType() != k.getElementType())
    return op->emitOpError()
           << "element types differ: q has " << q.getElementType()
           << ", k and v have " << k.getElementType();
  int64_t qHeads = q.getDimSize(1);
  int64_t kvHeads = k.getDimSize(1);
  if (!ShapedType::isDynamic(qHeads) && !ShapedType::isDynamic(kvHeads) &&
      (kvHeads == 0 || qHeads % kvHeads != 0))
    return op->emitOpError()
           << kvHeads << " kv heads do not divide " << qHeads << " q heads";
  SmallVector<int64_t> expectedKv(q.getShape());
  expectedKv[1] = kvHeads;
  if (failed(verifyType(op, "k and v", expectedKv, q.getElementType(), k)))
    return failure();
  if (scale)
    return verifyPositive(op, "scale", scale->convertToDouble());
  return success();
}

/// The softmax scale of attention: `scale` if set, else 1/sqrt(head_dim).
static double getAttentionScale(std::optional<APFloat> scale,
                                RankedTensorType q) {
  if (scale)
    return scale->convertToDouble();
  return 1.0 / std::sqrt(static_cast<double>(q.getDimSize(3)));
}

LogicalResult AttentionOp::verify() {
  return verifyAttention(*this, getQ().getType(), getK().getType(), getScale());
}

double AttentionOp::getScaleOrDefault() {
  return getAttentionScale(getScale(), getQ().getType());
}

/// Checks the operands of cross-entropy or its VJP: `logits` [..., vocab],
/// `labels` of `logits`' shape without the last dim, and the 0-d loss type
/// `loss`, f64 only for f64 logits.
static LogicalResult verifyCrossEntropy(Operation *op, RankedTensorType logits,
                                        RankedTensorType labels,
                                        RankedTensorType loss) {
  if (failed(verifyRank(op, "logits", logits, 1, /*orMore=*/true)))
    return failure();
  if (loss.getElementType().isF64() && !logits.getElementType().isF64())
    return op->emitOpError() << "has an f64 loss for " << logits
                             << " logits; only f64 logits give an f64 loss";
  return verifyType(op, "labels", logits.getShape().drop_back(),
                    labels.getElementType(), labels);
}

LogicalResult CrossEntropyOp::verify() {
  return verifyCrossEntropy(*this, getLogits().getType(), getLabels().getType(),
                            getType());
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  RankedTensorType input = getInput().getType();
  RankedTensorType result = getType();
  if (input.getElementType() != result.getElementType())
    return emitOpError() << "changes the element type from "
                         << input.getElementType() << " to "
                         << result.getElementType();
  if (input.hasStaticShape() && result.hasStaticShape() &&
      input.getNumElements() != result.getNumElements())
    return emitOpError() << "changes the element count from "
                         << input.getNumElements() << " to "
                         << result.getNumElements();
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  auto inner = getInput().getDefiningOp<ReshapeOp>();
  if (!inner)
    return {};
  if (inner.getInput().getType() == getType())
    return inner.getInput();
  getInputMutable().assign(inner.getInput());
  return getResult();
}

/// True when `permutation` is 0, 1, ..., n-1.
static bool isIdentity(ArrayRef<int64_t> permutation) {
  for (auto [index, dim] : llvm::enumerate(permutation))
    if (dim != static_cast<int64_t>(index))
      return false;
  return true;
}

LogicalResult TransposeOp::verify() {
  RankedTensorType input = getInput().getType();
  ArrayRef<int64_t> permutation = getPermutation();
  if (static_cast<int64_t>(permutation.size()) != input.getRank())
    return emitOpError() << "permutation [" << permutation << "] has "
                         << permutation.size() << " entries for a rank-"
                         << input.getRank() << " tensor";
  if (failed(verifyDimList(*this, permutation, input.getRank(),
                           /*sorted=*/false)))
    return failure();
  SmallVector<int64_t> expected;
  for (int64_t dim : permutation)
    expected.push_back(input.getDimSize(dim));
  return verifyType(*this, "result", expected, input.getElementType(),
                    getType());
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  if (isIdentity(getPermutation()) && getInput().getType() == getType())
    return getInput();
  auto inner = getInput().getDefiningOp<TransposeOp>();
  if (!inner)
    return {};
  // result.dim(d) = inner.dim(perm[d]) = x.dim(innerPerm[perm[d]]).
  SmallVector<int64_t> composed;
  for (int64_t dim : getPermutation())
    composed.push_back(inner.getPermutation()[dim]);
  if (isIdentity(composed) && inner.getInput().getType() == getType())
    return inner.getInput();
  setPermutation(composed);
  getInputMutable().assign(inner.getInput());
  return getResult();
}

LogicalResult SliceOp::verify() {
  RankedTensorType input = getInput().getType();
  ArrayRef<int64_t> start = getStart(), limit = getLimit(), step = getStep();
  int64_t rank = input.getRank();
  if (static_cast<int64_t>(start.size()) != rank ||
      static_cast<int64_t>(limit.size()) != rank ||
      static_cast<int64_t>(step.size()) != rank)
    return emitOpError() << "start, limit and step need one entry per dim of "
                            "the rank-"
                         << rank << " input, got " << start.size() << ", "
                         << limit.size() << " and " << step.size();
  SmallVector<int64_t> expected;
  for (int64_t dim = 0; dim < rank; ++dim) {
    int64_t size = input.getDimSize(dim);
    if (step[dim] < 1)
      return emitOpError() << "step " << step[dim] << " of dim " << dim
                           << " must be positive";
    if (start[dim] < 0 || start[dim] > limit[dim] ||
        (!ShapedType::isDynamic(size) && limit[dim] > size))
      return emitOpError() << "slice " << start[dim] << ":" << limit[dim]
                           << " of dim " << dim << " is not within 0:" << size;
    expected.push_back((limit[dim] - start[dim] + step[dim] - 1) / step[dim]);
  }
  return verifyType(*this, "result", expected, input.getElementType(),
                    getType());
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  bool fromZero = llvm::all_of(getStart(), [](int64_t s) { return s == 0; });
  bool unitStep = llvm::all_of(getStep(), [](int64_t s) { return s == 1; });
  if (fromZero && unitStep && getInput().getType() == getType() &&
      getType().hasStaticShape())
    return getInput();
  // A slice of a slice reads the inner slice's input directly: result
  // index k is inner index start + k * step, which is input index
  // innerStart + (start + k * step) * innerStep.
  auto inner = getInput().getDefiningOp<SliceOp>();
  if (!inner || !getType().hasStaticShape() ||
      llvm::is_contained(getType().getShape(), 0))
    return {};
  SmallVector<int64_t> start, limit, step;
  for (auto [dim, size] : llvm::enumerate(getType().getShape())) {
    start.push_back(inner.getStart()[dim] +
                    getStart()[dim] * inner.getStep()[dim]);
    step.push_back(inner.getStep()[dim] * getStep()[dim]);
    limit.push_back(start.back() + (size - 1) * step.back() + 1);
  }
  getInputMutable().assign(inner.getInput());
  setStart(start);
  setLimit(limit);
  setStep(step);
  return getResult();
}

LogicalResult ConcatOp::verify() {
  OperandRange inputs = getInputs();
  if (inputs.empty())
    return emitOpError() << "needs at least one operand";
  auto first = cast<RankedTensorType>(inputs.front().getType());
  int64_t dim = getDim();
  if (failed(verifyDimInRange(*this, "dim", dim, first.getRank())))
    return failure();
  SmallVector<int64_t> expected(first.getShape());
  for (auto [index, value] : llvm::enumerate(inputs.drop_front())) {
    auto type = cast<RankedTensorType>(value.getType());
    // Every operand must be the first with its own size in `dim`.
    SmallVector<int64_t> like(first.getShape());
    like[dim] = type.getRank() == first.getRank() ? type.getDimSize(dim)
                                                  : ShapedType::kDynamic;
    std::string what = "operand #" + std::to_string(index + 1);
    if (failed(verifyType(*this, what, like, first.getElementType(), type)))
      return failure();
    int64_t size = type.getDimSize(dim);
    expected[dim] =
        ShapedType::isDynamic(expected[dim]) || ShapedType::isDynamic(size)
            ? ShapedType::kDynamic
            : expected[dim] + size;
  }
  return verifyType(*this, "result", expected, first.getElementType(),
                    getType());
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs().front().getType() == getType())
    return getInputs().front();
  return {};
}

LogicalResult BroadcastInDimOp::verify() {
  RankedTensorType input = getInput().getType();
  RankedTensorType result = getType();
  ArrayRef<int64_t> dims = getDims();
  if (static_cast<int64_t>(dims.size()) != input.getRank())
    return emitOpError() << "dims [" << dims << "] need one entry per dim of "
                         << "the rank-" << input.getRank() << " operand";
  if (failed(verifyDimList(*this, dims, result.getRank(), /*sorted=*/false)))
    return failure();
  if (input.getElementType() != result.getElementType())
    return emitOpError() << "changes the element type from "
                         << input.getElementType() << " to "
                         << result.getElementType();
  for (auto [operandDim, resultDim] : llvm::enumerate(dims)) {
    int64_t size = input.getDimSize(operandDim);
    int64_t target = result.getDimSize(resultDim);
    if (size != 1 && !isCompatibleDim(size, target))
      return emitOpError() << "operand dim " << operandDim << " of size "
                           << size << " cannot broadcast to result dim "
                           << resultDim << " of size " << target;
  }
  return success();
}

OpFoldResult BroadcastInDimOp::fold(FoldAdaptor) {
  if (isIdentity(getDims()) && getInput().getType() == getType())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// Backward-only ops
//===----------------------------------------------------------------------===//

LogicalResult GeluGradOp::verify() {
  return verifyKeyword(*this, "approximate", getApproximateAttr(),
                       {"none", "tanh"});
}

LogicalResult RmsNormGradOp::verify() {
  if (failed(verifyPositive(*this, "eps", getEps().convertToDouble())))
    return failure();
  return verifyNormParam(*this, "weight", getInput().getType(),
                         getWeight().getType());
}

LogicalResult LayerNormGradOp::verify() {
  if (failed(verifyPositive(*this, "eps", getEps().convertToDouble())))
    return failure();
  return verifyNormParam(*this, "weight", getInput().getType(),
                         getWeight().getType());
}

LogicalResult EmbeddingGradOp::verify() {
  RankedTensorType table = getType();
  if (failed(verifyRank(*this, "result", table, 2)))
    return failure();
  SmallVector<int64_t> expected(getIds().getType().getShape());
  expected.push_back(table.getDimSize(1));
  return verifyType(*this, "grad", expected, table.getElementType(),
                    getGrad().getType());
}

LogicalResult AttentionGradOp::verify() {
  return verifyAttention(*this, getQ().getType(), getK().getType(), getScale());
}

double AttentionGradOp::getScaleOrDefault() {
  return getAttentionScale(getScale(), getQ().getType());
}

LogicalResult CrossEntropyGradOp::verify() {
  return verifyCrossEntropy(*this, getLogits().getType(), getLabels().getType(),
                            getGrad().getType());
}

LogicalResult PadOp::verify() {
  RankedTensorType input = getInput().getType();
  RankedTensorType result = getType();
  ArrayRef<int64_t> start = getStart(), step = getStep();
  int64_t rank = input.getRank();
  if (static_cast<int64_t>(start.size()) != rank ||
      static_cast<int64_t>(step.size()) != rank)
    return emitOpError() << "start and step need one entry per dim of the "
                            "rank-"
                         << rank << " input, got " << start.size() << " and "
                         << step.size();
  if (failed(verifyRank(*this, "result", result, rank)))
    return failure();
  if (input.getElementType() != result.getElementType())
    return emitOpError() << "changes the element type from "
                         << input.getElementType() << " to "
                         << result.getElementType();
  for (int64_t dim = 0; dim < rank; ++dim) {
    if (step[dim] < 1)
      return emitOpError() << "step " << step[dim] << " of dim " << dim
                           << " must be positive";
    if (start[dim] < 0)
      return emitOpError() << "start " << start[dim] << " of dim " << dim
                           << " must not be negative";
    int64_t size = input.getDimSize(dim), target = result.getDimSize(dim);
    if (ShapedType::isDynamic(size) || ShapedType::isDynamic(target))
      continue;
    int64_t end =
        size == 0 ? start[dim] : start[dim] + (size - 1) * step[dim] + 1;
    if (end > target)
      return emitOpError() << "dim " << dim << " of size " << size
                           << " placed at " << start[dim] << " with step "
                           << step[dim] << " ends at " << end
                           << ", beyond the result's " << target;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Costs
//===----------------------------------------------------------------------===//
//
// Flops count one per arithmetic operation or transcendental function, per
// element; ops that only move data cost none.

int64_t AddOp::getFlops() { return getStaticNumElements(getType()); }
int64_t SubOp::getFlops() { return getStaticNumElements(getType()); }
int64_t MulOp::getFlops() { return getStaticNumElements(getType()); }
int64_t DivOp::getFlops() { return getStaticNumElements(getType()); }
int64_t MaxOp::getFlops() { return getStaticNumElements(getType()); }
int64_t RoundedDivOp::getFlops() { return getStaticNumElements(getType()); }
int64_t RemainderOp::getFlops() { return getStaticNumElements(getType()); }
int64_t NegOp::getFlops() { return getStaticNumElements(getType()); }
int64_t ExpOp::getFlops() { return getStaticNumElements(getType()); }
int64_t LogOp::getFlops() { return getStaticNumElements(getType()); }
int64_t SqrtOp::getFlops() { return getStaticNumElements(getType()); }
int64_t RsqrtOp::getFlops() { return getStaticNumElements(getType()); }
int64_t TanhOp::getFlops() { return getStaticNumElements(getType()); }
int64_t CosOp::getFlops() { return getStaticNumElements(getType()); }
int64_t SinOp::getFlops() { return getStaticNumElements(getType()); }
int64_t ErfOp::getFlops() { return getStaticNumElements(getType()); }
// neg, exp, add, divide.
int64_t SigmoidOp::getFlops() { return 4 * getStaticNumElements(getType()); }
// sigmoid, then multiply.
int64_t SiluOp::getFlops() { return 5 * getStaticNumElements(getType()); }
// tanh form: cube (2), scale, add, scale, tanh, add, two multiplies.
int64_t GeluOp::getFlops() { return 9 * getStaticNumElements(getType()); }
int64_t ScaleOp::getFlops() { return getStaticNumElements(getType()); }
int64_t ConstantOp::getFlops() { return 0; }
int64_t CastOp::getFlops() { return 0; }
int64_t StopGradientOp::getFlops() { return 0; }
int64_t IotaOp::getFlops() { return 0; }
int64_t CheckIdsOp::getFlops() { return 0; }
int64_t RandomUniformOp::getFlops() { return 0; }
int64_t CompareOp::getFlops() { return getStaticNumElements(getType()); }
int64_t SelectOp::getFlops() { return 0; }

int64_t ReduceSumOp::getFlops() {
  return getStaticNumElements(getInput().getType());
}
int64_t ReduceMaxOp::getFlops() {
  return getStaticNumElements(getInput().getType());
}
int64_t ReduceMeanOp::getFlops() {
  return getStaticNumElements(getInput().getType());
}
// max, subtract, exp, sum, divide (log_softmax: log and subtract instead).
int64_t SoftmaxOp::getFlops() { return 5 * getStaticNumElements(getType()); }
int64_t LogSoftmaxOp::getFlops() { return 5 * getStaticNumElements(getType()); }
// square, sum, normalize, scale (+ one rsqrt per row).
int64_t RmsNormOp::getFlops() { return 4 * getStaticNumElements(getType()); }
// sum, subtract, square, sum, normalize, scale, shift.
int64_t LayerNormOp::getFlops() { return 7 * getStaticNumElements(getType()); }

int64_t MatmulOp::getFlops() {
  // lhs holds batch * M * K elements; the result's last dim is N.
  int64_t n = getType().getShape().back();
  if (ShapedType::isDynamic(n))
    return 0;
  return 2 * getStaticNumElements(getLhs().getType()) * n;
}

int64_t EmbeddingOp::getFlops() { return 0; }
// Per output element two multiplies and one add.
int64_t RopeOp::getFlops() { return 3 * getStaticNumElements(getType()); }

int64_t AttentionOp::getFlops() {
  RankedTensorType q = getQ().getType();
  int64_t seq = getK().getType().getDimSize(2);
  if (!q.hasStaticShape() || ShapedType::isDynamic(seq))
    return 0;
  // q k^T and p v: 2 * S_kv * Dh each per query row; causal halves both.
  int64_t flops = 4 * q.getNumElements() * seq;
  return getCausal() ? flops / 2 : flops;
}

// logsumexp per row (max, subtract, exp, sum) plus the pick.
int64_t CrossEntropyOp::getFlops() {
  return 5 * getStaticNumElements(getLogits().getType());
}

int64_t ReshapeOp::getFlops() { return 0; }
int64_t TransposeOp::getFlops() { return 0; }
int64_t SliceOp::getFlops() { return 0; }
int64_t ConcatOp::getFlops() { return 0; }
int64_t BroadcastInDimOp::getFlops() { return 0; }

// Backward-only ops.
// Derivative of the tanh form (as GELU's count) and the product.
int64_t GeluGradOp::getFlops() { return 12 * getStaticNumElements(getType()); }
// Recomputed statistics, two row dot products, the update and the weight sum.
int64_t RmsNormGradOp::getFlops() {
  return 8 * getStaticNumElements(getInput().getType());
}
int64_t LayerNormGradOp::getFlops() {
  return 12 * getStaticNumElements(getInput().getType());
}
// One add per element of grad.
int64_t EmbeddingGradOp::getFlops() {
  return getStaticNumElements(getGrad().getType());
}

int64_t AttentionGradOp::getFlops() {
  RankedTensorType q = getQ().getType();
  int64_t seq = getK().getType().getDimSize(2);
  if (!q.hasStaticShape() || ShapedType::isDynamic(seq))
    return 0;
  // Recomputed q k^T plus dv, dp, dq and dk: five products of 2 * S_kv * Dh
  // per query row; causal halves them.
  int64_t flops = 10 * q.getNumElements() * seq;
  return getCausal() ? flops / 2 : flops;
}

// Softmax per row (as cross_entropy) plus the subtract and scale.
int64_t CrossEntropyGradOp::getFlops() {
  return 7 * getStaticNumElements(getLogits().getType());
}
int64_t PadOp::getFlops() { return 0; }

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

LogicalResult mlir::titan::verifyAdamWTypes(Operation *op,
                                            RankedTensorType param,
                                            RankedTensorType grad, Type copy) {
  if (failed(verifyType(op, "grad", param.getShape(), grad.getElementType(),
                        grad)))
    return failure();
  if (!copy)
    return success();
  auto type = cast<RankedTensorType>(copy);
  if (failed(verifyType(op, "new_param_copy", param.getShape(),
                        type.getElementType(), type)))
    return failure();
  if (!isExactFloatWidening(type.getElementType(), param.getElementType()) ||
      type.getElementType() == param.getElementType())
    return op->emitOpError()
           << "new_param_copy must have a narrower float type than the "
              "parameter's "
           << param.getElementType() << ", got " << type.getElementType();
  return success();
}

LogicalResult mlir::titan::verifyAdamWHyperparameters(Operation *op,
                                                      double beta1,
                                                      double beta2, double eps,
                                                      double weightDecay) {
  for (auto [name, beta] : {std::pair{"beta1", beta1}, {"beta2", beta2}})
    if (!(beta >= 0 && beta < 1))
      return op->emitOpError() << name << " must be in [0, 1), got " << beta;
  if (failed(verifyPositive(op, "eps", eps)))
    return failure();
  if (!(weightDecay >= 0 && std::isfinite(weightDecay)))
    return op->emitOpError()
           << "weight_decay must be non-negative and finite, got "
           << weightDecay;
  return success();
}

LogicalResult AdamWOp::verify() {
  Value copy = getNewParamCopy();
  if (failed(verifyAdamWTypes(*this, getParam().getType(), getGrad().getType(),
                              copy ? copy.getType() : Type())))
    return failure();
  return verifyAdamWHyperparameters(
      *this, getBeta1().convertToDouble(), getBeta2().convertToDouble(),
      getEps().convertToDouble(), getWeightDecay().convertToDouble());
}

// The expanded update's 13 operations per element (decay, both moments,
// the denominator, the step), and the clipping coefficient's product.
int64_t AdamWOp::getFlops() {
  int64_t perElement = getGradScale() ? 14 : 13;
  return perElement * getStaticNumElements(getParam().getType());
}
