//===- TitanDialect.cpp - titan dialect -----------------------------------===//

#include "titan/Dialect/TitanDialect.h"
#include "titan/Dialect/ArgRole.h"
#include "titan/Dialect/PipelineMesh.h"

#include "OpVerification.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::titan;

#include "titan/TitanDialect.cpp.inc"
#include "titan/TitanInterfaces.cpp.inc"

void TitanDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "titan/TitanOps.cpp.inc"
      >();
}

int64_t mlir::titan::getElementByteWidth(Type type) {
  if (auto complex = dyn_cast<ComplexType>(type))
    return 2 * getElementByteWidth(complex.getElementType());
  return std::max<int64_t>(1, (type.getIntOrFloatBitWidth() + 7) / 8);
}

bool mlir::titan::isExactFloatWidening(Type from, Type to) {
  auto source = dyn_cast<FloatType>(getElementTypeOrSelf(from));
  auto target = dyn_cast<FloatType>(getElementTypeOrSelf(to));
  return source && target && source != target &&
         source.getFPMantissaWidth() <= target.getFPMantissaWidth() &&
         source.getWidth() < target.getWidth();
}

int64_t mlir::titan::getStaticNumElements(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() ? tensor.getNumElements() : 0;
}

int64_t mlir::titan::getStaticByteSize(Type type) {
  return getStaticNumElements(type) *
         getElementByteWidth(getElementTypeOrSelf(type));
}

int64_t mlir::titan::defaultBytesAccessed(Operation *op) {
  // A slice reads only the elements it keeps.
  ValueRange reads = isa<SliceOp>(op) ? ValueRange(op->getResults())
                                      : ValueRange(op->getOperands());
  int64_t bytes = 0;
  for (Value value : llvm::concat<Value>(reads, op->getResults())) {
    if (int64_t elements = getStaticNumElements(value.getType()))
      bytes +=
          elements * getElementByteWidth(getElementTypeOrSelf(value.getType()));
  }
  return bytes;
}

LogicalResult mlir::titan::verifyDimInRange(Operation *op, StringRef what,
                                            int64_t dim, int64_t rank) {
  if (dim >= 0 && dim < rank)
    return success();
  return op->emitOpError() << what << " " << dim
                           << " is out of range for a rank-" << rank
                           << " tensor";
}

//===----------------------------------------------------------------------===//
// Verification of the discardable `titan.placements` attribute.
//===----------------------------------------------------------------------===//

/// Verifies `attr` as the placements of a value of type `type`.
static LogicalResult
verifyValuePlacements(function_ref<InFlightDiagnostic()> emitError,
                      Operation *scope, Attribute attr, Type type) {
  auto placements = dyn_cast<PlacementsAttr>(attr);
  if (!placements)
    return emitError() << "expected '" << TitanDialect::kPlacementsAttrName
                       << "' to be a #titan.placements attribute, got " << attr;
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return emitError() << "placements can only be attached to ranked "
                          "tensors, got "
                       << type;
  MeshOp mesh = MeshOp::lookup(scope, placements.getMesh());
  if (!mesh)
    return emitError() << "placements refer to unknown mesh "
                       << placements.getMesh();
  return placements.verifyFor(emitError, mesh, tensor.getRank());
}

/// Verifies the attributes of the executable program (titan-fuse-kernels,
/// titan-lower-kernels, titan-plan-memory).
static LogicalResult verifyExecutableAttribute(Operation *op,
                                               NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  auto isBufferArray = [](Attribute attr) {
    auto array = dyn_cast<ArrayAttr>(attr);
    return array && llvm::all_of(array, llvm::IsaPred<BufferAttr>);
  };
  if (name == TitanDialect::kRecomputeAttrName) {
    if (!isa<UnitAttr>(value))
      return op->emitError() << "'" << name << "' must be a unit attribute";
    return success();
  }
  if (name == TitanDialect::kMicrobatchAttrName) {
    auto microbatch = dyn_cast<IntegerAttr>(value);
    if (!microbatch || microbatch.getInt() < 0)
      return op->emitError()
             << "'" << name << "' must be a non-negative integer";
    return success();
  }
  if (name == TitanDialect::kAsyncAttrName) {
    if (!isa<UnitAttr>(value))
      return op->emitError() << "'" << name << "' must be a unit attribute";
    if (!isa<CollectiveOpInterface>(op) || op->getNumResults() != 1)
      return op->emitError()
             << "'" << name << "' belongs on a collective with a result";
    if (!op->getResult(0).hasOneUse() ||
        !isa<WaitOp>(*op->getResult(0).getUsers().begin()))
      return op->emitError() << "the result of an asynchronous collective ('"
                             << name << "') must have one use, a titan.wait";
    return success();
  }
  if (name == TitanDialect::kKernelAttrName) {
    if (!isa<UnitAttr>(value) || !isa<FunctionOpInterface>(op))
      return op->emitError()
             << "'" << name << "' must be a unit attribute on a function";
    return success();
  }
  if (name == TitanDialect::kInPlaceAttrName ||
      name == TitanDialect::kPaddingFlopsAttrName) {
    if (!isa<DenseI64ArrayAttr>(value) || !isa<FunctionOpInterface>(op))
      return op->emitError()
             << "'" << name << "' must be an array<i64> on a function";
    return success();
  }
  if (name == TitanDialect::kMemoryPlanAttrName ||
      name == TitanDialect::kRecomputePlanAttrName ||
      name == kPipelineAttrName) {
    if (!isa<DictionaryAttr>(value) || !isa<FunctionOpInterface>(op))
      return op->emitError()
             << "'" << name << "' must be a dictionary on a function";
    return success();
  }
  if (name == TitanDialect::kScratchAttrName) {
    if (!isBufferArray(value))
      return op->emitError()
             << "'" << name << "' must be an array of #titan.buffer";
    return success();
  }
  if (name == TitanDialect::kStateDictAttrName) {
    auto names = dyn_cast<DictionaryAttr>(value);
    if (!names || !isa<ModuleOp>(op) ||
        !llvm::all_of(names, [](NamedAttribute entry) {
          auto text = dyn_cast<StringAttr>(entry.getValue());
          return text && !text.getValue().empty();
        }))
      return op->emitError() << "'" << name
                             << "' must be a dictionary of non-empty strings "
                                "on the module";
    return success();
  }
  if (name == TitanDialect::kBuffersAttrName) {
    if (!isBufferArray(value) ||
        cast<ArrayAttr>(value).size() != op->getNumResults())
      return op->emitError() << "'" << name
                             << "' must be an array with one #titan.buffer "
                                "per result";
    return success();
  }
  return op->emitError() << "unknown titan attribute '" << name << "'";
}

LogicalResult TitanDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  // Placements of the results, or of the operands an op needs.
  bool ofOperands = attr.getName() == kOperandPlacementsAttrName;
  if (attr.getName() != kPlacementsAttrName && !ofOperands)
    return verifyExecutableAttribute(op, attr);
  StringRef what = ofOperands ? "operand" : "result";
  ValueRange values =
      ofOperands ? ValueRange(op->getOperands()) : ValueRange(op->getResults());
  auto array = dyn_cast<ArrayAttr>(attr.getValue());
  if (!array)
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' must be an array with one "
                              "#titan.placements per "
                           << what;
  if (array.size() != values.size())
    return op->emitError() << "'" << attr.getName().getValue() << "' has "
                           << array.size() << " entries but the op has "
                           << values.size() << " " << what << "s";
  for (auto [index, entry] : llvm::enumerate(array.getValue())) {
    auto emitError = [&, index = index]() {
      return op->emitError() << what << " #" << index << ": ";
    };
    if (failed(verifyValuePlacements(emitError, op, entry,
                                     values[index].getType())))
      return failure();
  }
  return success();
}

/// Shared check of the titan attributes of function arguments and results:
/// `titan.placements`, `titan.name` (a non-empty string) and, on arguments,
/// `titan.role` (param, state, buffer or input), `titan.id_range` (lo < hi,
/// on integers), `titan.diagonals` (one value per diagonal of a square
/// tensor); `titan.sequence_order` (a dim and a permutation of its
/// equal chunks); `titan.global_shape` (one size per dim).
static LogicalResult verifyFunctionValueAttr(Operation *op, unsigned index,
                                             Type type, NamedAttribute attr,
                                             StringRef what) {
  auto emitError = [&]() {
    return op->emitError() << what << " #" << index << ": ";
  };
  StringRef name = attr.getName().getValue();
  if (name == TitanDialect::kPlacementsAttrName)
    return verifyValuePlacements(emitError, op, attr.getValue(), type);
  auto text = dyn_cast<StringAttr>(attr.getValue());
  if (name == TitanDialect::kNameAttrName) {
    if (!text || text.getValue().empty())
      return emitError() << "'" << name << "' must be a non-empty string";
    return success();
  }
  if (name == TitanDialect::kRoleAttrName && what == "argument") {
    if (!text || !symbolizeArgRole(text.getValue()))
      return emitError()
             << "'" << name
             << "' must be \"param\", \"state\", \"buffer\" or \"input\"";
    return success();
  }
  if (name == TitanDialect::kBufferAttrName) {
    if (!isa<BufferAttr>(attr.getValue()))
      return emitError() << "'" << name << "' must be a #titan.buffer";
    return success();
  }
  if (name == TitanDialect::kIdRangeAttrName && what == "argument") {
    auto range = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!range || (range.size() != 2 && range.size() != 3) ||
        range[0] >= range[1])
      return emitError() << "'" << name
                         << "' must be array<i64: lo, hi> or array<i64: lo, "
                            "hi, ignore> with lo < hi";
    if (!tensor || !tensor.getElementType().isSignlessInteger())
      return emitError() << "'" << name << "' is on " << type
                         << ", not a tensor of integers";
    return success();
  }
  if (name == TitanDialect::kDiagonalsAttrName && what == "argument") {
    auto diagonals = dyn_cast<DenseElementsAttr>(attr.getValue());
    auto tensor = dyn_cast<RankedTensorType>(type);
    // One element (of any rank): its one diagonal.
    if (tensor && tensor.hasStaticShape() && tensor.getNumElements() == 1) {
      auto expected = RankedTensorType::get({1}, tensor.getElementType());
      if (!diagonals || diagonals.getType() != expected)
        return emitError() << "'" << name << "' must be a dense " << expected
                           << " (the one value of " << type << ")";
      return success();
    }
    if (!tensor || tensor.getRank() < 2 || !tensor.hasStaticShape() ||
        tensor.getDimSize(tensor.getRank() - 1) !=
            tensor.getDimSize(tensor.getRank() - 2) ||
        llvm::any_of(tensor.getShape().drop_back(2),
                     [](int64_t size) { return size != 1; }))
      return emitError() << "'" << name << "' is on " << type
                         << ", not a tensor [1, ..., 1, n, n]";
    int64_t n = tensor.getShape().back();
    auto expected = RankedTensorType::get({2 * n - 1}, tensor.getElementType());
    if (!diagonals || diagonals.getType() != expected)
      return emitError() << "'" << name << "' must be a dense " << expected
                         << " (one value per diagonal of " << type << ")";
    return success();
  }
  if (name == TitanDialect::kGlobalShapeAttrName) {
    auto shape = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!shape || !tensor || shape.size() != tensor.getRank() ||
        llvm::any_of(shape.asArrayRef(), [](int64_t size) { return size < 0; }))
      return emitError() << "'" << name
                         << "' must be array<i64> with one size >= 0 per dim "
                            "of a ranked tensor";
    return success();
  }
  if (name == TitanDialect::kSequenceOrderAttrName) {
    auto order = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!order || order.size() < 3 || !tensor)
      return emitError() << "'" << name
                         << "' must be array<i64: dim, chunk, chunk, ...> "
                            "(at least two chunks) on a ranked tensor";
    int64_t dim = order[0];
    ArrayRef<int64_t> chunks = order.asArrayRef().drop_front();
    if (dim < 0 || dim >= tensor.getRank())
      return emitError() << "'" << name << "' names dim " << dim
                         << " of a rank-" << tensor.getRank() << " tensor";
    SmallVector<int64_t> sorted(chunks);
    llvm::sort(sorted);
    for (auto [index, chunk] : llvm::enumerate(sorted))
      if (chunk != static_cast<int64_t>(index))
        return emitError() << "'" << name
                           << "' chunks must be a permutation of 0.."
                           << chunks.size() - 1;
    if (tensor.isDynamicDim(dim) ||
        tensor.getDimSize(dim) % static_cast<int64_t>(chunks.size()) != 0)
      return emitError() << "'" << name << "': dim " << dim << " of " << type
                         << " does not split into " << chunks.size()
                         << " equal chunks";
    return success();
  }
  return op->emitError() << "unknown titan " << what << " attribute '" << name
                         << "'";
}

LogicalResult TitanDialect::verifyRegionArgAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned argIndex,
                                                     NamedAttribute attr) {
  Region &region = op->getRegion(regionIndex);
  if (region.empty() || argIndex >= region.getNumArguments())
    return op->emitError() << "attribute on a missing argument";
  return verifyFunctionValueAttr(
      op, argIndex, region.getArgument(argIndex).getType(), attr, "argument");
}

LogicalResult TitanDialect::verifyRegionResultAttribute(Operation *op,
                                                        unsigned regionIndex,
                                                        unsigned resultIndex,
                                                        NamedAttribute attr) {
  auto function = dyn_cast<FunctionOpInterface>(op);
  if (!function || resultIndex >= function.getNumResults())
    return op->emitError() << "result attributes are only valid on functions";
  return verifyFunctionValueAttr(
      op, resultIndex, function.getResultTypes()[resultIndex], attr, "result");
}
