//===- CollectiveOps.cpp - collectives on local tensors -------------------===//

#include "AsmDirectives.h"
#include "OpVerification.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::titan;

ParseResult mlir::titan::parseReduceKind(OpAsmParser &parser,
                                         ReduceKindAttr &reduce) {
  StringRef keyword;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<ReduceKind> kind = parseReduce(keyword);
  if (!kind)
    return parser.emitError(loc) << "unknown reduction '" << keyword
                                 << "', expected sum, avg, max or min";
  reduce = ReduceKindAttr::get(parser.getContext(), *kind);
  return success();
}

void mlir::titan::printReduceKind(OpAsmPrinter &printer, Operation *,
                                  ReduceKindAttr reduce) {
  printer << stringifyReduce(reduce.getValue());
}

/// Checks the mesh and axes of a collective; on success returns the group
/// size (product of the named axis sizes).
static FailureOr<int64_t> verifyGroup(Operation *op, FlatSymbolRefAttr meshRef,
                                      ArrayAttr axes) {
  MeshOp mesh = MeshOp::lookup(op, meshRef);
  if (!mesh)
    return op->emitOpError() << "refers to unknown mesh " << meshRef;
  if (axes.empty())
    return op->emitOpError() << "needs at least one mesh axis";
  llvm::StringSet<> seen;
  int64_t groupSize = 1;
  for (Attribute attr : axes) {
    StringRef axis = cast<StringAttr>(attr).getValue();
    std::optional<unsigned> index = mesh.getAxisIndex(axis);
    if (!index)
      return op->emitOpError() << "names axis \"" << axis << "\" that mesh @"
                               << mesh.getSymName() << " does not have";
    if (!seen.insert(axis).second)
      return op->emitOpError()
             << "names axis \"" << axis << "\" more than once";
    groupSize *= mesh.getAxisSizes()[*index];
  }
  return groupSize;
}

/// Checks that `result` equals `input` with dim `dim` scaled by `num/den`,
/// and the element types agree.
static LogicalResult
verifyScaledShape(Operation *op, RankedTensorType input,
                  RankedTensorType result,
                  ArrayRef<std::pair<int64_t, int64_t>> dimFactors) {
  if (input.getElementType() != result.getElementType())
    return op->emitOpError()
           << "result element type " << result.getElementType()
           << " differs from operand element type " << input.getElementType();
  SmallVector<int64_t> expected(input.getShape());
  for (auto [dim, factor] : dimFactors) {
    if (ShapedType::isDynamic(expected[dim]))
      continue;
    expected[dim] =
        factor > 0 ? expected[dim] * factor : expected[dim] / -factor;
  }
  if (input.getRank() != result.getRank() ||
      ArrayRef<int64_t>(expected) != result.getShape())
    return op->emitOpError()
           << "expected result type "
           << RankedTensorType::get(expected, input.getElementType())
           << ", got " << result;
  return success();
}

/// Checks that dim `dim` of `type` is divisible by `groupSize`.
static LogicalResult verifyDivisible(Operation *op, RankedTensorType type,
                                     int64_t dim, int64_t groupSize,
                                     StringRef what) {
  int64_t size = type.getDimSize(dim);
  if (!ShapedType::isDynamic(size) && size % groupSize != 0)
    return op->emitOpError()
           << what << " " << dim << " has size " << size
           << ", which the group of " << groupSize << " ranks does not divide";
  return success();
}

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

LogicalResult AllGatherOp::verify() {
  FailureOr<int64_t> group = verifyGroup(*this, getMeshAttr(), getAxes());
  if (failed(group))
    return failure();
  auto input = getInput().getType();
  if (failed(verifyDimInRange(*this, "gather_dim", getGatherDim(),
                              input.getRank())))
    return failure();
  return verifyScaledShape(*this, input, getType(), {{getGatherDim(), *group}});
}

LogicalResult ReduceScatterOp::verify() {
  FailureOr<int64_t> group = verifyGroup(*this, getMeshAttr(), getAxes());
  if (failed(group))
    return failure();
  auto input = getInput().getType();
  if (failed(verifyDimInRange(*this, "scatter_dim", getScatterDim(),
                              input.getRank())) ||
      failed(verifyDivisible(*this, input, getScatterDim(), *group,
                             "scatter_dim")))
    return failure();
  return verifyScaledShape(*this, input, getType(),
                           {{getScatterDim(), -*group}});
}

LogicalResult AllReduceOp::verify() {
  FailureOr<int64_t> group = verifyGroup(*this, getMeshAttr(), getAxes());
  if (failed(group))
    return failure();
  if (!isa<FloatType>(getType().getElementType()) &&
      getReduce().getValue() == ReduceKind::Avg)
    return emitOpError() << "cannot average integer tensors";
  return success();
}

LogicalResult AllToAllOp::verify() {
  FailureOr<int64_t> group = verifyGroup(*this, getMeshAttr(), getAxes());
  if (failed(group))
    return failure();
  auto input = getInput().getType();
  if (failed(verifyDimInRange(*this, "split_dim", getSplitDim(),
                              input.getRank())) ||
      failed(verifyDimInRange(*this, "concat_dim", getConcatDim(),
                              input.getRank())) ||
      failed(verifyDivisible(*this, input, getSplitDim(), *group, "split_dim")))
    return failure();
  // On one dim, the chunks are exchanged in place (the runtime's form).
  if (getSplitDim() == getConcatDim()) {
    if (input != getType())
      return emitOpError() << "exchanging the chunks of one dim keeps the "
                              "type, but "
                           << input << " becomes " << getType();
    return success();
  }
  return verifyScaledShape(
      *this, input, getType(),
      {{getSplitDim(), -*group}, {getConcatDim(), *group}});
}

LogicalResult BroadcastOp::verify() {
  FailureOr<int64_t> group = verifyGroup(*this, getMeshAttr(), getAxes());
  if (failed(group))
    return failure();
  int64_t root = getRoot();
  if (root < 0 || root >= *group)
    return emitOpError() << "root " << root << " is not a rank of the group of "
                         << *group;
  return success();
}

/// Shared check of send/recv: one axis, a peer on it.
static LogicalResult verifyPointToPoint(Operation *op,
                                        FlatSymbolRefAttr meshRef,
                                        ArrayAttr axes, int64_t peer) {
  FailureOr<int64_t> group = verifyGroup(op, meshRef, axes);
  if (failed(group))
    return failure();
  if (axes.size() != 1)
    return op->emitOpError()
           << "needs exactly one mesh axis, got " << axes.size();
  if (peer < 0 || peer >= *group)
    return op->emitOpError()
           << "peer " << peer << " is not a coordinate of axis " << axes[0]
           << " of size " << *group;
  return success();
}

LogicalResult SendOp::verify() {
  return verifyPointToPoint(*this, getMeshAttr(), getAxes(), getPeer());
}

LogicalResult RecvOp::verify() {
  return verifyPointToPoint(*this, getMeshAttr(), getAxes(), getPeer());
}

LogicalResult AxisIndexOp::verify() {
  return verifyGroup(*this, getMeshAttr(), getAxes());
}

//===----------------------------------------------------------------------===//
// Group sizes and costs
//===----------------------------------------------------------------------===//

int64_t mlir::titan::getGroupSize(Operation *op, FlatSymbolRefAttr meshRef,
                                  ArrayAttr axes) {
  MeshOp mesh = MeshOp::lookup(op, meshRef);
  int64_t size = 1;
  if (!mesh)
    return size;
  for (Attribute axis : axes)
    if (std::optional<unsigned> index =
            mesh.getAxisIndex(cast<StringAttr>(axis).getValue()))
      size *= mesh.getAxisSizes()[*index];
  return size;
}

// Collectives that reduce perform one operation per element received from
// each other rank; the others move data only.
int64_t AllGatherOp::getFlops() { return 0; }
int64_t ReduceScatterOp::getFlops() {
  return getStaticNumElements(getInput().getType()) * (getGroupSize() - 1) /
         std::max<int64_t>(1, getGroupSize());
}
int64_t AllReduceOp::getFlops() {
  return getStaticNumElements(getInput().getType()) * (getGroupSize() - 1) /
         std::max<int64_t>(1, getGroupSize());
}
int64_t AllToAllOp::getFlops() { return 0; }
int64_t BroadcastOp::getFlops() { return 0; }
int64_t SendOp::getFlops() { return 0; }
int64_t RecvOp::getFlops() { return 0; }
int64_t AxisIndexOp::getFlops() { return 0; }

//===----------------------------------------------------------------------===//
// CollectiveOpInterface
//===----------------------------------------------------------------------===//

double mlir::titan::getCollectiveBytesSentPerRank(Operation *op) {
  auto collective = cast<CollectiveOpInterface>(op);
  // The local tensor a rank contributes (a receiver sends nothing).
  Type local = op->getNumOperands() ? op->getOperand(0).getType()
                                    : op->getResult(0).getType();
  double bytes = double(getStaticNumElements(local)) *
                 double(getElementByteWidth(getElementTypeOrSelf(local)));
  return getBytesSentPerRank(collective.getCollectiveKind(),
                             collective.getGroupSize(), bytes);
}

CollectiveKind AllGatherOp::getCollectiveKind() {
  return CollectiveKind::AllGather;
}
CollectiveKind ReduceScatterOp::getCollectiveKind() {
  return CollectiveKind::ReduceScatter;
}
CollectiveKind AllReduceOp::getCollectiveKind() {
  return CollectiveKind::AllReduce;
}
CollectiveKind AllToAllOp::getCollectiveKind() {
  return CollectiveKind::AllToAll;
}
CollectiveKind BroadcastOp::getCollectiveKind() {
  return CollectiveKind::Broadcast;
}
CollectiveKind SendOp::getCollectiveKind() { return CollectiveKind::Send; }
CollectiveKind RecvOp::getCollectiveKind() { return CollectiveKind::Recv; }

std::string AllGatherOp::getSummary() {
  return ("dim " + Twine(getGatherDim())).str();
}
std::string ReduceScatterOp::getSummary() {
  return ("dim " + Twine(getScatterDim()) + " " +
          stringifyReduce(getReduce().getValue()))
      .str();
}
std::string AllReduceOp::getSummary() {
  return stringifyReduce(getReduce().getValue()).str();
}
std::string AllToAllOp::getSummary() {
  return ("dim " + Twine(getSplitDim()) + "->" + Twine(getConcatDim())).str();
}
std::string BroadcastOp::getSummary() {
  return ("root " + Twine(getRoot())).str();
}
std::string SendOp::getSummary() { return ("peer " + Twine(getPeer())).str(); }
std::string RecvOp::getSummary() { return ("peer " + Twine(getPeer())).str(); }

LogicalResult WaitOp::verify() {
  if (!isa_and_nonnull<CollectiveOpInterface>(getInput().getDefiningOp()))
    return emitOpError() << "waits for the result of a collective";
  return success();
}
