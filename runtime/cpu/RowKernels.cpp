//===- RowKernels.cpp - RMSNorm and cross-entropy, row by row -------------===//
//
// titanrt_rms_norm(_grad) and titanrt_cross_entropy(_grad) on the CPU: each
// row is widened to float32 once, computed in float32 and rounded once,
// parallel over rows. Every sum over a row runs in column order, and the
// sums across rows (RMSNorm's weight gradient, the mean loss) go through
// partials fixed by the shape alone, so results are bitwise equal for any
// number of threads.
//
//===----------------------------------------------------------------------===//

#include "cpu/Arguments.h"
#include "cpu/CpuKernels.h"

#include "core/ComputeBackend.h"
#include "core/LowPrecision.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace titan::rt;
using namespace titan::rt::cpu;

namespace {

/// Rows per parallel range: enough work per range for rows of a few
/// hundred elements.
constexpr int64_t kRowGrain = 16;

/// Fails unless `dtype` is one the row kernels compute: f32 or bf16.
Status checkRowDtype(const char *op, const char *name, int32_t dtype) {
  if (dtype == TITANRT_F32 || dtype == TITANRT_BF16)
    return Status::success();
  return Status::unsupported(std::string(op) + ": " + name + " " +
                             dtypeName(dtype) + " is neither f32 nor bf16");
}

/// Row `row` of `cols` elements of `dtype` (f32 or bf16) at `base`, as
/// float32 in `out`.
void loadRow(int32_t dtype, const void *base, int64_t row, int64_t cols,
             float *out) {
  if (dtype == TITANRT_F32) {
    const float *source = static_cast<const float *>(base) + row * cols;
    std::copy(source, source + cols, out);
    return;
  }
  const uint16_t *source = static_cast<const uint16_t *>(base) + row * cols;
  for (int64_t c = 0; c < cols; ++c)
    out[c] = bf16ToFloat(source[c]);
}

/// Writes `values` rounded to `dtype` as row `row` of `base`.
void storeRow(int32_t dtype, const float *values, void *base, int64_t row,
              int64_t cols) {
  if (dtype == TITANRT_F32) {
    std::copy(values, values + cols, static_cast<float *>(base) + row * cols);
    return;
  }
  uint16_t *target = static_cast<uint16_t *>(base) + row * cols;
  for (int64_t c = 0; c < cols; ++c)
    target[c] = floatToBf16(values[c]);
}

/// rsqrt(mean(x^2) + eps) of one row.
float inverseRms(const float *x, int64_t cols, double eps) {
  float squares = 0;
  for (int64_t c = 0; c < cols; ++c)
    squares += x[c] * x[c];
  return 1.0f / std::sqrt(squares / float(cols) + float(eps));
}

/// Checks what RMSNorm's two directions share: the dtypes, the shape, x
/// and the weight.
Status checkRmsNorm(const char *op, int32_t dtype, int32_t weightDtype,
                    const void *x, const void *weight, int64_t rows,
                    int64_t cols) {
  TITANRT_RETURN_IF_ERROR(checkRowDtype(op, "dtype", dtype));
  TITANRT_RETURN_IF_ERROR(checkRowDtype(op, "weight_dtype", weightDtype));
  TITANRT_RETURN_IF_ERROR(checkNonNegative(op, "rows", rows));
  TITANRT_RETURN_IF_ERROR(checkNonNegative(op, "cols", cols));
  TITANRT_RETURN_IF_ERROR(checkBuffer(op, "x", x, {rows, cols}));
  TITANRT_RETURN_IF_ERROR(checkBuffer(op, "weight", weight, {cols}));
  return Status::success();
}

/// Label `row` of labels of `dtype` (I64 or I32).
int64_t labelAt(int32_t dtype, const void *labels, int64_t row) {
  return dtype == TITANRT_I64 ? static_cast<const int64_t *>(labels)[row]
                              : static_cast<const int32_t *>(labels)[row];
}

/// Checks a cross-entropy call's arguments and its labels.
Status checkLoss(const char *op, int32_t dtype, const LossShape &shape,
                 const void *logits, const void *labels,
                 const void *workspace) {
  TITANRT_RETURN_IF_ERROR(checkRowDtype(op, "dtype", dtype));
  if (shape.labelsDtype != TITANRT_I64 && shape.labelsDtype != TITANRT_I32)
    return Status::invalidArgument(std::string(op) + ": labels_dtype " +
                                   dtypeName(shape.labelsDtype) +
                                   " is neither i64 nor i32");
  TITANRT_RETURN_IF_ERROR(checkNonNegative(op, "rows", shape.rows));
  TITANRT_RETURN_IF_ERROR(checkNonNegative(op, "vocab", shape.vocab));
  TITANRT_RETURN_IF_ERROR(
      checkBuffer(op, "logits", logits, {shape.rows, shape.vocab}));
  TITANRT_RETURN_IF_ERROR(checkBuffer(op, "labels", labels, {shape.rows}));
  TITANRT_RETURN_IF_ERROR(
      checkBuffer(op, "workspace", workspace, {4 * shape.rows + 2}));
  for (int64_t row = 0; row < shape.rows; ++row) {
    int64_t label = labelAt(shape.labelsDtype, labels, row);
    if (label != shape.ignoreIndex && (label < 0 || label >= shape.vocab))
      return Status::invalidArgument(
          std::string(op) + ": label " + std::to_string(label) + " of row " +
          std::to_string(row) + " is outside the vocabulary [0, " +
          std::to_string(shape.vocab) + ") and is not ignore_index " +
          std::to_string(shape.ignoreIndex));
  }
  return Status::success();
}

/// The CPU's use of titanrt_cross_entropy's workspace: each row's loss
/// term and log-sum-exp, the rows counted and the loss.
struct LossWorkspace {
  float *terms;
  float *lse;
  float *count;
  float *loss;
};

LossWorkspace splitLossWorkspace(void *workspace, int64_t rows) {
  float *base = static_cast<float *>(workspace);
  return {base, base + rows, base + 4 * rows, base + 4 * rows + 1};
}

/// Each row's log-sum-exp, the rows not ignored and the mean loss over
/// them (into `parts`, or `loss` when given), summed in row order.
void computeLoss(ThreadPool &pool, int32_t dtype, const LossShape &shape,
                 const void *logits, const void *labels,
                 const LossWorkspace &parts, float *loss) {
  float *terms = parts.terms, *lse = parts.lse;
  pool.parallelFor(shape.rows, kRowGrain, [&](int64_t begin, int64_t end) {
    std::vector<float> row(shape.vocab);
    for (int64_t r = begin; r < end; ++r) {
      loadRow(dtype, logits, r, shape.vocab, row.data());
      float max = -std::numeric_limits<float>::infinity();
      for (float value : row)
        max = std::max(max, value);
      float sum = 0;
      for (float value : row)
        sum += std::exp(value - max);
      lse[r] = max + std::log(sum);
      int64_t label = labelAt(shape.labelsDtype, labels, r);
      terms[r] = label == shape.ignoreIndex ? 0.0f : lse[r] - row[label];
    }
  });
  double total = 0;
  int64_t counted = 0;
  for (int64_t r = 0; r < shape.rows; ++r) {
    if (labelAt(shape.labelsDtype, labels, r) == shape.ignoreIndex)
      continue;
    total += terms[r];
    ++counted;
  }
  *parts.count = float(counted);
  *loss = counted ? float(total / double(counted))
                  : std::numeric_limits<float>::quiet_NaN();
}

} // namespace

Status cpu::rmsNorm(ThreadPool &pool, int32_t dtype, int32_t weightDtype,
                    const void *x, const void *weight, void *y, int64_t rows,
                    int64_t cols, double eps) {
  const char *op = "rms_norm";
  TITANRT_RETURN_IF_ERROR(
      checkRmsNorm(op, dtype, weightDtype, x, weight, rows, cols));
  TITANRT_RETURN_IF_ERROR(checkBuffer(op, "y", y, {rows, cols}));
  std::vector<float> w(cols);
  loadRow(weightDtype, weight, 0, cols, w.data());
  pool.parallelFor(rows, kRowGrain, [&](int64_t begin, int64_t end) {
    std::vector<float> row(cols);
    for (int64_t r = begin; r < end; ++r) {
      loadRow(dtype, x, r, cols, row.data());
      float scale = inverseRms(row.data(), cols, eps);
      for (int64_t c = 0; c < cols; ++c)
        row[c] = row[c] * scale * w[c];
      storeRow(dtype, row.data(), y, r, cols);
    }
  });
  return Status::success();
}

Status cpu::rmsNormGrad(ThreadPool &pool, int32_t dtype, int32_t weightDtype,
                        const void *x, const void *weight, const void *grad,
                        const void *addend, void *dx, void *dweight,
                        void *workspace, int64_t rows, int64_t cols,
                        double eps) {
  const char *op = "rms_norm_grad";
  TITANRT_RETURN_IF_ERROR(
      checkRmsNorm(op, dtype, weightDtype, x, weight, rows, cols));
  TITANRT_RETURN_IF_ERROR(checkBuffer(op, "grad", grad, {rows, cols}));
  TITANRT_RETURN_IF_ERROR(checkBuffer(op, "dx", dx, {rows, cols}));
  TITANRT_RETURN_IF_ERROR(checkBuffer(op, "dweight", dweight, {cols}));
  TITANRT_RETURN_IF_ERROR(
      checkAddend(op, addend, dx, rows * cols * int64_t(dtypeSize(dtype))));
  int64_t partials =
      titanrt_rms_norm_grad_workspace_bytes(rows, 1) / int64_t(sizeof(float));
  TITANRT_RETURN_IF_ERROR(
      checkBuffer(op, "workspace", workspace, {partials, cols}));
  std::vector<float> w(cols);
  loadRow(weightDtype, weight, 0, cols, w.data());
  float *partial = static_cast<float *>(workspace);
  // Partial p sums rows p, p + partials, ... in order: one range owns it.
  pool.parallelFor(partials, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> xs(cols), gs(cols), addends(addend ? cols : 0);
    for (int64_t p = begin; p < end; ++p) {
      float *sums = partial + p * cols;
      std::fill(sums, sums + cols, 0.0f);
      for (int64_t r = p; r < rows; r += partials) {
        loadRow(dtype, x, r, cols, xs.data());
        loadRow(dtype, grad, r, cols, gs.data());
        float scale = inverseRms(xs.data(), cols, eps);
        float dot = 0;
        for (int64_t c = 0; c < cols; ++c)
          dot += gs[c] * w[c] * xs[c];
        float mean = dot / float(cols);
        for (int64_t c = 0; c < cols; ++c) {
          sums[c] += gs[c] * xs[c] * scale;
          gs[c] = scale * (gs[c] * w[c] - xs[c] * scale * scale * mean);
        }
        if (addend) {
          loadRow(dtype, addend, r, cols, addends.data());
          for (int64_t c = 0; c < cols; ++c)
            gs[c] += addends[c];
        }
        storeRow(dtype, gs.data(), dx, r, cols);
      }
    }
  });
  std::vector<float> total(cols, 0.0f);
  for (int64_t p = 0; p < partials; ++p)
    for (int64_t c = 0; c < cols; ++c)
      total[c] += partial[p * cols + c];
  storeRow(weightDtype, total.data(), dweight, 0, cols);
  return Status::success();
}

Status cpu::crossEntropy(ThreadPool &pool, int32_t dtype,
                         const LossShape &shape, const void *logits,
                         const void *labels, float *loss, void *workspace) {
  const char *op = "cross_entropy";
  TITANRT_RETURN_IF_ERROR(
      checkLoss(op, dtype, shape, logits, labels, workspace));
  TITANRT_RETURN_IF_ERROR(checkBuffer(op, "loss", loss, {1}));
  LossWorkspace parts = splitLossWorkspace(workspace, shape.rows);
  computeLoss(pool, dtype, shape, logits, labels, parts, loss);
  return Status::success();
}

Status cpu::crossEntropyGrad(ThreadPool &pool, int32_t dtype,
                             const LossShape &shape, const void *logits,
                             const void *labels, const float *grad,
                             void *dlogits, void *workspace) {
  const char *op = "cross_entropy_grad";
  TITANRT_RETURN_IF_ERROR(
      checkLoss(op, dtype, shape, logits, labels, workspace));
  TITANRT_RETURN_IF_ERROR(checkBuffer(op, "grad", grad, {1}));
  TITANRT_RETURN_IF_ERROR(
      checkBuffer(op, "dlogits", dlogits, {shape.rows, shape.vocab}));
  LossWorkspace parts = splitLossWorkspace(workspace, shape.rows);
  computeLoss(pool, dtype, shape, logits, labels, parts, parts.loss);
  // As PyTorch: all zero when every label is ignored.
  float factor = *parts.count > 0 ? *grad / *parts.count : 0.0f;
  pool.parallelFor(shape.rows, kRowGrain, [&](int64_t begin, int64_t end) {
    std::vector<float> row(shape.vocab);
    for (int64_t r = begin; r < end; ++r) {
      int64_t label = labelAt(shape.labelsDtype, labels, r);
      if (label == shape.ignoreIndex) {
        std::fill(row.begin(), row.end(), 0.0f);
      } else {
        loadRow(dtype, logits, r, shape.vocab, row.data());
        for (float &value : row)
          value = factor * std::exp(value - parts.lse[r]);
        row[label] -= factor;
      }
      storeRow(dtype, row.data(), dlogits, r, shape.vocab);
    }
  });
  return Status::success();
}
