//===- AtenSupport.h - what the aten op conversions share -------*- C++ -*-===//
//
// The emitter and the input, broadcasting and promotion helpers that the
// conversions of AtenOps.cpp and AtenMathOps.cpp share.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_LIB_IMPORT_ATENSUPPORT_H
#define TITAN_LIB_IMPORT_ATENSUPPORT_H

#include "ImporterImpl.h"

#include "titan/Dialect/TensorBuilder.h"

#include "llvm/ADT/StringMap.h"

namespace mlir::titan::import {

using Node = torch::jit::Node;
using Outputs = llvm::Expected<std::vector<ImportedValue>>;

/// One output value.
inline Outputs single(ImportedValue value) {
  return std::vector<ImportedValue>{std::move(value)};
}
inline Outputs single(Value value) {
  return single(ImportedValue::ofTensor(value));
}

/// Builds titan ops at the importer's current location.
class Emitter : public TensorBuilder {
public:
  explicit Emitter(GraphImporter &importer)
      : TensorBuilder(importer.getBuilder(), importer.getLoc()),
        importer(importer), builder(importer.getBuilder()),
        loc(importer.getLoc()), context(importer.getContext()) {}

  Type f64() { return Float64Type::get(&context); }

  GraphImporter &importer;
  OpBuilder &builder;
  Location loc;
  MLIRContext &context;
};

/// What titan computes on integer tensors (the error refusing the rest).
inline constexpr const char *integerTensorArithmetic =
    "on integer tensors titan computes add, sub, mul, maximum, minimum, "
    "clamp, floor and truncating division, remainder and true division (in "
    "float32); cast the tensor to a float type first";

/// Where a tensor of `shape` with the valid prefix `prefix` is meaningful:
/// an i1 tensor of `shape`, true at positions below the count along its dim.
Value validMask(TensorBuilder &tb, const ValidPrefix &prefix,
                ArrayRef<int64_t> shape);

/// Normalizes a possibly negative dimension of a rank-`rank` tensor.
llvm::Expected<int64_t> normalizeDim(int64_t dim, int64_t rank);

/// The shape of a real or complex tensor value.
llvm::Expected<ArrayRef<int64_t>> shapeOf(const ImportedValue &value);

/// The shape of input 0 of `node` (a real or complex tensor) and the
/// normalized dimension given by input `dimIndex`; `extraRank` is added to
/// the rank the dim must fit (unsqueeze inserts a dim).
struct TensorDim {
  ArrayRef<int64_t> shape;
  int64_t dim;
};
llvm::Expected<TensorDim> tensorAndDim(GraphImporter &importer, Node *node,
                                       size_t dimIndex, int64_t extraRank = 0);

/// PyTorch's promotion of two tensor element types: a float wins over an
/// integer, the wider integer (bool < i32 < i64) over a narrower one.
Type promote(Type a, Type b, MLIRContext &context);

/// The broadcast shape of two shapes, or an error.
llvm::Expected<SmallVector<int64_t>> broadcastShape(ArrayRef<int64_t> a,
                                                    ArrayRef<int64_t> b);

/// Brings two tensors to one shape and element type.
llvm::Error unify(Emitter &emit, Value &lhs, Value &rhs);

/// Input 0 of `node`, a float tensor; an integer tensor is refused with
/// `integerError` (by default: titan's integer tensor arithmetic).
llvm::Expected<Value>
floatTensorInput(GraphImporter &importer, Node *node,
                 const llvm::Twine &integerError = integerTensorArithmetic);

/// Input `index` of `node` as a floating-point tensor: integer and boolean
/// tensors are converted to float32, as torch's floating-point functions
/// promote them.
llvm::Expected<Value> promotedFloatInput(GraphImporter &importer, Node *node,
                                         size_t index = 0);

/// Inputs `first`.. of `node` (tensors or numbers) as tensors of one shape
/// and floating-point type.
llvm::Expected<SmallVector<Value>> unifiedFloatOperands(GraphImporter &importer,
                                                        Node *node,
                                                        size_t first,
                                                        size_t count);

/// An error with `message` when any of a converter's `inputs` failed (their
/// own errors consumed), else success:
///   if (llvm::Error error = requireAll("... needs ...", x, dim))
///     return std::move(error);
template <typename... Ts>
llvm::Error requireAll(const llvm::Twine &message,
                       llvm::Expected<Ts> &...inputs) {
  if ((static_cast<bool>(inputs) && ...))
    return llvm::Error::success();
  (llvm::consumeError(inputs.takeError()), ...);
  return makeError(message);
}

/// The optional dtype argument of a creation or reduction op (`fallback`
/// when absent or None).
llvm::Expected<Type> optionalDtype(GraphImporter &importer, Node *node,
                                   Type fallback);

/// `value` as C's %g prints it, for messages (`0`, `-1.5`, `1e+06`).
std::string numberText(double value);

/// The number input `name` of `node`, or `fallback` when it is absent or
/// None.
double numberOr(GraphImporter &importer, Node *node, StringRef name,
                double fallback);

/// The integer input `name` of `node`, or `fallback` when it is absent or
/// None.
inline int64_t intOr(GraphImporter &importer, Node *node, StringRef name,
                     int64_t fallback) {
  const ImportedValue *value = importer.namedInput(node, name);
  return value && value->kind == ImportedValue::Kind::Int ? value->intValue
                                                          : fallback;
}

/// The boolean input `name` of `node`, or `fallback` when it is absent or
/// None.
inline bool flagOr(GraphImporter &importer, Node *node, StringRef name,
                   bool fallback) {
  return numberOr(importer, node, name, fallback ? 1 : 0) != 0;
}

/// exp(x) - 1, accurate near 0.
Value expm1(Emitter &emit, Value x);

/// |x| as max(x, -x) (of integers too).
Value absolute(Emitter &emit, Value x);

/// log(sigmoid(x)) as min(x, 0) - log(1 + exp(-|x|)), finite for inputs of
/// either sign.
Value logSigmoid(Emitter &emit, Value x);

/// The vector norm of order `order` of `x` over `dims`: 2 the Euclidean
/// norm; 1 sum |x|; inf and -inf the largest and smallest |x|; 0 the count
/// of nonzeros; any other p (sum |x|^p)^(1/p). A zero vector's norm is 0
/// with gradient 0, as torch's.
llvm::Expected<Value> vectorNorm(Emitter &emit, Value x, double order,
                                 ArrayRef<int64_t> dims, bool keepdim);

/// The p-norm of `a` - `b` + `eps` (tensors of one shape) along the last
/// dim: PyTorch's pairwise_distance.
llvm::Expected<Value> pairwiseDistance(Emitter &emit, Value a, Value b,
                                       double p, double eps, bool keepdim);

/// The largest dim a scatter or gather of single elements reads or writes
/// through a one-hot comparison (oneHotAlong) instead of a lookup of the
/// tensor viewed as a column: a mixture of experts' gates over its
/// experts. The comparison costs a select per index and position of the
/// dim, but is elementwise along every other dim (a batch sharded by FSDP
/// stays sharded), where the column's linear positions mix the dims. Also
/// the longest dim sorted (sortAlong compares every pair of its elements).
inline constexpr int64_t kMaxOneHotDim = 256;

/// `table` gathered along `dim` at `index` (of table's shape but for
/// `dim`; positions in [0, size) along it): `out[..., i, ...] =
/// table[..., index[..., i, ...], ...]`, as the sum over the positions of
/// the dim of the one-hot comparison's selects (elementwise along the other
/// dims; differentiable in `table`).
Value gatherOneHot(Emitter &emit, Value table, int64_t dim, Value index);

/// floor(x) of a float tensor (titan.rounded_div by 1; no gradient, as
/// rounding).
Value floorOf(Emitter &emit, Value x);

/// atan2(y, x) of two float tensors of one type: the angle of (x, y) in
/// [-pi, pi]; 0 at the origin (torch.atan2; lib/Import/AtenMathOps.cpp).
Value atan2Of(Emitter &emit, Value y, Value x);

/// sqrt(a^2 + b^2) of two float tensors of one type without overflow: 0
/// where both are 0 (torch.hypot, and |z| of a complex z).
Value hypotOf(Emitter &emit, Value a, Value b);

/// a and b of two boolean (i1) tensors of one shape: b where a holds,
/// else a.
inline Value both(Emitter &emit, Value a, Value b) {
  return emit.select(a, b, a);
}

/// Where a whole-valued float tensor is even (floor(x / 2) == x / 2).
Value isEven(Emitter &emit, Value whole);

/// x rounded to the nearest whole number, half to even, as std::nearbyint
/// (torch.round): the floor, plus one where the rest is over a half or is a
/// half and the floor odd. No gradient, as rounding.
Value roundHalfEven(Emitter &emit, Value x);

/// aten::gather of `x` along normalized `dim` at `index` (of x's rank):
/// `out[..., i, ...] = x[..., index[..., i, ...], ...]`; integers are
/// gathered in f64, exact below 2^53 (see convertGather).
Outputs gatherAlong(GraphImporter &importer, Value x, int64_t dim, Value index);

/// `x` sorted along `dim` (of at most kMaxOneHotDim positions), ascending
/// or `descending`, stably (see convertSort): the values (with
/// `withValues`; else null) and the int64 positions they come from.
std::pair<Value, Value> sortAlong(Emitter &emit, Value x, int64_t dim,
                                  bool descending, bool withValues);

/// cumsum of `x` along normalized `axis` at run time (fairseq's and XGLM's
/// positions, `cumsum(tokens.ne(pad))`): running sums of x viewed as [rows,
/// n], in float32 for integers (exact below 2^24) or in x's float type;
/// the result in `element`.
Outputs cumsumAtRunTime(Emitter &emit, Value x, int64_t axis, Type element);

/// The type that holds each element of `element` exactly for comparisons
/// and sums: `element` itself if floating-point, else f64 (exact below
/// 2^53).
Type exactFloatType(Emitter &emit, Type element);

//===----------------------------------------------------------------------===//
// Windows over the spatial dims of [N, C, S..] (convolution, pooling)
//===----------------------------------------------------------------------===//

/// Input `name` of `node` as one number per spatial dim (`spatial` of
/// them); a single number stands for all; an empty list (PyTorch's default
/// stride) or None gives `fallback`. A malformed one is an error naming
/// `what` (e.g. "a convolution's") and `name`.
llvm::Expected<SmallVector<int64_t>>
perSpatialDim(GraphImporter &importer, Node *node, StringRef name,
              int64_t spatial, ArrayRef<int64_t> fallback, StringRef what);

/// `x` [N, C, S..] with `low[i]` positions of `fill` before and `high[i]`
/// after spatial dim i (concats, which the training step differentiates).
Value padSpatial(Emitter &emit, Value x, ArrayRef<int64_t> low,
                 ArrayRef<int64_t> high, double fill);

/// The positions tap `t` (row-major over `kernel`) of a window reads for
/// every output position of padded `x` [N, C, S..]: [N, C, O..].
Value windowTap(Emitter &emit, Value x, int64_t t, ArrayRef<int64_t> kernel,
                ArrayRef<int64_t> dilation, ArrayRef<int64_t> stride,
                ArrayRef<int64_t> outSizes);

/// `x` with `stride - 1` zeros between its elements along `dim` (n
/// elements become (n - 1) stride + 1): a transposed convolution's input,
/// fold's windows put back at their stride.
Value spreadAlong(Emitter &emit, Value x, int64_t dim, int64_t stride);

/// `x` with a leading batch dim of one (an unbatched [C, S..] input), and
/// `x` without it again.
Value addBatchOfOne(Emitter &emit, Value x);
Value dropBatchOfOne(Emitter &emit, Value x);

//===----------------------------------------------------------------------===//
// Linear maps along one dim (Fourier transforms, interpolation)
//===----------------------------------------------------------------------===//

/// `x` with dim `dim` moved last (`toLast`), or its last dim moved back to
/// `dim`.
Value moveDim(Emitter &emit, Value x, int64_t dim, bool toLast);

/// `x` [.., rows] times `matrix` [rows, columns] along its last dim.
Value matmulLast(Emitter &emit, Value x, Value matrix);

/// Adds the conversions of AtenMathOps.cpp (inverse trigonometric and
/// hyperbolic functions, shrinkage activations, ...) to `table`.
void addMathConversions(llvm::StringMap<Conversion> &table);

/// Adds the conversions of AtenPoolingOps.cpp (avg, max and adaptive
/// average pooling) to `table`.
void addPoolingConversions(llvm::StringMap<Conversion> &table);

/// Adds the conversions of AtenFftOps.cpp (torch.fft's transforms as
/// matmuls) to `table`.
void addFftConversions(llvm::StringMap<Conversion> &table);

/// Adds the conversions of AtenInterpolateOps.cpp (F.interpolate's
/// nearest, linear and cubic modes) to `table`.
void addInterpolateConversions(llvm::StringMap<Conversion> &table);

/// Adds the conversions of AtenLossOps.cpp (cross-entropy, negative
/// log-likelihood, binary cross-entropy, the elementwise regression losses
/// and KL divergence) to `table`.
void addLossConversions(llvm::StringMap<Conversion> &table);

/// Adds the conversions of AtenRecurrentOps.cpp (nn.LSTM, nn.GRU and
/// nn.RNN unrolled over the sequence) to `table`.
void addRecurrentConversions(llvm::StringMap<Conversion> &table);

/// Adds the conversions of AtenProductOps.cpp (tensordot, bilinear, kron,
/// trace, and the matrices built from vectors: cartesian_prod, block_diag,
/// diag_embed, vander, combinations) to `table`.
void addProductConversions(llvm::StringMap<Conversion> &table);

/// Adds the conversions of AtenOrderOps.cpp (median, kthvalue, quantile,
/// cummax / cummin, bucketize / searchsorted, aminmax) to `table`.
void addOrderConversions(llvm::StringMap<Conversion> &table);

/// Adds the conversions of AtenDistanceOps.cpp (pairwise_distance, cdist)
/// to `table`.
void addDistanceConversions(llvm::StringMap<Conversion> &table);

/// The smallest and largest values of an integer tensor.
struct IdRange {
  int64_t smallest;
  int64_t largest;
};

/// The smallest and largest values of integer tensor `v` where the import
/// proves both the values and that elements hold them: positions of
/// torch.arange (titan.iota), integer constants, and what reshapes,
/// broadcasts, transposes, slices, widening integer casts and adding or
/// subtracting a constant make of them (learned position ids: `arange(T)`,
/// OPT's `arange(T) + 2`), and the remainder by a positive constant of
/// anything.
std::optional<IdRange> provenRange(Value v, int depth = 0);

/// Adds the conversions of AtenCountOps.cpp (bincount, histc) to `table`.
void addCountConversions(llvm::StringMap<Conversion> &table);

/// Adds the conversions of AtenRandomOps.cpp (torch.rand, randn, normal,
/// bernoulli, exponential_, randint, randperm: titan.random_uniform's
/// numbers) to `table`.
void addRandomConversions(llvm::StringMap<Conversion> &table);

/// Adds the conversions of AtenStatisticsOps.cpp (cov, corrcoef,
/// trapezoid, cumulative_trapezoid, dist, renorm) to `table`.
void addStatisticsConversions(llvm::StringMap<Conversion> &table);

/// Adds the conversions of AtenGridSampleOps.cpp (grid_sampler) to
/// `table`.
void addGridSampleConversions(llvm::StringMap<Conversion> &table);

/// Adds the conversions of AtenSpecialOps.cpp (erfc, erfinv, lgamma,
/// mvlgamma, digamma, ndtr, ndtri, entr, ...) to `table`.
void addSpecialConversions(llvm::StringMap<Conversion> &table);

} // namespace mlir::titan::import

#endif // TITAN_LIB_IMPORT_ATENSUPPORT_H
