//===- AtenCountOps.cpp - bincount and histc ------------------------------===//
//
// Counting ops as scatter-adds into bins (titan.embedding_grad, whose
// gradient is the lookup of the bins' cotangent): torch.bincount of ids
// whose range the import proves, or up to minlength behind a run-time
// check, and torch.histc's equal-width bins between a given min and max
// (torchtitan's tokens per expert, `histc(ids, bins=E, min=0, max=E)`).
//
//===----------------------------------------------------------------------===//

#include "AtenSupport.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::titan;
using namespace mlir::titan::import;
using torch::jit::Node;

namespace {

/// The float type that counts of `n` elements are exact in: f32 up to
/// 2^24, else f64.
Type countingType(Emitter &emit, int64_t n) {
  return n <= (int64_t(1) << 24) ? Type(emit.builder.getF32Type()) : emit.f64();
}

/// `values` ([N, 1]) summed into `bins` bins at `bin` ([N], each in
/// [0, bins)): [bins], of values' type.
Value sumIntoBins(Emitter &emit, Value bin, Value values, int64_t bins) {
  auto type =
      RankedTensorType::get({bins, 1}, tensorType(values).getElementType());
  return emit.reshape(
      EmbeddingGradOp::create(emit.builder, emit.loc, type, bin, values),
      {bins});
}

/// aten::bincount(ids, weights=None, minlength=0): how many times each id
/// of the 1-d integer tensor occurs (int64), or the sum of its weights
/// (float32 / float64 weights keep their type, others sum in float64).
/// PyTorch's length is max(ids) + 1, at least minlength: titan takes it
/// from the ids' proven range (positions, constants), else minlength, with
/// a run-time check that the ids lie below it.
Outputs convertBincount(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> ids = importer.tensorInput(node, 0);
  if (!ids)
    return ids.takeError();
  RankedTensorType type = tensorType(*ids);
  Type element = type.getElementType();
  if (type.getRank() != 1 || !isa<IntegerType>(element) || element.isInteger(1))
    return makeError("bincount needs a 1-d tensor of integer ids");
  int64_t n = type.getDimSize(0);
  int64_t minlength = intOr(importer, node, "minlength", 0);
  if (minlength < 0)
    return makeError(
        llvm::formatv("bincount's minlength must be >= 0, not {0}", minlength));
  Emitter emit(importer);
  Value bin = emit.cast(*ids, emit.builder.getI64Type());
  int64_t length = minlength;
  if (std::optional<IdRange> range = provenRange(*ids)) {
    if (range->smallest < 0)
      return makeError(llvm::formatv(
          "bincount of the id {0}: torch.bincount counts non-negative ids only",
          range->smallest));
    length = std::max(length, range->largest + 1);
  } else if (minlength == 0) {
    return makeError(
        "bincount's length is the largest id + 1, which depends on the data "
        "here; pass minlength (e.g. the number of experts), which titan "
        "takes as the length, checking the ids against it as it runs");
  } else {
    bin = CheckIdsOp::create(
        emit.builder, emit.loc, bin, emit.builder.getI64IntegerAttr(length),
        emit.builder.getStringAttr(
            llvm::formatv("the counts of torch.bincount(minlength={0})", length)
                .str()));
  }
  const ImportedValue *weights = importer.namedInput(node, "weights");
  if (!weights || weights->isNone()) {
    Type counting = countingType(emit, n);
    Value ones = emit.splat(RankedTensorType::get({n, 1}, counting), 1.0);
    return single(emit.cast(sumIntoBins(emit, bin, ones, length),
                            emit.builder.getI64Type()));
  }
  if (!weights->isTensor() ||
      tensorType(weights->tensor).getShape() != ArrayRef<int64_t>{n})
    return makeError(
        llvm::formatv("bincount's weights must be a 1-d tensor of the ids' "
                      "length {0}",
                      n));
  Type weightType = tensorType(weights->tensor).getElementType();
  Type summed =
      weightType.isF32() || weightType.isF64() ? weightType : emit.f64();
  Value values = emit.reshape(emit.cast(weights->tensor, summed), {n, 1});
  return single(sumIntoBins(emit, bin, values, length));
}

/// aten::histc(x, bins=100, min=0, max=0): a histogram of x's elements in
/// `bins` equal bins between min and max, of x's type (integers, which
/// PyTorch bins on GPUs only, are binned in f64). As PyTorch's kernel,
/// an element x in [min, max] falls in bin trunc((x - min) / (max - min) *
/// bins) computed in x's type (max in the last bin); the others and NaNs
/// are not counted. min == max (the data's own range) is refused.
Outputs convertHistc(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  llvm::Expected<int64_t> bins = importer.intInput(node, 1);
  llvm::Expected<double> low = importer.numberInput(node, 2);
  llvm::Expected<double> high = importer.numberInput(node, 3);
  if (llvm::Error error =
          requireAll("histc needs a tensor and constant bins, min and max", x,
                     bins, low, high))
    return std::move(error);
  RankedTensorType type = tensorType(*x);
  if (type.getElementType().isInteger(1))
    return makeError("histc of a boolean tensor is not supported; cast it "
                     "to a number type first");
  if (*bins < 1)
    return makeError(llvm::formatv("histc needs bins >= 1, not {0}", *bins));
  if (*low == *high)
    return makeError(llvm::formatv(
        "histc with min == max ({0}) takes its range from the data; pass "
        "the min and max of the bins (e.g. min=0, max=num_experts)",
        numberText(*low)));
  if (*low > *high)
    return makeError(
        llvm::formatv("histc's max ({0}) must be larger than its min ({1})",
                      numberText(*high), numberText(*low)));
  Emitter emit(importer);
  Type element = type.getElementType();
  Value values = emit.reshape(emit.cast(*x, exactFloatType(emit, element)),
                              {type.getNumElements()});
  Value lowest = emit.splatLike(values, *low);
  Value highest = emit.splatLike(values, *high);
  // min <= x and x <= max (false for NaN).
  Value inside = both(emit, emit.compare("ge", values, lowest),
                      emit.compare("le", values, highest));
  // (x - min) / (max - min) * bins, the span rounded to x's type first.
  Value span = emit.binary<SubOp>(highest, lowest);
  Value position =
      emit.scale(emit.binary<DivOp>(emit.binary<SubOp>(values, lowest), span),
                 static_cast<double>(*bins));
  Value bin = emit.cast(
      emit.min(floorOf(emit, emit.select(inside, position,
                                         emit.splatLike(position, 0.0))),
               emit.splatLike(position, static_cast<double>(*bins - 1))),
      emit.builder.getI64Type());
  int64_t n = type.getNumElements();
  Type counting = countingType(emit, n);
  Value counts = sumIntoBins(
      emit, bin, emit.reshape(emit.cast(inside, counting), {n, 1}), *bins);
  return single(emit.cast(counts, element));
}

} // namespace

void mlir::titan::import::addCountConversions(
    llvm::StringMap<Conversion> &table) {
  table["aten::bincount"] = convertBincount;
  table["aten::histc"] = convertHistc;
}
