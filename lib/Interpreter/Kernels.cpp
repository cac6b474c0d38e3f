//===- Kernels.cpp - host kernels of the reference interpreter ------------===//

#include "Kernels.h"

#include "titan/Dialect/RandomUniform.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cblas.h>

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::titan;
using namespace mlir::titan::kernels;
using llvm::ArrayRef;
using llvm::SmallVector;

SmallVector<int64_t> kernels::getStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// The product of `sizes`.
static int64_t product(ArrayRef<int64_t> sizes) {
  int64_t n = 1;
  for (int64_t size : sizes)
    n *= size;
  return n;
}

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

std::vector<double> kernels::toDoubles(const TensorValue &input) {
  return std::visit(
      [](const auto &values) {
        return std::vector<double>(values.begin(), values.end());
      },
      input.getStorage());
}

/// Converts a double to an integer of `bits` bits: truncates toward zero and
/// saturates; NaN becomes 0.
static int64_t truncateToInt(double value, unsigned bits) {
  if (std::isnan(value))
    return 0;
  double limit = std::ldexp(1.0, bits - 1);
  if (value >= limit)
    return bits == 64 ? std::numeric_limits<int64_t>::max()
                      : (int64_t(1) << (bits - 1)) - 1;
  if (value < -limit)
    return bits == 64 ? std::numeric_limits<int64_t>::min()
                      : -(int64_t(1) << (bits - 1));
  return static_cast<int64_t>(value);
}

TensorValue kernels::fromDoubles(ElementType kind, ArrayRef<int64_t> shape,
                                 ArrayRef<double> values) {
  TensorValue result(kind, shape);
  switch (kind) {
  case ElementType::F32:
  case ElementType::BF16:
  case ElementType::F16:
    for (auto [out, value] :
         llvm::zip_equal(result.getMutable<float>(), values))
      out = roundToFloatType(value, kind);
    break;
  case ElementType::F64:
    llvm::copy(values, result.getMutable<double>().begin());
    break;
  case ElementType::I64:
  case ElementType::I32: {
    unsigned bits = kind == ElementType::I64 ? 64 : 32;
    for (auto [out, value] :
         llvm::zip_equal(result.getMutable<int64_t>(), values))
      out = truncateToInt(value, bits);
    break;
  }
  case ElementType::I1:
    for (auto [out, value] :
         llvm::zip_equal(result.getMutable<uint8_t>(), values))
      out = value != 0;
    break;
  case ElementType::U16:
  case ElementType::U8:
    llvm_unreachable("the interpreter has no unsigned tensors");
  }
  return result;
}

TensorValue kernels::cast(const TensorValue &input, ElementType kind) {
  bool fromInt = !isFloatElementType(input.getKind());
  if (!fromInt || isFloatElementType(kind))
    return fromDoubles(kind, input.getShape(), toDoubles(input));
  // Integer to integer: exact, i32 wraps, i1 is `!= 0`.
  TensorValue result(kind, input.getShape());
  std::visit(
      [&](const auto &values) {
        using T = typename std::decay_t<decltype(values)>::value_type;
        if constexpr (std::is_integral_v<T>) {
          if (kind == ElementType::I1) {
            for (auto [out, v] :
                 llvm::zip_equal(result.getMutable<uint8_t>(), values))
              out = v != 0;
            return;
          }
          for (auto [out, v] :
               llvm::zip_equal(result.getMutable<int64_t>(), values))
            out = kind == ElementType::I32 ? int64_t(int32_t(uint32_t(v)))
                                           : int64_t(v);
        }
      },
      input.getStorage());
  return result;
}

TensorValue kernels::iota(ElementType kind, ArrayRef<int64_t> shape,
                          int64_t dim) {
  SmallVector<int64_t> strides(shape.size(), 0);
  strides[dim] = 1;
  std::vector<double> values(product(shape));
  walkStrided(shape, strides,
              [&](int64_t i, int64_t index) { values[i] = double(index); });
  return fromDoubles(kind, shape, values);
}

//===----------------------------------------------------------------------===//
// Masks
//===----------------------------------------------------------------------===//

std::optional<ComparePredicate>
kernels::parseComparePredicate(llvm::StringRef text) {
  return llvm::StringSwitch<std::optional<ComparePredicate>>(text)
      .Case("eq", ComparePredicate::Eq)
      .Case("ne", ComparePredicate::Ne)
      .Case("lt", ComparePredicate::Lt)
      .Case("le", ComparePredicate::Le)
      .Case("gt", ComparePredicate::Gt)
      .Case("ge", ComparePredicate::Ge)
      .Default(std::nullopt);
}

/// Applies `predicate` to two scalars (IEEE semantics for NaN).
template <typename T>
static bool comparePair(ComparePredicate predicate, T a, T b) {
  switch (predicate) {
  case ComparePredicate::Eq:
    return a == b;
  case ComparePredicate::Ne:
    return a != b;
  case ComparePredicate::Lt:
    return a < b;
  case ComparePredicate::Le:
    return a <= b;
  case ComparePredicate::Gt:
    return a > b;
  case ComparePredicate::Ge:
    return a >= b;
  }
  llvm_unreachable("unknown predicate");
}

TensorValue kernels::compare(ComparePredicate predicate, const TensorValue &lhs,
                             const TensorValue &rhs) {
  TensorValue result(ElementType::I1, lhs.getShape());
  llvm::MutableArrayRef<uint8_t> out = result.getMutable<uint8_t>();
  std::visit(
      [&](const auto &a) {
        using T = typename std::decay_t<decltype(a)>::value_type;
        ArrayRef<T> b = rhs.get<T>();
        for (size_t i = 0, e = a.size(); i < e; ++i)
          out[i] = comparePair(predicate, a[i], b[i]);
      },
      lhs.getStorage());
  return result;
}

TensorValue kernels::select(const TensorValue &cond, const TensorValue &onTrue,
                            const TensorValue &onFalse) {
  TensorValue result(onTrue.getKind(), onTrue.getShape());
  ArrayRef<uint8_t> c = cond.get<uint8_t>();
  std::visit(
      [&](const auto &t) {
        using T = typename std::decay_t<decltype(t)>::value_type;
        ArrayRef<T> f = onFalse.get<T>();
        llvm::MutableArrayRef<T> out = result.getMutable<T>();
        for (size_t i = 0, e = t.size(); i < e; ++i)
          out[i] = c[i] ? t[i] : f[i];
      },
      onTrue.getStorage());
  return result;
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

/// Folds `value` into the accumulator `acc` of reduction `kind` (max and min
/// propagate NaN).
static void accumulate(double &acc, double value, ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
  case ReduceKind::Avg:
    acc += value;
    return;
  case ReduceKind::Max:
    if (value > acc || std::isnan(value))
      acc = value;
    return;
  case ReduceKind::Min:
    if (value < acc || std::isnan(value))
      acc = value;
    return;
  }
}

/// The identity of reduction `kind`.
static double reductionIdentity(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Max:
    return -std::numeric_limits<double>::infinity();
  case ReduceKind::Min:
    return std::numeric_limits<double>::infinity();
  default:
    return 0.0;
  }
}

TensorValue kernels::reduce(const TensorValue &input, ArrayRef<int64_t> dims,
                            bool keepdim, ReduceKind kind) {
  ArrayRef<int64_t> shape = input.getShape();
  SmallVector<int64_t> keptShape(shape);
  for (int64_t d : dims)
    keptShape[d] = 1;
  SmallVector<int64_t> strides = getStrides(keptShape);
  for (int64_t d : dims)
    strides[d] = 0;
  int64_t count = product(shape) / std::max<int64_t>(product(keptShape), 1);
  std::vector<double> acc(product(keptShape), reductionIdentity(kind));
  std::vector<double> values = toDoubles(input);
  walkStrided(shape, strides, [&](int64_t i, int64_t out) {
    accumulate(acc[out], values[i], kind);
  });
  if (kind == ReduceKind::Avg)
    for (double &value : acc)
      value /= double(count);
  SmallVector<int64_t> resultShape;
  for (auto [d, size] : llvm::enumerate(shape))
    if (keepdim || !llvm::is_contained(dims, int64_t(d)))
      resultShape.push_back(keptShape[d]);
  return fromDoubles(input.getKind(), resultShape, acc);
}

TensorValue kernels::softmax(const TensorValue &input, int64_t dim, bool log) {
  ArrayRef<int64_t> shape = input.getShape();
  int64_t outer = product(shape.take_front(dim)), n = shape[dim],
          inner = product(shape.drop_front(dim + 1));
  std::vector<double> x = toDoubles(input);
  std::vector<double> out(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      int64_t base = o * n * inner + in;
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < n; ++j)
        accumulate(max, x[base + j * inner], ReduceKind::Max);
      double sum = 0;
      for (int64_t j = 0; j < n; ++j)
        sum += std::exp(x[base + j * inner] - max);
      double logSum = std::log(sum);
      for (int64_t j = 0; j < n; ++j) {
        double shifted = x[base + j * inner] - max;
        out[base + j * inner] =
            log ? shifted - logSum : std::exp(shifted) / sum;
      }
    }
  }
  return fromDoubles(input.getKind(), shape, out);
}

TensorValue kernels::rmsNorm(const TensorValue &input,
                             const TensorValue &weight, double eps) {
  std::vector<double> x = toDoubles(input), w = toDoubles(weight);
  int64_t cols = w.size(), rows = cols ? x.size() / cols : 0;
  for (int64_t r = 0; r < rows; ++r) {
    double *row = x.data() + r * cols;
    double squares = 0;
    for (int64_t c = 0; c < cols; ++c)
      squares += row[c] * row[c];
    double scale = 1.0 / std::sqrt(squares / double(cols) + eps);
    for (int64_t c = 0; c < cols; ++c)
      row[c] = row[c] * scale * w[c];
  }
  return fromDoubles(input.getKind(), input.getShape(), x);
}

std::vector<TensorValue>
kernels::adamW(const TensorValue &param, const TensorValue &grad,
               const TensorValue &expAvg, const TensorValue &expAvgSq,
               double lr, double step, std::optional<double> gradScale,
               const AdamWHyperparameters &hyper) {
  ElementType kind = param.getKind();
  // One operation's result in the type the update computes in: the
  // parameter's, or f32 for a bf16 or f16 parameter, whose three results
  // round to its type once (fromDoubles, below).
  ElementType compute = kind == ElementType::BF16 || kind == ElementType::F16
                            ? ElementType::F32
                            : kind;
  auto r = [compute](double value) {
    return compute == ElementType::F64 ? value
                                       : roundToFloatType(value, compute);
  };
  // The step's scalars in f64, as titan-build-train-step's expansion
  // computes them: beta^t as exp(t * log(beta)).
  double t = step + 1.0;
  auto oneMinusPower = [&](double beta) {
    return 1.0 - std::exp(t * std::log(beta));
  };
  double decay = r(1.0 - lr * hyper.weightDecay);
  double stepSize = r(lr / oneMinusPower(hyper.beta1));
  double correction2Sqrt = r(std::sqrt(oneMinusPower(hyper.beta2)));
  double scale = gradScale ? r(*gradScale) : 1.0;
  double beta1 = r(hyper.beta1), oneMinusBeta1 = r(1 - hyper.beta1);
  double beta2 = r(hyper.beta2), oneMinusBeta2 = r(1 - hyper.beta2);
  double eps = r(hyper.eps);

  std::vector<double> p = toDoubles(param), g = toDoubles(grad),
                      m = toDoubles(expAvg), v = toDoubles(expAvgSq);
  for (size_t i = 0, e = p.size(); i < e; ++i) {
    double gi = r(g[i]);
    if (gradScale)
      gi = r(gi * scale);
    double decayed = r(p[i] * decay);
    m[i] = r(r(m[i] * beta1) + r(gi * oneMinusBeta1));
    v[i] = r(r(v[i] * beta2) + r(r(gi * gi) * oneMinusBeta2));
    double denom = r(r(r(std::sqrt(v[i])) / correction2Sqrt) + eps);
    p[i] = r(decayed - r(r(m[i] / denom) * stepSize));
  }
  ArrayRef<int64_t> shape = param.getShape();
  std::vector<TensorValue> results;
  for (const std::vector<double> *values : {&p, &m, &v})
    results.push_back(fromDoubles(kind, shape, *values));
  return results;
}

TensorValue kernels::layerNorm(const TensorValue &input,
                               const TensorValue &weight,
                               const TensorValue &bias, double eps) {
  std::vector<double> x = toDoubles(input), w = toDoubles(weight),
                      b = toDoubles(bias);
  int64_t cols = w.size(), rows = cols ? x.size() / cols : 0;
  for (int64_t r = 0; r < rows; ++r) {
    double *row = x.data() + r * cols;
    double mean = 0;
    for (int64_t c = 0; c < cols; ++c)
      mean += row[c];
    mean /= double(cols);
    double variance = 0;
    for (int64_t c = 0; c < cols; ++c)
      variance += (row[c] - mean) * (row[c] - mean);
    double scale = 1.0 / std::sqrt(variance / double(cols) + eps);
    for (int64_t c = 0; c < cols; ++c)
      row[c] = (row[c] - mean) * scale * w[c] + b[c];
  }
  return fromDoubles(input.getKind(), input.getShape(), x);
}

//===----------------------------------------------------------------------===//
// Contractions and model-level ops
//===----------------------------------------------------------------------===//

/// Row-major C[m, n] = alpha * op(A) op(B) + beta * C in double with BLAS,
/// where A is stored as [m, k] ([k, m] when `transA`) and B as [k, n] ([n,
/// k] when `transB`).
static void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                 double alpha, const double *a, const double *b, double *c,
                 double beta = 0.0) {
  if (m == 0 || n == 0)
    return;
  int64_t lda = std::max<int64_t>(1, transA ? m : k);
  int64_t ldb = std::max<int64_t>(1, transB ? k : n);
  cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
              ldb, beta, c, n);
}

TensorValue kernels::matmul(const TensorValue &lhs, const TensorValue &rhs,
                            const TensorValue *addend, bool transposeLhs,
                            bool transposeRhs) {
  ArrayRef<int64_t> lhsShape = lhs.getShape(), rhsShape = rhs.getShape();
  int64_t rank = lhsShape.size();
  int64_t m = lhsShape[rank - (transposeLhs ? 1 : 2)];
  int64_t k = lhsShape[rank - (transposeLhs ? 2 : 1)];
  int64_t n = rhsShape[rhsShape.size() - (transposeRhs ? 2 : 1)];
  int64_t batch = product(lhsShape.drop_back(2));
  bool sharedRhs = rhsShape.size() == 2;
  std::vector<double> a = toDoubles(lhs), b = toDoubles(rhs);
  std::vector<double> c =
      addend ? toDoubles(*addend) : std::vector<double>(batch * m * n);
  for (int64_t i = 0; i < batch; ++i)
    gemm(transposeLhs, transposeRhs, m, n, k, 1.0, a.data() + i * m * k,
         b.data() + (sharedRhs ? 0 : i * k * n), c.data() + i * m * n,
         addend ? 1.0 : 0.0);
  SmallVector<int64_t> shape(lhsShape.drop_back(2));
  shape.append({m, n});
  return fromDoubles(lhs.getKind(), shape, c);
}

TensorValue kernels::randomUniform(const TensorValue &counters,
                                   const TensorValue *step, int64_t stream,
                                   int64_t seed) {
  uint64_t stepKey =
      randomStepKey(randomStreamKey(seed, stream),
                    step ? static_cast<int64_t>(step->get<float>()[0]) : 0);
  TensorValue result(ElementType::F32, counters.getShape());
  llvm::MutableArrayRef<float> out = result.getMutable<float>();
  for (auto [i, counter] : llvm::enumerate(counters.get<int64_t>()))
    out[i] = titan::randomUniform(stepKey, counter);
  return result;
}

llvm::Expected<TensorValue> kernels::checkIds(const TensorValue &ids,
                                              int64_t bound,
                                              llvm::StringRef table) {
  for (auto [i, id] : llvm::enumerate(ids.get<int64_t>()))
    if (id < 0 || id >= bound)
      return llvm::createStringError(
          table.empty()
              ? llvm::formatv("the model computed index {0} (at flat index "
                              "{1}) into a dim of size {2}",
                              id, i, bound)
                    .str()
              : llvm::formatv("the model computed id {0} (at flat index "
                              "{1}) to look up a row of '{2}', which has {3} "
                              "rows",
                              id, i, table, bound)
                    .str());
  return ids;
}

llvm::Expected<TensorValue> kernels::embedding(const TensorValue &table,
                                               const TensorValue &ids) {
  int64_t vocab = table.getShape()[0], dim = table.getShape()[1];
  SmallVector<int64_t> shape(ids.getShape());
  shape.push_back(dim);
  TensorValue result(table.getKind(), shape);
  ArrayRef<int64_t> idValues = ids.get<int64_t>();
  for (auto [i, id] : llvm::enumerate(idValues))
    if (id < 0 || id >= vocab)
      return llvm::createStringError(
          "id %lld at flat index %zu is outside the table's [0, %lld)",
          (long long)id, i, (long long)vocab);
  std::visit(
      [&](const auto &rows) {
        using T = typename std::decay_t<decltype(rows)>::value_type;
        if constexpr (std::is_floating_point_v<T>) {
          llvm::MutableArrayRef<T> out = result.getMutable<T>();
          for (auto [i, id] : llvm::enumerate(idValues))
            std::copy_n(rows.begin() + id * dim, dim, out.begin() + i * dim);
        }
      },
      table.getStorage());
  return result;
}

TensorValue kernels::rope(const TensorValue &input, const TensorValue &cos,
                          const TensorValue &sin, bool interleaved) {
  ArrayRef<int64_t> shape = input.getShape();
  int64_t batch = shape[0], seq = shape[1], heads = shape[2],
          headDim = shape[3], half = headDim / 2;
  std::vector<double> x = toDoubles(input), c = toDoubles(cos),
                      s = toDoubles(sin);
  std::vector<double> out(x.size());
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t p = 0; p < seq; ++p) {
      for (int64_t h = 0; h < heads; ++h) {
        int64_t base = ((b * seq + p) * heads + h) * headDim;
        for (int64_t j = 0; j < half; ++j) {
          int64_t first = base + (interleaved ? 2 * j : j);
          int64_t second = first + (interleaved ? 1 : half);
          double cj = c[p * half + j], sj = s[p * half + j];
          out[first] = x[first] * cj - x[second] * sj;
          out[second] = x[first] * sj + x[second] * cj;
        }
      }
    }
  }
  return fromDoubles(input.getKind(), shape, out);
}

/// Replaces the first `visible` entries of `row` by their softmax and the
/// other `size - visible` by 0; returns the log-sum-exp of the visible
/// entries.
static double softmaxRow(double *row, int64_t visible, int64_t size) {
  double max = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < visible; ++j)
    accumulate(max, row[j], ReduceKind::Max);
  double sum = 0;
  for (int64_t j = 0; j < visible; ++j)
    sum += row[j] = std::exp(row[j] - max);
  for (int64_t j = 0; j < size; ++j)
    row[j] = j < visible ? row[j] / sum : 0.0;
  return max + std::log(sum);
}

/// The element kind of a statistic of float data of kind `data` (a loss,
/// attention's log-sum-exp): f32, f64 for f64 data.
static ElementType getStatisticKind(ElementType data) {
  return data == ElementType::F64 ? ElementType::F64 : ElementType::F32;
}

std::vector<TensorValue> kernels::attention(const TensorValue &q,
                                            const TensorValue &k,
                                            const TensorValue &v, bool causal,
                                            double scale) {
  ArrayRef<int64_t> qShape = q.getShape(), kShape = k.getShape();
  int64_t batch = qShape[0], qHeads = qShape[1], qSeq = qShape[2],
          headDim = qShape[3], kvHeads = kShape[1], kvSeq = kShape[2],
          vDim = v.getShape()[3];
  int64_t group = qHeads / kvHeads;
  std::vector<double> qs = toDoubles(q), ks = toDoubles(k), vs = toDoubles(v);
  std::vector<double> out(batch * qHeads * qSeq * vDim);
  std::vector<double> lse(batch * qHeads * qSeq);
  std::vector<double> scores(qSeq * kvSeq);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < qHeads; ++h) {
      int64_t kvHead = b * kvHeads + h / group;
      int64_t head = b * qHeads + h;
      gemm(false, true, qSeq, kvSeq, headDim, scale,
           qs.data() + head * qSeq * headDim,
           ks.data() + kvHead * kvSeq * headDim, scores.data());
      for (int64_t i = 0; i < qSeq; ++i)
        lse[head * qSeq + i] =
            softmaxRow(scores.data() + i * kvSeq,
                       causal ? std::min(i + 1, kvSeq) : kvSeq, kvSeq);
      gemm(false, false, qSeq, vDim, kvSeq, 1.0, scores.data(),
           vs.data() + kvHead * kvSeq * vDim, out.data() + head * qSeq * vDim);
    }
  }
  SmallVector<int64_t> shape(qShape.drop_back());
  TensorValue lseValue = fromDoubles(getStatisticKind(q.getKind()), shape, lse);
  shape.push_back(vDim);
  return {fromDoubles(q.getKind(), shape, out), std::move(lseValue)};
}

/// The number of labels that count (not `ignoreIndex`); an error names the
/// first label outside [0, vocab).
static llvm::Expected<int64_t> countLabels(ArrayRef<int64_t> targets,
                                           int64_t vocab, int64_t ignoreIndex) {
  int64_t count = 0;
  for (auto [row, label] : llvm::enumerate(targets)) {
    if (label == ignoreIndex)
      continue;
    if (label < 0 || label >= vocab)
      return llvm::createStringError(
          "label %lld at flat index %zu is outside [0, %lld) and is not the "
          "ignore_index %lld",
          (long long)label, row, (long long)vocab, (long long)ignoreIndex);
    ++count;
  }
  return count;
}

llvm::Expected<TensorValue> kernels::crossEntropy(const TensorValue &logits,
                                                  const TensorValue &labels,
                                                  int64_t ignoreIndex) {
  int64_t vocab = logits.getShape().back();
  ArrayRef<int64_t> targets = labels.get<int64_t>();
  llvm::Expected<int64_t> count = countLabels(targets, vocab, ignoreIndex);
  if (!count)
    return count.takeError();
  std::vector<double> x = toDoubles(logits);
  double total = 0;
  for (auto [row, label] : llvm::enumerate(targets)) {
    if (label == ignoreIndex)
      continue;
    const double *values = x.data() + row * vocab;
    double max = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < vocab; ++j)
      accumulate(max, values[j], ReduceKind::Max);
    double sum = 0;
    for (int64_t j = 0; j < vocab; ++j)
      sum += std::exp(values[j] - max);
    total += max + std::log(sum) - values[label];
  }
  double loss = *count ? total / double(*count)
                       : std::numeric_limits<double>::quiet_NaN();
  return fromDoubles(getStatisticKind(logits.getKind()), {}, {loss});
}

//===----------------------------------------------------------------------===//
// Backward-only ops
//===----------------------------------------------------------------------===//

std::vector<TensorValue> kernels::rmsNormGrad(const TensorValue &input,
                                              const TensorValue &weight,
                                              const TensorValue &grad,
                                              const TensorValue *addend,
                                              double eps) {
  std::vector<double> x = toDoubles(input), w = toDoubles(weight),
                      dy = toDoubles(grad);
  int64_t cols = w.size(), rows = cols ? x.size() / cols : 0;
  std::vector<double> dx =
      addend ? toDoubles(*addend) : std::vector<double>(x.size());
  std::vector<double> dw(cols, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const double *row = x.data() + r * cols, *dRow = dy.data() + r * cols;
    double squares = 0, dot = 0;
    for (int64_t c = 0; c < cols; ++c) {
      squares += row[c] * row[c];
      dot += dRow[c] * w[c] * row[c];
    }
    double scale = 1.0 / std::sqrt(squares / double(cols) + eps);
    double correction = scale * scale * dot / double(cols);
    for (int64_t c = 0; c < cols; ++c) {
      dx[r * cols + c] += scale * (dRow[c] * w[c] - row[c] * correction);
      dw[c] += dRow[c] * row[c] * scale;
    }
  }
  return {fromDoubles(input.getKind(), input.getShape(), dx),
          fromDoubles(weight.getKind(), weight.getShape(), dw)};
}

std::vector<TensorValue> kernels::layerNormGrad(const TensorValue &input,
                                                const TensorValue &weight,
                                                const TensorValue &grad,
                                                double eps) {
  std::vector<double> x = toDoubles(input), w = toDoubles(weight),
                      dy = toDoubles(grad);
  int64_t cols = w.size(), rows = cols ? x.size() / cols : 0;
  std::vector<double> dx(x.size()), dw(cols, 0.0), db(cols, 0.0),
      normalized(cols);
  for (int64_t r = 0; r < rows; ++r) {
    const double *row = x.data() + r * cols, *dRow = dy.data() + r * cols;
    double mean = 0;
    for (int64_t c = 0; c < cols; ++c)
      mean += row[c];
    mean /= double(cols);
    double variance = 0;
    for (int64_t c = 0; c < cols; ++c)
      variance += (row[c] - mean) * (row[c] - mean);
    double scale = 1.0 / std::sqrt(variance / double(cols) + eps);
    // Row means of g = dy * w and of g * xhat.
    double meanG = 0, meanGX = 0;
    for (int64_t c = 0; c < cols; ++c) {
      normalized[c] = (row[c] - mean) * scale;
      meanG += dRow[c] * w[c];
      meanGX += dRow[c] * w[c] * normalized[c];
      dw[c] += dRow[c] * normalized[c];
      db[c] += dRow[c];
    }
    meanG /= double(cols);
    meanGX /= double(cols);
    for (int64_t c = 0; c < cols; ++c)
      dx[r * cols + c] =
          scale * (dRow[c] * w[c] - meanG - normalized[c] * meanGX);
  }
  return {fromDoubles(input.getKind(), input.getShape(), dx),
          fromDoubles(weight.getKind(), weight.getShape(), dw),
          fromDoubles(weight.getKind(), weight.getShape(), db)};
}

llvm::Expected<TensorValue> kernels::embeddingGrad(const TensorValue &ids,
                                                   const TensorValue &grad,
                                                   int64_t vocab) {
  int64_t dim = grad.getShape().back();
  ArrayRef<int64_t> idValues = ids.get<int64_t>();
  std::vector<double> dy = toDoubles(grad);
  std::vector<double> table(vocab * dim, 0.0);
  for (auto [i, id] : llvm::enumerate(idValues)) {
    if (id < 0 || id >= vocab)
      return llvm::createStringError(
          "id %lld at flat index %zu is outside the table's [0, %lld)",
          (long long)id, i, (long long)vocab);
    for (int64_t c = 0; c < dim; ++c)
      table[id * dim + c] += dy[i * dim + c];
  }
  return fromDoubles(grad.getKind(), {vocab, dim}, table);
}

std::vector<TensorValue>
kernels::attentionGrad(const TensorValue &q, const TensorValue &k,
                       const TensorValue &v, const TensorValue &out,
                       const TensorValue &lse, const TensorValue &grad,
                       bool causal, double scale) {
  ArrayRef<int64_t> qShape = q.getShape(), kShape = k.getShape();
  int64_t batch = qShape[0], qHeads = qShape[1], qSeq = qShape[2],
          headDim = qShape[3], kvHeads = kShape[1], kvSeq = kShape[2],
          vDim = v.getShape()[3];
  int64_t group = qHeads / kvHeads;
  std::vector<double> qs = toDoubles(q), ks = toDoubles(k), vs = toDoubles(v),
                      outs = toDoubles(out), rowLse = toDoubles(lse),
                      dOut = toDoubles(grad);
  std::vector<double> dq(qs.size()), dk(ks.size(), 0.0), dv(vs.size(), 0.0);
  std::vector<double> probs(qSeq * kvSeq), dScores(qSeq * kvSeq),
      partial(kvSeq * std::max(headDim, vDim));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < qHeads; ++h) {
      int64_t kvHead = b * kvHeads + h / group;
      int64_t head = b * qHeads + h;
      int64_t qOffset = head * qSeq * headDim;
      const double *kMatrix = ks.data() + kvHead * kvSeq * headDim;
      const double *vMatrix = vs.data() + kvHead * kvSeq * vDim;
      const double *dOutMatrix = dOut.data() + head * qSeq * vDim;
      const double *outMatrix = outs.data() + head * qSeq * vDim;
      // P = exp(q k^T * scale - lse), 0 where masked.
      gemm(false, true, qSeq, kvSeq, headDim, scale, qs.data() + qOffset,
           kMatrix, probs.data());
      for (int64_t i = 0; i < qSeq; ++i) {
        double *row = probs.data() + i * kvSeq;
        int64_t visible = causal ? std::min(i + 1, kvSeq) : kvSeq;
        for (int64_t j = 0; j < kvSeq; ++j)
          row[j] =
              j < visible ? std::exp(row[j] - rowLse[head * qSeq + i]) : 0.0;
      }
      // dV += P^T dO.
      gemm(true, false, kvSeq, vDim, qSeq, 1.0, probs.data(), dOutMatrix,
           partial.data());
      for (int64_t i = 0; i < kvSeq * vDim; ++i)
        dv[kvHead * kvSeq * vDim + i] += partial[i];
      // dS = P * (dO V^T - rowsum(dO * O)).
      gemm(false, true, qSeq, kvSeq, vDim, 1.0, dOutMatrix, vMatrix,
           dScores.data());
      for (int64_t i = 0; i < qSeq; ++i) {
        double *pRow = probs.data() + i * kvSeq;
        double *dRow = dScores.data() + i * kvSeq;
        double delta = 0;
        for (int64_t d = 0; d < vDim; ++d)
          delta += dOutMatrix[i * vDim + d] * outMatrix[i * vDim + d];
        for (int64_t j = 0; j < kvSeq; ++j)
          dRow[j] = pRow[j] * (dRow[j] - delta);
      }
      // dQ = scale dS K, dK += scale dS^T Q.
      gemm(false, false, qSeq, headDim, kvSeq, scale, dScores.data(), kMatrix,
           dq.data() + qOffset);
      gemm(true, false, kvSeq, headDim, qSeq, scale, dScores.data(),
           qs.data() + qOffset, partial.data());
      for (int64_t i = 0; i < kvSeq * headDim; ++i)
        dk[kvHead * kvSeq * headDim + i] += partial[i];
    }
  }
  return {fromDoubles(q.getKind(), qShape, dq),
          fromDoubles(k.getKind(), kShape, dk),
          fromDoubles(v.getKind(), v.getShape(), dv)};
}

llvm::Expected<TensorValue> kernels::crossEntropyGrad(const TensorValue &logits,
                                                      const TensorValue &labels,
                                                      const TensorValue &grad,
                                                      int64_t ignoreIndex) {
  int64_t vocab = logits.getShape().back();
  ArrayRef<int64_t> targets = labels.get<int64_t>();
  llvm::Expected<int64_t> count = countLabels(targets, vocab, ignoreIndex);
  if (!count)
    return count.takeError();
  std::vector<double> x = toDoubles(logits);
  std::vector<double> dx(x.size(), 0.0);
  double factor =
      toDoubles(grad).front() / double(std::max<int64_t>(*count, 1));
  for (auto [row, label] : llvm::enumerate(targets)) {
    if (label == ignoreIndex)
      continue;
    double *out = dx.data() + row * vocab;
    std::copy_n(x.data() + row * vocab, vocab, out);
    softmaxRow(out, vocab, vocab);
    out[label] -= 1.0;
    for (int64_t j = 0; j < vocab; ++j)
      out[j] *= factor;
  }
  return fromDoubles(logits.getKind(), logits.getShape(), dx);
}

TensorValue kernels::pad(const TensorValue &input, ArrayRef<int64_t> start,
                         ArrayRef<int64_t> step, ArrayRef<int64_t> shape) {
  TensorValue result(input.getKind(), shape);
  SmallVector<int64_t> strides = getStrides(shape);
  int64_t base = 0;
  for (auto [d, stride] : llvm::enumerate(strides)) {
    base += start[d] * stride;
    stride *= step[d];
  }
  std::visit(
      [&](auto &out) {
        using T = typename std::decay_t<decltype(out)>::value_type;
        ArrayRef<T> in = input.get<T>();
        walkStrided(input.getShape(), strides,
                    [&](int64_t i, int64_t o) { out[base + o] = in[i]; });
      },
      result.getStorage());
  return result;
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

/// A tensor of `shape` whose element i is `input[base + offset(i)]`, with the
/// offsets of `strides` (any storage type).
static TensorValue gather(const TensorValue &input, ArrayRef<int64_t> shape,
                          int64_t base, ArrayRef<int64_t> strides) {
  TensorValue result(input.getKind(), shape);
  std::visit(
      [&](const auto &in) {
        using T = typename std::decay_t<decltype(in)>::value_type;
        llvm::MutableArrayRef<T> out = result.getMutable<T>();
        walkStrided(shape, strides, [&](int64_t i, int64_t offset) {
          out[i] = in[base + offset];
        });
      },
      input.getStorage());
  return result;
}

TensorValue kernels::transpose(const TensorValue &input,
                               ArrayRef<int64_t> permutation) {
  SmallVector<int64_t> inStrides = getStrides(input.getShape());
  SmallVector<int64_t> shape, strides;
  for (int64_t d : permutation) {
    shape.push_back(input.getShape()[d]);
    strides.push_back(inStrides[d]);
  }
  return gather(input, shape, 0, strides);
}

TensorValue kernels::slice(const TensorValue &input, ArrayRef<int64_t> start,
                           ArrayRef<int64_t> step, ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides = getStrides(input.getShape());
  int64_t base = 0;
  for (auto [d, stride] : llvm::enumerate(strides)) {
    base += start[d] * stride;
    stride *= step[d];
  }
  return gather(input, shape, base, strides);
}

void kernels::insertSlice(TensorValue &target, const TensorValue &source,
                          ArrayRef<int64_t> offset) {
  SmallVector<int64_t> strides = getStrides(target.getShape());
  int64_t base = 0;
  for (auto [d, stride] : llvm::enumerate(strides))
    base += offset[d] * stride;
  std::visit(
      [&](auto &out) {
        using T = typename std::decay_t<decltype(out)>::value_type;
        ArrayRef<T> in = source.get<T>();
        walkStrided(source.getShape(), strides,
                    [&](int64_t i, int64_t o) { out[base + o] = in[i]; });
      },
      target.getStorage());
}

TensorValue kernels::concat(ArrayRef<const TensorValue *> inputs, int64_t dim) {
  SmallVector<int64_t> shape(inputs.front()->getShape());
  shape[dim] = 0;
  for (const TensorValue *input : inputs)
    shape[dim] += input->getShape()[dim];
  TensorValue result(inputs.front()->getKind(), shape);
  SmallVector<int64_t> offset(shape.size(), 0);
  for (const TensorValue *input : inputs) {
    insertSlice(result, *input, offset);
    offset[dim] += input->getShape()[dim];
  }
  return result;
}

std::vector<TensorValue> kernels::split(const TensorValue &input, int64_t dim,
                                        int64_t parts) {
  SmallVector<int64_t> shape(input.getShape());
  shape[dim] /= parts;
  SmallVector<int64_t> start(shape.size(), 0), step(shape.size(), 1);
  std::vector<TensorValue> chunks;
  for (int64_t part = 0; part < parts; ++part) {
    start[dim] = part * shape[dim];
    chunks.push_back(slice(input, start, step, shape));
  }
  return chunks;
}

TensorValue kernels::broadcastInDim(const TensorValue &input,
                                    ArrayRef<int64_t> shape,
                                    ArrayRef<int64_t> dims) {
  SmallVector<int64_t> inStrides = getStrides(input.getShape());
  SmallVector<int64_t> strides(shape.size(), 0);
  for (auto [d, resultDim] : llvm::enumerate(dims))
    if (input.getShape()[d] != 1)
      strides[resultDim] = inStrides[d];
  return gather(input, shape, 0, strides);
}

TensorValue kernels::reduceTensors(ArrayRef<const TensorValue *> inputs,
                                   ReduceKind kind) {
  std::vector<double> acc = toDoubles(*inputs.front());
  for (const TensorValue *input : inputs.drop_front()) {
    std::vector<double> values = toDoubles(*input);
    for (auto [a, value] : llvm::zip_equal(acc, values))
      accumulate(a, value, kind);
  }
  if (kind == ReduceKind::Avg)
    for (double &value : acc)
      value /= double(inputs.size());
  return fromDoubles(inputs.front()->getKind(), inputs.front()->getShape(),
                     acc);
}

SmallVector<int64_t> kernels::getGroup(const DeviceMesh &mesh,
                                       ArrayRef<unsigned> axes, int64_t rank,
                                       int64_t *position) {
  SmallVector<int64_t> coordinate = mesh.getCoordinate(rank);
  int64_t size = 1, own = 0;
  for (unsigned axis : axes) {
    size *= mesh.getSize(axis);
    own = own * mesh.getSize(axis) + coordinate[axis];
  }
  if (position)
    *position = own;
  SmallVector<int64_t> group;
  for (int64_t member = 0; member < size; ++member) {
    SmallVector<int64_t> memberCoordinate(coordinate);
    int64_t rest = member;
    for (unsigned axis : llvm::reverse(axes)) {
      memberCoordinate[axis] = rest % mesh.getSize(axis);
      rest /= mesh.getSize(axis);
    }
    group.push_back(mesh.getRank(memberCoordinate));
  }
  return group;
}
