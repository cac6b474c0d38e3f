//===- AtenProductOps.cpp - tensor products written with titan ops --------===//
//
// aten::tensordot (contracted dims moved together, one matmul),
// aten::bilinear (nn.Bilinear: x2 against every output's matrix, then x1),
// aten::kron (the operands' dims interleaved by broadcasting),
// aten::trace (the diagonal's sum under a mask), and the matrices built
// from vectors: cartesian_prod, block_diag, diag_embed, vander and
// combinations.
//
//===----------------------------------------------------------------------===//

#include "AtenSupport.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <functional>

using namespace mlir;
using namespace mlir::titan;
using namespace mlir::titan::import;

namespace {

/// `lhs` [M, K] times `rhs` [K, N] (`transposeRhs`: [N, K]).
Value matmul2d(Emitter &emit, Value lhs, Value rhs, bool transposeRhs) {
  RankedTensorType l = tensorType(lhs), r = tensorType(rhs);
  auto type = RankedTensorType::get(
      {l.getDimSize(0), r.getDimSize(transposeRhs ? 0 : 1)},
      l.getElementType());
  return MatmulOp::create(emit.builder, emit.loc, type, lhs, rhs, Value(),
                          /*transpose_lhs=*/false, transposeRhs);
}

/// The int list input `index` of `node`, each dim normalized for `rank`.
llvm::Expected<SmallVector<int64_t>>
dimsInput(GraphImporter &importer, Node *node, size_t index, int64_t rank) {
  const ImportedValue &list = importer.input(node, index);
  SmallVector<int64_t> dims;
  if (list.kind != ImportedValue::Kind::List)
    return makeError("expected a list of dims");
  for (const ImportedValue &item : list.items) {
    if (item.kind != ImportedValue::Kind::Int)
      return makeError("expected a list of constant dims");
    llvm::Expected<int64_t> dim = normalizeDim(item.intValue, rank);
    if (!dim)
      return dim.takeError();
    dims.push_back(*dim);
  }
  return dims;
}

/// aten::tensordot(a, b, dims_a, dims_b): a's free dims then b's, the
/// paired dims summed: a permuted [free, contracted] and b [contracted,
/// free], each viewed 2-d, one matmul.
Outputs convertTensordot(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> a = floatTensorInput(importer, node);
  llvm::Expected<Value> b = importer.tensorInput(node, 1);
  if (llvm::Error error = requireAll("tensordot needs two float tensors", a, b))
    return std::move(error);
  RankedTensorType aType = tensorType(*a), bType = tensorType(*b);
  llvm::Expected<SmallVector<int64_t>> aDims =
      dimsInput(importer, node, 2, aType.getRank());
  llvm::Expected<SmallVector<int64_t>> bDims =
      dimsInput(importer, node, 3, bType.getRank());
  if (!aDims || !bDims) {
    llvm::Error error = llvm::joinErrors(aDims.takeError(), bDims.takeError());
    return std::move(error);
  }
  if (aDims->size() != bDims->size())
    return makeError(llvm::formatv("tensordot contracts {0} dims of the "
                                   "first tensor with {1} of the second",
                                   aDims->size(), bDims->size()));
  int64_t contracted = 1;
  for (auto [da, db] : llvm::zip(*aDims, *bDims)) {
    if (aType.getDimSize(da) != bType.getDimSize(db))
      return makeError(llvm::formatv(
          "tensordot pairs dim {0} of {1} with dim {2} of {3}: their sizes "
          "differ",
          da, aType, db, bType));
    contracted *= aType.getDimSize(da);
  }
  Emitter emit(importer);
  Value bValue = emit.cast(*b, aType.getElementType());
  auto freeDims = [](int64_t rank, ArrayRef<int64_t> summed) {
    SmallVector<int64_t> free;
    for (int64_t d = 0; d < rank; ++d)
      if (!llvm::is_contained(summed, d))
        free.push_back(d);
    return free;
  };
  SmallVector<int64_t> aFree = freeDims(aType.getRank(), *aDims);
  SmallVector<int64_t> bFree = freeDims(bType.getRank(), *bDims);
  SmallVector<int64_t> shape;
  int64_t rows = 1, columns = 1;
  for (int64_t d : aFree) {
    shape.push_back(aType.getDimSize(d));
    rows *= aType.getDimSize(d);
  }
  for (int64_t d : bFree) {
    shape.push_back(bType.getDimSize(d));
    columns *= bType.getDimSize(d);
  }
  SmallVector<int64_t> aOrder(aFree), bOrder(*bDims);
  aOrder.append(aDims->begin(), aDims->end());
  bOrder.append(bFree.begin(), bFree.end());
  Value lhs = emit.reshape(emit.transpose(*a, aOrder), {rows, contracted});
  Value rhs =
      emit.reshape(emit.transpose(bValue, bOrder), {contracted, columns});
  return single(
      emit.reshape(matmul2d(emit, lhs, rhs, /*transposeRhs=*/false), shape));
}

/// aten::bilinear(x1 [*, I], x2 [*, J], weight [O, I, J], bias [O]):
/// y[o] = x1 W[o] x2 + b[o]: x2 against the weight viewed [O I, J], then
/// the sum over I of x1 times it.
Outputs convertBilinear(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x1 = floatTensorInput(importer, node);
  llvm::Expected<Value> x2 = importer.tensorInput(node, 1);
  llvm::Expected<Value> weight = importer.tensorInput(node, 2);
  if (llvm::Error error = requireAll(
          "bilinear needs two inputs and a weight tensor", x1, x2, weight))
    return std::move(error);
  RankedTensorType t1 = tensorType(*x1), t2 = tensorType(*x2),
                   tw = tensorType(*weight);
  if (tw.getRank() != 3 || t1.getRank() < 1 ||
      t1.getShape().drop_back() != t2.getShape().drop_back() ||
      t1.getShape().back() != tw.getDimSize(1) ||
      t2.getShape().back() != tw.getDimSize(2))
    return makeError(llvm::formatv(
        "bilinear of {0} and {1} with weight {2}: expected inputs [*, I] "
        "and [*, J] and a weight [O, I, J]",
        t1, t2, tw));
  int64_t out = tw.getDimSize(0), in1 = tw.getDimSize(1),
          in2 = tw.getDimSize(2);
  int64_t rows = t1.getNumElements() / in1;
  Emitter emit(importer);
  Type element = t1.getElementType();
  Value projected =
      matmul2d(emit, emit.reshape(emit.cast(*x2, element), {rows, in2}),
               emit.reshape(emit.cast(*weight, element), {out * in1, in2}),
               /*transposeRhs=*/true);
  Value products = emit.binary<MulOp>(
      emit.reshape(projected, {rows, out, in1}),
      emit.broadcastTo(emit.reshape(*x1, {rows, 1, in1}), {rows, out, in1}));
  Value result = emit.reduceSum(products, {2}, /*keepdim=*/false);
  const ImportedValue &bias = importer.input(node, 3);
  if (bias.isTensor())
    result = emit.binary<AddOp>(
        result, emit.broadcastTo(emit.cast(bias.tensor, element), {rows, out}));
  SmallVector<int64_t> shape(t1.getShape().drop_back());
  shape.push_back(out);
  return single(emit.reshape(result, shape));
}

/// aten::kron(a, b): of equal rank (the lower one padded with leading 1s),
/// a viewed [a0, 1, a1, 1, ..] times b viewed [1, b0, 1, b1, ..], viewed
/// [a0 b0, a1 b1, ..].
Outputs convertKron(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> a = importer.tensorInput(node, 0);
  llvm::Expected<Value> b = importer.tensorInput(node, 1);
  if (llvm::Error error = requireAll("kron needs two tensors", a, b))
    return std::move(error);
  Emitter emit(importer);
  Value lhs = *a, rhs = *b;
  Type element = promote(tensorType(lhs).getElementType(),
                         tensorType(rhs).getElementType(), emit.context);
  lhs = emit.cast(lhs, element);
  rhs = emit.cast(rhs, element);
  int64_t rank = std::max(tensorType(lhs).getRank(), tensorType(rhs).getRank());
  auto padded = [&](Value v) {
    SmallVector<int64_t> shape(rank - tensorType(v).getRank(), 1);
    llvm::append_range(shape, tensorType(v).getShape());
    return shape;
  };
  SmallVector<int64_t> aShape = padded(lhs), bShape = padded(rhs);
  SmallVector<int64_t> aView, bView, interleaved, result;
  for (int64_t d = 0; d < rank; ++d) {
    aView.append({aShape[d], 1});
    bView.append({1, bShape[d]});
    interleaved.append({aShape[d], bShape[d]});
    result.push_back(aShape[d] * bShape[d]);
  }
  Value product = emit.binary<MulOp>(
      emit.broadcastTo(emit.reshape(lhs, aView), interleaved),
      emit.broadcastTo(emit.reshape(rhs, bView), interleaved));
  return single(emit.reshape(product, result));
}

/// aten::trace(x [M, N]): the sum of x where the row equals the column.
Outputs convertTrace(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  RankedTensorType type = tensorType(*x);
  if (type.getRank() != 2)
    return makeError(llvm::formatv("trace of {0}: expected a matrix", type));
  Emitter emit(importer);
  Value value = *x;
  if (!isa<FloatType>(type.getElementType()))
    value = emit.cast(value, exactFloatType(emit, type.getElementType()));
  RankedTensorType valueType = tensorType(value);
  auto indices = valueType.clone(emit.builder.getI64Type());
  Value diagonal =
      emit.compare("eq", emit.iota(indices, 0), emit.iota(indices, 1));
  Value sum =
      emit.sumAll(emit.select(diagonal, value, emit.splat(valueType, 0.0)));
  // Integer matrices have an int64 trace, as in PyTorch.
  if (!isa<FloatType>(type.getElementType()))
    sum = emit.cast(sum, emit.builder.getI64Type());
  return single(sum);
}

/// The tensors of list input 0 of `node` (`what` names the op in
/// errors), of rank at most `maxRank`, in their promoted element type.
llvm::Expected<SmallVector<Value>> listOfTensors(GraphImporter &importer,
                                                 Node *node, StringRef what,
                                                 int64_t maxRank) {
  const ImportedValue &list = importer.input(node, 0);
  if (list.kind != ImportedValue::Kind::List || list.items.empty())
    return makeError(what + " takes a list of tensors");
  SmallVector<Value> tensors;
  Type element;
  for (const ImportedValue &item : list.items) {
    if (!item.isTensor() || tensorType(item.tensor).getRank() > maxRank)
      return makeError(llvm::formatv("{0} takes tensors of rank at most {1}",
                                     what, maxRank));
    Type type = tensorType(item.tensor).getElementType();
    element = element ? promote(element, type, importer.getContext()) : type;
    tensors.push_back(item.tensor);
  }
  Emitter emit(importer);
  for (Value &tensor : tensors)
    tensor = emit.cast(tensor, element);
  return tensors;
}

/// aten::cartesian_prod(vectors): every combination, the last vector
/// varying fastest: [prod n_i, k], each column a vector broadcast over
/// the grid and flattened (one vector: itself).
Outputs convertCartesianProd(GraphImporter &importer, Node *node) {
  llvm::Expected<SmallVector<Value>> vectors =
      listOfTensors(importer, node, "cartesian_prod", 1);
  if (!vectors)
    return vectors.takeError();
  Emitter emit(importer);
  SmallVector<int64_t> grid;
  for (Value v : *vectors)
    grid.push_back(tensorType(v).getNumElements());
  int64_t count = ShapedType::getNumElements(grid);
  if (vectors->size() == 1)
    return single(emit.reshape(vectors->front(), {count}));
  SmallVector<Value> columns;
  for (auto [i, v] : llvm::enumerate(*vectors)) {
    SmallVector<int64_t> along(grid.size(), 1);
    along[i] = grid[i];
    columns.push_back(emit.reshape(
        emit.broadcastTo(emit.reshape(v, along), grid), {count, 1}));
  }
  return single(emit.concat(columns, 1));
}

/// aten::block_diag(tensors): the tensors (a 0-d one as 1 x 1, a vector
/// as a row) along the diagonal of a zero matrix, each row of blocks
/// padded with zeros left and right and the rows concatenated.
Outputs convertBlockDiag(GraphImporter &importer, Node *node) {
  llvm::Expected<SmallVector<Value>> blocks =
      listOfTensors(importer, node, "block_diag", 2);
  if (!blocks)
    return blocks.takeError();
  Emitter emit(importer);
  SmallVector<Value> matrices;
  int64_t width = 0;
  for (Value block : *blocks) {
    ArrayRef<int64_t> shape = tensorType(block).getShape();
    int64_t rows = shape.size() == 2 ? shape[0] : 1;
    int64_t cols = shape.empty() ? 1 : shape.back();
    matrices.push_back(emit.reshape(block, {rows, cols}));
    width += cols;
  }
  SmallVector<Value> rows;
  int64_t before = 0;
  for (Value matrix : matrices) {
    RankedTensorType type = tensorType(matrix);
    int64_t height = type.getDimSize(0), cols = type.getDimSize(1);
    SmallVector<Value> parts;
    if (before > 0)
      parts.push_back(emit.splat(type.clone({height, before}), 0.0));
    parts.push_back(matrix);
    if (width - before - cols > 0)
      parts.push_back(
          emit.splat(type.clone({height, width - before - cols}), 0.0));
    rows.push_back(parts.size() == 1 ? matrix : emit.concat(parts, 1));
    before += cols;
  }
  return single(rows.size() == 1 ? rows.front() : emit.concat(rows, 0));
}

/// aten::diag_embed(x, offset=0, dim1=-2, dim2=-1): x's last dim placed
/// on the `offset` diagonal of two new dims (n + |offset| long each) at
/// dim1 and dim2 of the result, zeros elsewhere: x along the rows (above
/// the diagonal) or the columns (below) selected where col - row ==
/// offset, then the two dims moved into place.
Outputs convertDiagEmbed(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  RankedTensorType type = tensorType(*x);
  if (type.getRank() == 0)
    return makeError("diag_embed needs a tensor of at least 1 dim");
  int64_t offset = intOr(importer, node, "offset", 0);
  int64_t rank = type.getRank() + 1;
  llvm::Expected<int64_t> dim1 =
      normalizeDim(intOr(importer, node, "dim1", -2), rank);
  llvm::Expected<int64_t> dim2 =
      normalizeDim(intOr(importer, node, "dim2", -1), rank);
  if (llvm::Error error = requireAll(
          llvm::formatv("diag_embed's dim1 and dim2 must be dims of the "
                        "rank-{0} result",
                        rank),
          dim1, dim2))
    return std::move(error);
  if (*dim1 == *dim2)
    return makeError(llvm::formatv(
        "diagonal dimensions cannot be identical {0}, {1}", *dim1, *dim2));
  Emitter emit(importer);
  int64_t n = type.getShape().back();
  int64_t size = n + std::abs(offset);
  SmallVector<int64_t> shape(type.getShape().drop_back());
  Value along = emit.padTo(*x, type.getRank() - 1, size);
  SmallVector<int64_t> lined(shape);
  if (offset >= 0)
    lined.append({size, 1});
  else
    lined.append({1, size});
  shape.append({size, size});
  Value values = emit.broadcastTo(emit.reshape(along, lined), shape);
  auto positions = RankedTensorType::get(shape, emit.builder.getI64Type());
  Value onDiagonal =
      emit.compare("eq",
                   emit.binary<SubOp>(emit.iota(positions, rank - 1),
                                      emit.iota(positions, rank - 2)),
                   emit.splat(positions, static_cast<double>(offset)));
  Value matrix = emit.select(onDiagonal, values, emit.splatLike(values, 0.0));
  SmallVector<int64_t> permutation;
  for (int64_t d = 0, batch = 0; d < rank; ++d)
    permutation.push_back(d == *dim1   ? rank - 2
                          : d == *dim2 ? rank - 1
                                       : batch++);
  return single(emit.transpose(matrix, permutation));
}

/// aten::vander(x, N=len(x), increasing=False): the powers of the 1-d x,
/// x^(N-1) .. x^0 per row (x^0 .. x^(N-1) when increasing), as repeated
/// products (exact for integers, which give int64).
Outputs convertVander(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  if (tensorType(*x).getRank() != 1)
    return makeError("vander needs a 1-d tensor");
  Emitter emit(importer);
  Value column = *x;
  Type element = tensorType(column).getElementType();
  if (!isa<FloatType>(element))
    column = emit.cast(column, emit.builder.getI64Type());
  int64_t n = tensorType(column).getDimSize(0);
  const ImportedValue *count = importer.namedInput(node, "N");
  int64_t columns =
      count && count->kind == ImportedValue::Kind::Int ? count->intValue : n;
  if (columns < 0)
    return makeError(
        llvm::formatv("vander's N must be non-negative, not {0}", columns));
  column = emit.reshape(column, {n, 1});
  SmallVector<Value> powers;
  Value power = emit.splatLike(column, 1.0);
  for (int64_t p = 0; p < columns; ++p) {
    powers.push_back(power);
    power = emit.binary<MulOp>(power, column);
  }
  if (!flagOr(importer, node, "increasing", false))
    std::reverse(powers.begin(), powers.end());
  if (powers.empty())
    return single(emit.splat(
        RankedTensorType::get({n, 0}, tensorType(column).getElementType()),
        0.0));
  return single(emit.concat(powers, 1));
}

/// aten::combinations(x, r=2, with_replacement=False): the r-element
/// combinations of the 1-d x's elements in lexicographic order of their
/// positions, [count, r] (r = 0: an empty [0]); the positions are known at
/// import time, and each column is a gather of x at them.
Outputs convertCombinations(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  if (tensorType(*x).getRank() != 1)
    return makeError("combinations needs a 1-d tensor");
  int64_t r = intOr(importer, node, "r", 2);
  bool replacement = flagOr(importer, node, "with_replacement", false);
  if (r < 0)
    return makeError(
        llvm::formatv("combinations expects a non-negative r, not {0}", r));
  Emitter emit(importer);
  Type element = tensorType(*x).getElementType();
  int64_t n = tensorType(*x).getDimSize(0);
  if (r == 0)
    return single(emit.splat(RankedTensorType::get({0}, element), 0.0));
  // C(n, r) rows, or C(n + r - 1, r) with replacement, counted before
  // they are built.
  int64_t pool = replacement ? n + r - 1 : n;
  double total = 1;
  for (int64_t k = 1; k <= r; ++k)
    total = total * static_cast<double>(pool - r + k) / static_cast<double>(k);
  constexpr double kMaxCombinations = 1 << 20;
  if (std::round(total) > kMaxCombinations)
    return makeError(llvm::formatv(
        "combinations of {0} elements taken {1} at a time make {2} rows; "
        "titan builds at most 2^20",
        n, r, static_cast<int64_t>(std::round(total))));
  // Each combination, as positions that never decrease (with replacement)
  // or always increase.
  SmallVector<SmallVector<int64_t>> rows;
  SmallVector<int64_t> current(r, 0);
  std::function<void(int64_t, int64_t)> extend = [&](int64_t at, int64_t from) {
    if (at == r) {
      rows.push_back(current);
      return;
    }
    for (int64_t i = from; i < n; ++i) {
      current[at] = i;
      extend(at + 1, replacement ? i : i + 1);
    }
  };
  extend(0, 0);
  int64_t count = static_cast<int64_t>(rows.size());
  if (count == 0)
    return single(emit.splat(RankedTensorType::get({0, r}, element), 0.0));
  SmallVector<Value> columns;
  auto indexType = RankedTensorType::get({count}, emit.builder.getI64Type());
  for (int64_t k = 0; k < r; ++k) {
    SmallVector<int64_t> positions;
    for (const SmallVector<int64_t> &row : rows)
      positions.push_back(row[k]);
    Value index = ConstantOp::create(
        emit.builder, emit.loc, indexType,
        DenseIntElementsAttr::get(indexType, ArrayRef<int64_t>(positions)));
    Outputs gathered = gatherAlong(importer, *x, 0, index);
    if (!gathered)
      return gathered.takeError();
    columns.push_back(emit.reshape((*gathered)[0].tensor, {count, 1}));
  }
  return single(emit.concat(columns, 1));
}

} // namespace

void mlir::titan::import::addProductConversions(
    llvm::StringMap<Conversion> &table) {
  table["aten::tensordot"] = convertTensordot;
  table["aten::bilinear"] = convertBilinear;
  table["aten::cartesian_prod"] = convertCartesianProd;
  table["aten::block_diag"] = convertBlockDiag;
  table["aten::kron"] = convertKron;
  table["aten::trace"] = convertTrace;
  table["aten::diag_embed"] = convertDiagEmbed;
  table["aten::vander"] = convertVander;
  table["aten::combinations"] = convertCombinations;
}
