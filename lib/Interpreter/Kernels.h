//===- Kernels.h - host kernels of the reference interpreter ----*- C++ -*-===//
//
// One kernel per op family, on `TensorValue`s, free of MLIR ops: the
// interpreter reads the attributes and calls these. Shapes are assumed to be
// the ones the op verifiers guarantee; data-dependent conditions (ids out of
// range, ...) are reported as errors. Floats compute in double and round
// once to the result's element type; reductions, matmul, softmax and
// normalization statistics accumulate in double.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_LIB_INTERPRETER_KERNELS_H
#define TITAN_LIB_INTERPRETER_KERNELS_H

#include "titan/Interpreter/TensorValue.h"
#include "titan/Placement/PlacementAlgebra.h"

#include "llvm/Support/Error.h"

#include <optional>

namespace mlir::titan::kernels {

/// Row-major strides of `shape`.
llvm::SmallVector<int64_t> getStrides(llvm::ArrayRef<int64_t> shape);

/// Calls `fn(i, offset)` for every element `i` (row-major) of `shape`, where
/// `offset` is the element's index dotted with `strides`.
template <typename Fn>
void walkStrided(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> strides,
                 Fn fn) {
  int64_t n = 1;
  for (int64_t size : shape)
    n *= size;
  if (n == 0)
    return;
  if (shape.empty()) {
    fn(int64_t(0), int64_t(0));
    return;
  }
  int64_t rank = shape.size();
  int64_t inner = shape.back(), innerStride = strides.back();
  llvm::SmallVector<int64_t> index(rank, 0);
  int64_t offset = 0;
  for (int64_t i = 0; i < n; i += inner) {
    for (int64_t j = 0; j < inner; ++j)
      fn(i + j, offset + j * innerStride);
    for (int64_t d = rank - 2; d >= 0; --d) {
      offset += strides[d];
      if (++index[d] < shape[d])
        break;
      offset -= strides[d] * shape[d];
      index[d] = 0;
    }
  }
}

/// Applies `fn(double) -> double` to every element of a float tensor; the
/// result has the input's kind and shape.
template <typename Fn> TensorValue mapFloat(const TensorValue &input, Fn fn) {
  TensorValue result(input.getKind(), input.getShape());
  std::visit(
      [&](const auto &in) {
        using T = typename std::decay_t<decltype(in)>::value_type;
        if constexpr (std::is_floating_point_v<T>) {
          llvm::MutableArrayRef<T> out = result.getMutable<T>();
          for (size_t i = 0, e = in.size(); i < e; ++i)
            out[i] = static_cast<T>(fn(static_cast<double>(in[i])));
        }
      },
      input.getStorage());
  result.roundToKind();
  return result;
}

/// Applies `fn(double, double) -> double` to the elements of two float
/// tensors of one type.
template <typename Fn>
TensorValue zipFloat(const TensorValue &lhs, const TensorValue &rhs, Fn fn) {
  TensorValue result(lhs.getKind(), lhs.getShape());
  std::visit(
      [&](const auto &a) {
        using T = typename std::decay_t<decltype(a)>::value_type;
        if constexpr (std::is_floating_point_v<T>) {
          llvm::ArrayRef<T> b = rhs.get<T>();
          llvm::MutableArrayRef<T> out = result.getMutable<T>();
          for (size_t i = 0, e = a.size(); i < e; ++i)
            out[i] = static_cast<T>(
                fn(static_cast<double>(a[i]), static_cast<double>(b[i])));
        }
      },
      lhs.getStorage());
  result.roundToKind();
  return result;
}

/// Applies `fn(uint64_t, uint64_t) -> uint64_t` to the elements of two
/// integer tensors (i64 or i32) of one type: two's complement arithmetic,
/// which wraps as torch's integer tensors do (i32 results to 32 bits).
template <typename Fn>
TensorValue zipInteger(const TensorValue &lhs, const TensorValue &rhs, Fn fn) {
  TensorValue result(lhs.getKind(), lhs.getShape());
  llvm::ArrayRef<int64_t> a = lhs.get<int64_t>(), b = rhs.get<int64_t>();
  llvm::MutableArrayRef<int64_t> out = result.getMutable<int64_t>();
  bool narrow = lhs.getKind() == ElementType::I32;
  for (size_t i = 0, e = a.size(); i < e; ++i) {
    uint64_t value =
        fn(static_cast<uint64_t>(a[i]), static_cast<uint64_t>(b[i]));
    out[i] = narrow ? static_cast<int32_t>(static_cast<uint32_t>(value))
                    : static_cast<int64_t>(value);
  }
  return result;
}

/// The elements of any tensor as doubles.
std::vector<double> toDoubles(const TensorValue &input);

/// A tensor of `kind` and `shape` from doubles, converted as `cast` does.
TensorValue fromDoubles(ElementType kind, llvm::ArrayRef<int64_t> shape,
                        llvm::ArrayRef<double> values);

/// `titan.cast`: floats round to nearest even, floats to integers truncate
/// toward zero (saturating), i32 wraps, anything to i1 is `!= 0`.
TensorValue cast(const TensorValue &input, ElementType kind);

/// `titan.iota`: element = its index along `dim`.
TensorValue iota(ElementType kind, llvm::ArrayRef<int64_t> shape, int64_t dim);

/// Predicates of `titan.compare`.
enum class ComparePredicate { Eq, Ne, Lt, Le, Gt, Ge };

/// Parses "eq", "ne", "lt", "le", "gt" or "ge".
std::optional<ComparePredicate> parseComparePredicate(llvm::StringRef text);

/// `titan.compare`: an i1 tensor; NaN compares unequal to everything.
TensorValue compare(ComparePredicate predicate, const TensorValue &lhs,
                    const TensorValue &rhs);

/// `titan.select`: `cond ? onTrue : onFalse` per element.
TensorValue select(const TensorValue &cond, const TensorValue &onTrue,
                   const TensorValue &onFalse);

/// Reduction over `dims` (sorted, unique) of a float tensor: sum, mean (Avg),
/// max or min, accumulated in double.
TensorValue reduce(const TensorValue &input, llvm::ArrayRef<int64_t> dims,
                   bool keepdim, ReduceKind kind);

/// `titan.softmax` (or `titan.log_softmax` when `log`) along `dim`.
TensorValue softmax(const TensorValue &input, int64_t dim, bool log);

/// `titan.rms_norm` over the last dim.
TensorValue rmsNorm(const TensorValue &input, const TensorValue &weight,
                    double eps);

/// `titan.layer_norm` over the last dim (biased variance).
TensorValue layerNorm(const TensorValue &input, const TensorValue &weight,
                      const TensorValue &bias, double eps);

/// `titan.matmul` with BLAS dgemm: batched, optional transposes of the last
/// two dims, a rank-2 `rhs` shared by every batch, and an optional `addend`
/// of the result's shape added before the one rounding.
TensorValue matmul(const TensorValue &lhs, const TensorValue &rhs,
                   const TensorValue *addend, bool transposeLhs,
                   bool transposeRhs);

/// `titan.embedding`: rows of `table` [vocab, dim] picked by `ids`; fails on
/// an id outside [0, vocab).
llvm::Expected<TensorValue> embedding(const TensorValue &table,
                                      const TensorValue &ids);

/// `titan.random_uniform`: f32 numbers of the counter-based generator
/// (titan/Dialect/RandomUniform.h) at `counters`; `step` is a 0-d f32
/// tensor or null (step 0).
TensorValue randomUniform(const TensorValue &counters, const TensorValue *step,
                          int64_t stream, int64_t seed);

/// `titan.check_ids`: `ids` when each lies in [0, bound); an error naming
/// the first outside and `table` otherwise.
llvm::Expected<TensorValue> checkIds(const TensorValue &ids, int64_t bound,
                                     llvm::StringRef table);

/// `titan.rope` on [batch, seq, heads, head_dim] with tables [seq,
/// head_dim/2]; pairs (2j, 2j+1) when `interleaved`, else (j, j + head_dim/2).
TensorValue rope(const TensorValue &input, const TensorValue &cos,
                 const TensorValue &sin, bool interleaved);

/// `titan.attention`: softmax(q k^T * scale + mask) v with grouped KV heads,
/// and each query row's log-sum-exp of its visible scaled scores; with
/// `causal`, query i sees keys j <= i.
std::vector<TensorValue> attention(const TensorValue &q, const TensorValue &k,
                                   const TensorValue &v, bool causal,
                                   double scale);

/// `titan.cross_entropy`: the mean over non-ignored labels, f32 (f64 for f64
/// logits); fails on a
/// label outside [0, vocab) that is not `ignoreIndex`.
llvm::Expected<TensorValue> crossEntropy(const TensorValue &logits,
                                         const TensorValue &labels,
                                         int64_t ignoreIndex);

/// `titan.rms_norm_grad`: the cotangents of the input and the weight of
/// `rmsNorm(input, weight, eps)` given the cotangent `grad` of its result.
std::vector<TensorValue> rmsNormGrad(const TensorValue &input,
                                     const TensorValue &weight,
                                     const TensorValue &grad,
                                     const TensorValue *addend, double eps);

/// `titan.layer_norm_grad`: the cotangents of the input, weight and bias of
/// `layerNorm` given the cotangent `grad` of its result.
std::vector<TensorValue> layerNormGrad(const TensorValue &input,
                                       const TensorValue &weight,
                                       const TensorValue &grad, double eps);

/// `titan.embedding_grad`: the [vocab, dim] scatter-add of the rows of
/// `grad` at `ids`; fails on an id outside [0, vocab).
llvm::Expected<TensorValue>
embeddingGrad(const TensorValue &ids, const TensorValue &grad, int64_t vocab);

/// `titan.attention_grad`: the cotangents of q, k and v of `attention` given
/// its results `out` and `lse` and the cotangent `grad` of `out` (the
/// probabilities recomputed from q, k and `lse`).
std::vector<TensorValue>
attentionGrad(const TensorValue &q, const TensorValue &k, const TensorValue &v,
              const TensorValue &out, const TensorValue &lse,
              const TensorValue &grad, bool causal, double scale);

/// The hyperparameters of `titan.adamw`.
struct AdamWHyperparameters {
  double beta1, beta2, eps, weightDecay;
};

/// `titan.adamw`: the updated parameter and moments, each elementwise
/// operation rounded to the parameter's kind as the expanded ops are; `lr`
/// and `step` are the scalar inputs' values, `gradScale` the clipping
/// coefficient (nullopt when none).
std::vector<TensorValue> adamW(const TensorValue &param,
                               const TensorValue &grad,
                               const TensorValue &expAvg,
                               const TensorValue &expAvgSq, double lr,
                               double step, std::optional<double> gradScale,
                               const AdamWHyperparameters &hyper);

/// `titan.cross_entropy_grad`: the cotangent of the logits of
/// `crossEntropy` given the cotangent `grad` (0-d) of the loss; fails like
/// `crossEntropy` on a bad label.
llvm::Expected<TensorValue> crossEntropyGrad(const TensorValue &logits,
                                             const TensorValue &labels,
                                             const TensorValue &grad,
                                             int64_t ignoreIndex);

/// `titan.pad`: a zero tensor of `shape` with `input[j]` at `start + j *
/// step`.
TensorValue pad(const TensorValue &input, llvm::ArrayRef<int64_t> start,
                llvm::ArrayRef<int64_t> step, llvm::ArrayRef<int64_t> shape);

/// `titan.transpose`: result dim d is input dim permutation[d].
TensorValue transpose(const TensorValue &input,
                      llvm::ArrayRef<int64_t> permutation);

/// `titan.slice`: elements start + j * step of the result shape `shape`.
TensorValue slice(const TensorValue &input, llvm::ArrayRef<int64_t> start,
                  llvm::ArrayRef<int64_t> step, llvm::ArrayRef<int64_t> shape);

/// Writes `source` into `target` with its first element at `offset`.
void insertSlice(TensorValue &target, const TensorValue &source,
                 llvm::ArrayRef<int64_t> offset);

/// `titan.concat` along `dim` (also all_gather's concatenation).
TensorValue concat(llvm::ArrayRef<const TensorValue *> inputs, int64_t dim);

/// Splits `input` into `parts` equal chunks along `dim` (the dim must be
/// divisible by `parts`).
std::vector<TensorValue> split(const TensorValue &input, int64_t dim,
                               int64_t parts);

/// `titan.broadcast_in_dim`: operand dim d maps to result dim dims[d].
TensorValue broadcastInDim(const TensorValue &input,
                           llvm::ArrayRef<int64_t> shape,
                           llvm::ArrayRef<int64_t> dims);

/// The elementwise reduction of tensors of one type (collectives and Partial
/// placements): accumulated in double in the order given, avg divides the
/// sum by the count.
TensorValue reduceTensors(llvm::ArrayRef<const TensorValue *> inputs,
                          ReduceKind kind);

/// The process group of `rank` for a collective over the mesh axes `axes`:
/// the ranks whose coordinates differ from `rank`'s only on `axes`, ordered
/// row-major over `axes` in the order given (the first axis outermost).
/// `position` receives the index of `rank` in the group when not null.
llvm::SmallVector<int64_t> getGroup(const DeviceMesh &mesh,
                                    llvm::ArrayRef<unsigned> axes, int64_t rank,
                                    int64_t *position = nullptr);

} // namespace mlir::titan::kernels

#endif // TITAN_LIB_INTERPRETER_KERNELS_H
