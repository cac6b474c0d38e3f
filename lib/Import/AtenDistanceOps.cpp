//===- AtenDistanceOps.cpp - distances between vectors --------------------===//
//
// aten::pairwise_distance (F.pairwise_distance, nn.PairwiseDistance: the
// p-norm of x1 - x2 + eps along the last dim) and aten::cdist (torch.cdist:
// the p-norm distances between every row of x1 and every row of x2, for
// p = 2 and more than 25 rows the matmul form PyTorch takes then), and
// aten::pdist (the distances between every pair of a matrix's rows).
//
//===----------------------------------------------------------------------===//

#include "AtenSupport.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::titan;
using namespace mlir::titan::import;

llvm::Expected<Value>
mlir::titan::import::pairwiseDistance(Emitter &emit, Value a, Value b, double p,
                                      double eps, bool keepdim) {
  int64_t rank = tensorType(a).getRank();
  if (rank == 0)
    return makeError("pairwise_distance needs vectors, not 0-d tensors");
  Value difference = emit.binary<SubOp>(a, b);
  difference = emit.binary<AddOp>(difference, emit.splatLike(difference, eps));
  return vectorNorm(emit, difference, p, {rank - 1}, keepdim);
}

namespace {

/// aten::pairwise_distance(x1, x2, p, eps, keepdim): pairwiseDistance of
/// the two broadcast to one shape.
Outputs convertPairwiseDistance(GraphImporter &importer, Node *node) {
  llvm::Expected<SmallVector<Value>> operands =
      unifiedFloatOperands(importer, node, 0, 2);
  if (!operands)
    return operands.takeError();
  Emitter emit(importer);
  llvm::Expected<Value> distance = pairwiseDistance(
      emit, (*operands)[0], (*operands)[1], numberOr(importer, node, "p", 2.0),
      numberOr(importer, node, "eps", 1e-6),
      flagOr(importer, node, "keepdim", false));
  if (!distance)
    return distance.takeError();
  return single(*distance);
}

/// The rows `x` [B.., P, M] of a cdist with its batch dims broadcast to
/// `batch`.
Value broadcastBatch(Emitter &emit, Value x, ArrayRef<int64_t> batch) {
  ArrayRef<int64_t> shape = tensorType(x).getShape();
  SmallVector<int64_t> target(batch);
  target.append(shape.end() - 2, shape.end());
  return emit.broadcastTo(x, target);
}

/// Squared Euclidean distances as one matmul, as PyTorch's
/// _euclidean_dist: [-2 x1, |x1|^2, 1] times [x2, 1, |x2|^2] transposed,
/// at least 1e-30, then its root.
Value euclideanByMatmul(Emitter &emit, Value x1, Value x2) {
  int64_t last = tensorType(x1).getRank() - 1;
  auto augmented = [&](Value x, bool first) {
    Value squares =
        emit.reduceSum(emit.binary<MulOp>(x, x), {last}, /*keepdim=*/true);
    Value ones = emit.splatLike(squares, 1.0);
    if (first)
      return emit.concat({emit.scale(x, -2.0), squares, ones}, last);
    return emit.concat({x, ones, squares}, last);
  };
  Value lhs = augmented(x1, true), rhs = augmented(x2, false);
  SmallVector<int64_t> shape(tensorType(x1).getShape());
  shape.back() = tensorType(x2).getDimSize(last - 1);
  Value squared =
      MatmulOp::create(emit.builder, emit.loc, tensorType(x1).clone(shape), lhs,
                       rhs, Value(), /*transpose_lhs=*/false,
                       /*transpose_rhs=*/true);
  squared = emit.binary<MaxOp>(squared, emit.splatLike(squared, 1e-30));
  return emit.unary<SqrtOp>(squared);
}

/// aten::cdist(x1 [B.., P, M], x2 [B.., R, M], p, compute_mode): [B.., P,
/// R], the p-norm of each difference of rows; for p = 2 by matmul when
/// compute_mode is 1 ('use_mm_for_euclid_dist'), or None and P or R is
/// above 25, as PyTorch chooses.
Outputs convertCdist(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x1 = importer.tensorInput(node, 0);
  llvm::Expected<Value> x2 = importer.tensorInput(node, 1);
  if (llvm::Error error = requireAll("cdist needs two tensors", x1, x2))
    return std::move(error);
  RankedTensorType type1 = tensorType(*x1), type2 = tensorType(*x2);
  if (!isa<FloatType>(type1.getElementType()) ||
      !isa<FloatType>(type2.getElementType()))
    return makeError("cdist takes only floating-point tensors, as PyTorch's");
  if (type1.getRank() < 2 || type2.getRank() < 2)
    return makeError(llvm::formatv(
        "cdist needs x1 and x2 of rank 2 or more (rows of vectors), not "
        "ranks {0} and {1}",
        type1.getRank(), type2.getRank()));
  int64_t width = type1.getShape().back();
  if (type2.getShape().back() != width)
    return makeError(llvm::formatv("cdist of rows of {0} and of {1} elements: "
                                   "x1 and x2 need rows of one length",
                                   width, type2.getShape().back()));
  double p = numberOr(importer, node, "p", 2.0);
  if (p < 0)
    return makeError(llvm::formatv("cdist's p must be >= 0, not {0}", p));
  int64_t mode =
      static_cast<int64_t>(numberOr(importer, node, "compute_mode", 0));
  llvm::Expected<SmallVector<int64_t>> batch = broadcastShape(
      type1.getShape().drop_back(2), type2.getShape().drop_back(2));
  if (!batch)
    return makeError("cdist's batch dims: " +
                     llvm::toString(batch.takeError()));
  Emitter emit(importer);
  Type element =
      promote(type1.getElementType(), type2.getElementType(), emit.context);
  Value a = broadcastBatch(emit, emit.cast(*x1, element), *batch);
  Value b = broadcastBatch(emit, emit.cast(*x2, element), *batch);
  int64_t rows1 = type1.getDimSize(type1.getRank() - 2);
  int64_t rows2 = type2.getDimSize(type2.getRank() - 2);
  if (p == 2 && (mode == 1 || (mode == 0 && (rows1 > 25 || rows2 > 25))))
    return single(euclideanByMatmul(emit, a, b));
  // Every pair of rows: a [B.., P, 1, M] against b [B.., 1, R, M].
  int64_t rank = tensorType(a).getRank();
  SmallVector<int64_t> pairs(*batch), asA(*batch), asB(*batch);
  pairs.append({rows1, rows2, width});
  asA.append({rows1, 1, width});
  asB.append({1, rows2, width});
  Value difference =
      emit.binary<SubOp>(emit.broadcastTo(emit.reshape(a, asA), pairs),
                         emit.broadcastTo(emit.reshape(b, asB), pairs));
  llvm::Expected<Value> distance =
      vectorNorm(emit, difference, p, {rank}, /*keepdim=*/false);
  if (!distance)
    return distance.takeError();
  return single(*distance);
}

/// aten::pdist(x [N, M], p=2): the p-norm distances between every pair of
/// rows i < j, in order ([N (N - 1) / 2]): the rows gathered at the pairs'
/// positions (known at import time), their difference's vector norm.
Outputs convertPdist(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  if (!x)
    return x.takeError();
  if (tensorType(*x).getRank() != 2)
    return makeError(llvm::formatv("pdist only supports 2D tensors, got: {0}D",
                                   tensorType(*x).getRank()));
  double p = numberOr(importer, node, "p", 2.0);
  if (p < 0)
    return makeError("pdist only supports non-negative p values");
  int64_t n = tensorType(*x).getDimSize(0);
  int64_t m = tensorType(*x).getDimSize(1);
  Emitter emit(importer);
  int64_t pairs = n * (n - 1) / 2;
  if (pairs == 0)
    return single(emit.splat(
        RankedTensorType::get({0}, tensorType(*x).getElementType()), 0.0));
  SmallVector<int64_t> first, second;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) {
      first.push_back(i);
      second.push_back(j);
    }
  auto rowsOf = [&](ArrayRef<int64_t> positions) -> Outputs {
    auto column = RankedTensorType::get({pairs, 1}, emit.builder.getI64Type());
    Value index =
        ConstantOp::create(emit.builder, emit.loc, column,
                           DenseIntElementsAttr::get(column, positions));
    return gatherAlong(importer, *x, 0, emit.broadcastTo(index, {pairs, m}));
  };
  Outputs a = rowsOf(first), b = rowsOf(second);
  if (!a)
    return a.takeError();
  if (!b)
    return b.takeError();
  llvm::Expected<Value> distance = vectorNorm(
      emit, emit.binary<SubOp>((*a)[0].tensor, (*b)[0].tensor), p, {1}, false);
  if (!distance)
    return distance.takeError();
  return single(*distance);
}

} // namespace

void mlir::titan::import::addDistanceConversions(
    llvm::StringMap<Conversion> &table) {
  table["aten::pairwise_distance"] = convertPairwiseDistance;
  table["aten::cdist"] = convertCdist;
  table["aten::pdist"] = convertPdist;
}
