//===- AtenSupport.cpp - what the aten op conversions share ---------------===//
//
// Definitions of AtenSupport.h (documented there).
//
//===----------------------------------------------------------------------===//

#include "AtenSupport.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::titan;
using namespace mlir::titan::import;

llvm::Expected<int64_t> mlir::titan::import::normalizeDim(int64_t dim,
                                                          int64_t rank) {
  int64_t normalized = dim < 0 ? dim + rank : dim;
  if (normalized < 0 || normalized >= std::max<int64_t>(rank, 1))
    return makeError(llvm::formatv(
        "dimension {0} is out of range for a rank-{1} tensor", dim, rank));
  return normalized;
}

llvm::Expected<ArrayRef<int64_t>>
mlir::titan::import::shapeOf(const ImportedValue &value) {
  if (!value.isTensor() && !value.isComplex())
    return makeError("expected a tensor");
  return tensorType(value.tensor).getShape();
}

llvm::Expected<TensorDim>
mlir::titan::import::tensorAndDim(GraphImporter &importer, Node *node,
                                  size_t dimIndex, int64_t extraRank) {
  llvm::Expected<ArrayRef<int64_t>> shape = shapeOf(importer.input(node, 0));
  if (!shape)
    return shape.takeError();
  llvm::Expected<int64_t> dim = importer.intInput(node, dimIndex);
  if (!dim)
    return dim.takeError();
  if (shape->empty() && extraRank == 0)
    return makeError(llvm::formatv(
        "{0} along dimension {1} of a 0-d tensor, which has no dimensions",
        node->kind().toUnqualString(), *dim));
  llvm::Expected<int64_t> normalized =
      normalizeDim(*dim, shape->size() + extraRank);
  if (!normalized)
    return normalized.takeError();
  return TensorDim{*shape, *normalized};
}

static int floatRank(Type type) {
  if (type.isF64())
    return 3;
  if (type.isF32())
    return 2;
  return 1;
}

Type mlir::titan::import::promote(Type a, Type b, MLIRContext &context) {
  if (a == b)
    return a;
  if (!isa<FloatType>(a) && !isa<FloatType>(b))
    return a.getIntOrFloatBitWidth() >= b.getIntOrFloatBitWidth() ? a : b;
  if (!isa<FloatType>(a))
    return b;
  if (!isa<FloatType>(b))
    return a;
  if (floatRank(a) == 1 && floatRank(b) == 1)
    return Float32Type::get(&context);
  return floatRank(a) >= floatRank(b) ? a : b;
}

llvm::Expected<SmallVector<int64_t>>
mlir::titan::import::broadcastShape(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  SmallVector<int64_t> result(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < result.size(); ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      return makeError(
          llvm::formatv("shapes [{0}] and [{1}] cannot be broadcast together",
                        llvm::make_range(a.begin(), a.end()),
                        llvm::make_range(b.begin(), b.end())));
    result[result.size() - 1 - i] = da == 1 ? db : da;
  }
  return result;
}

llvm::Error mlir::titan::import::unify(Emitter &emit, Value &lhs, Value &rhs) {
  RankedTensorType lt = tensorType(lhs), rt = tensorType(rhs);
  llvm::Expected<SmallVector<int64_t>> shape =
      broadcastShape(lt.getShape(), rt.getShape());
  if (!shape)
    return shape.takeError();
  // As in PyTorch, a 0-d tensor does not change the element type of a
  // dimensioned one of the same category (float or integer).
  Type element;
  bool sameCategory = isa<FloatType>(lt.getElementType()) ==
                      isa<FloatType>(rt.getElementType());
  if (sameCategory && lt.getRank() == 0 && rt.getRank() > 0)
    element = rt.getElementType();
  else if (sameCategory && rt.getRank() == 0 && lt.getRank() > 0)
    element = lt.getElementType();
  else
    element = promote(lt.getElementType(), rt.getElementType(), emit.context);
  lhs = emit.broadcastTo(emit.cast(lhs, element), *shape);
  rhs = emit.broadcastTo(emit.cast(rhs, element), *shape);
  return llvm::Error::success();
}

llvm::Expected<Value>
mlir::titan::import::floatTensorInput(GraphImporter &importer, Node *node,
                                      const llvm::Twine &integerError) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  if (!isa<FloatType>(tensorType(*x).getElementType()))
    return makeError(integerError);
  return *x;
}

double mlir::titan::import::numberOr(GraphImporter &importer, Node *node,
                                     StringRef name, double fallback) {
  const ImportedValue *value = importer.namedInput(node, name);
  return value && value->isNumber() ? value->asDouble() : fallback;
}

llvm::Expected<Value>
mlir::titan::import::promotedFloatInput(GraphImporter &importer, Node *node,
                                        size_t index) {
  llvm::Expected<Value> x = importer.tensorInput(node, index);
  if (!x)
    return x.takeError();
  if (isa<FloatType>(tensorType(*x).getElementType()))
    return *x;
  return TensorBuilder(importer.getBuilder(), importer.getLoc())
      .cast(*x, Float32Type::get(&importer.getContext()));
}

Value mlir::titan::import::expm1(Emitter &emit, Value x) {
  Value half =
      emit.min(emit.binary<MaxOp>(emit.scale(x, 0.5), emit.splatLike(x, -0.25)),
               emit.splatLike(x, 0.25));
  Value t = emit.unary<TanhOp>(half);
  Value small = emit.binary<DivOp>(
      emit.scale(t, 2.0), emit.binary<SubOp>(emit.splatLike(x, 1.0), t));
  Value large =
      emit.binary<SubOp>(emit.unary<ExpOp>(x), emit.splatLike(x, 1.0));
  Value near = emit.compare("lt", emit.binary<MaxOp>(x, emit.unary<NegOp>(x)),
                            emit.splatLike(x, 0.5));
  return emit.select(near, small, large);
}

llvm::Expected<SmallVector<Value>>
mlir::titan::import::unifiedFloatOperands(GraphImporter &importer, Node *node,
                                          size_t first, size_t count) {
  Emitter emit(importer);
  SmallVector<Value> operands;
  for (size_t i = first; i < first + count; ++i) {
    const ImportedValue &input = importer.input(node, i);
    if (input.isNumber())
      operands.push_back(importer.materialize(input));
    else if (input.isTensor())
      operands.push_back(input.tensor);
    else
      return makeError(llvm::formatv("{0} takes tensors and numbers",
                                     node->kind().toUnqualString()));
  }
  for (size_t round = 0; round < 2; ++round)
    for (size_t i = 1; i < operands.size(); ++i)
      if (llvm::Error error = unify(emit, operands[0], operands[i]))
        return std::move(error);
  if (!isa<FloatType>(tensorType(operands[0]).getElementType()))
    for (Value &operand : operands)
      operand = emit.cast(operand, Float32Type::get(&importer.getContext()));
  return operands;
}
