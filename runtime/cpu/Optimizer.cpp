//===- Optimizer.cpp - AdamW on the CPU -----------------------------------===//
//
// titanrt_squared_norm: the gradients' squared global norm, per chunk of
// a tensor on the pool, the chunks' sums added in order. titanrt_fused_adamw:
// the step's scalars in double (core/AdamW.h), then every element of each
// tensor in float32 in titan.adamw's order (bf16 values widened, results
// rounded once), over ranges of elements on the pool. The file is compiled for
// the baseline instruction set: no FMA contracts two of the operations into
// one, so each is rounded as the op's definition (and the reference
// interpreter) rounds it. (The compiled kernels of the expanded update may
// contract, so they can differ in the last bit.)
//
//===----------------------------------------------------------------------===//

#include "cpu/Arguments.h"
#include "cpu/CpuKernels.h"

#include "core/AdamW.h"
#include "core/ComputeBackend.h"
#include "core/LowPrecision.h"

#include <algorithm>
#include <string>
#include <utility>

using namespace titan::rt;
using namespace titan::rt::cpu;

namespace {

/// Elements per parallel range.
constexpr int64_t kAdamWGrain = 1 << 14;

/// Element i of `data` (of type T: float, or uint16_t holding bf16) as a
/// float.
template <typename T> float load(const void *data, int64_t i) {
  if constexpr (std::is_same_v<T, float>)
    return static_cast<const float *>(data)[i];
  else
    return bf16ToFloat(static_cast<const uint16_t *>(data)[i]);
}

/// Stores `value` as element i of `data` (of type T), rounded to nearest
/// even for bf16.
template <typename T> void store(void *data, int64_t i, float value) {
  if constexpr (std::is_same_v<T, float>)
    static_cast<float *>(data)[i] = value;
  else
    static_cast<uint16_t *>(data)[i] = floatToBf16(value);
}

/// Updates elements [begin, end) of `t` (parameters and moments of type P,
/// gradients of type G), the gradients multiplied by `gradScale` when
/// `scaled`: in float32, each result rounded to P once.
template <typename P, typename G>
void update(const titanrt_adamw_tensor &t, const AdamWScalars &s, bool scaled,
            float gradScale, int64_t begin, int64_t end) {
  uint16_t *paramCopyOut = static_cast<uint16_t *>(t.param_copy_out);
  for (int64_t i = begin; i < end; ++i) {
    float g = load<G>(t.grad, i);
    if (scaled)
      g = g * gradScale;
    float param, expAvg, expAvgSq;
    updateAdamWElement(s, g, load<P>(t.param, i), load<P>(t.exp_avg, i),
                       load<P>(t.exp_avg_sq, i), param, expAvg, expAvgSq);
    store<P>(t.param_out, i, param);
    store<P>(t.exp_avg_out, i, expAvg);
    store<P>(t.exp_avg_sq_out, i, expAvgSq);
    if (paramCopyOut)
      paramCopyOut[i] = floatToBf16(param);
  }
}

/// update<P, G> for the dtypes of `t` (checked: f32 or bf16).
void updateRange(const titanrt_adamw_tensor &t, const AdamWScalars &s,
                 bool scaled, float gradScale, int64_t begin, int64_t end) {
  bool bf16Param = t.param_dtype == TITANRT_BF16;
  bool bf16Grad = t.grad_dtype == TITANRT_BF16;
  if (bf16Param && bf16Grad)
    update<uint16_t, uint16_t>(t, s, scaled, gradScale, begin, end);
  else if (bf16Param)
    update<uint16_t, float>(t, s, scaled, gradScale, begin, end);
  else if (bf16Grad)
    update<float, uint16_t>(t, s, scaled, gradScale, begin, end);
  else
    update<float, float>(t, s, scaled, gradScale, begin, end);
}

} // namespace

/// Checks tensor `index` of a fused step (`t`): its dtype and buffers.
static Status checkTensor(const titanrt_adamw_tensor &t, size_t index) {
  const std::string op =
      "titanrt_fused_adamw (tensor " + std::to_string(index) + ")";
  TITANRT_RETURN_IF_ERROR(checkNonNegative(op.c_str(), "numel", t.numel));
  if (t.grad_dtype != TITANRT_F32 && t.grad_dtype != TITANRT_BF16)
    return Status::unsupported(op + ": grad_dtype " +
                               std::to_string(t.grad_dtype) +
                               " (the gradient must be f32 or bf16)");
  if (t.param_dtype != TITANRT_F32 && t.param_dtype != TITANRT_BF16)
    return Status::unsupported(op + ": param_dtype " +
                               std::to_string(t.param_dtype) +
                               " (the parameter must be f32 or bf16)");
  if (t.param_dtype == TITANRT_BF16 && t.param_copy_out)
    return Status::invalidArgument(
        op + ": a bf16 parameter has no narrower copy (param_copy_out must "
             "be null)");
  for (auto [name, pointer] :
       {std::pair{"param", t.param},
        {"grad", t.grad},
        {"exp_avg", t.exp_avg},
        {"exp_avg_sq", t.exp_avg_sq},
        {"param_out", static_cast<const void *>(t.param_out)},
        {"exp_avg_out", static_cast<const void *>(t.exp_avg_out)},
        {"exp_avg_sq_out", static_cast<const void *>(t.exp_avg_sq_out)}})
    TITANRT_RETURN_IF_ERROR(checkBuffer(op.c_str(), name, pointer, {t.numel}));
  if (t.param_copy_out)
    TITANRT_RETURN_IF_ERROR(
        checkBuffer(op.c_str(), "param_copy_out", t.param_copy_out, {t.numel}));
  return Status::success();
}

Status cpu::adamW(ThreadPool &pool,
                  const std::vector<titanrt_adamw_tensor> &tensors,
                  const AdamWCall &call) {
  for (size_t i = 0; i < tensors.size(); ++i)
    TITANRT_RETURN_IF_ERROR(checkTensor(tensors[i], i));
  if (tensors.empty())
    return Status::success();
  const char *op = "titanrt_fused_adamw";
  TITANRT_RETURN_IF_ERROR(checkBuffer(op, "lr", call.lr, {1}));
  TITANRT_RETURN_IF_ERROR(checkBuffer(op, "step", call.step, {1}));
  const AdamWHyperparameters hyper =
      adamWHyperparameters(call, *call.lr, *call.step);
  TITANRT_RETURN_IF_ERROR(checkAdamWHyperparameters(hyper, op));
  const AdamWScalars s = adamWScalars(hyper);
  const bool scaled = call.gradScale != nullptr;
  const float gradScale = scaled ? *call.gradScale : 1.0f;
  for (const titanrt_adamw_tensor &t : tensors)
    pool.parallelFor(t.numel, kAdamWGrain, [&](int64_t begin, int64_t end) {
      updateRange(t, s, scaled, gradScale, begin, end);
    });
  return Status::success();
}

namespace {

/// Elements per chunk of titanrt_squared_norm: the sums the order of
/// additions is fixed by.
constexpr int64_t kNormChunk = 1 << 14;

/// The sum of the squares of elements [begin, end) of `data` (of type T),
/// each squared in float32 and added in double.
template <typename T>
double sumSquares(const void *data, int64_t begin, int64_t end) {
  const T *values = static_cast<const T *>(data);
  double sum = 0;
  for (int64_t i = begin; i < end; ++i) {
    float x;
    if constexpr (std::is_same_v<T, float>)
      x = values[i];
    else
      x = bf16ToFloat(values[i]);
    sum += double(x * x);
  }
  return sum;
}

} // namespace

Status cpu::squaredNorm(ThreadPool &pool,
                        const std::vector<titanrt_norm_tensor> &tensors,
                        float *out) {
  const char *op = "titanrt_squared_norm";
  TITANRT_RETURN_IF_ERROR(checkBuffer(op, "out", out, {1}));
  // Each tensor's chunks: (tensor, first element).
  std::vector<std::pair<size_t, int64_t>> chunks;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const titanrt_norm_tensor &tensor = tensors[i];
    const std::string name = "tensor " + std::to_string(i);
    TITANRT_RETURN_IF_ERROR(checkNonNegative(op, name.c_str(), tensor.numel));
    if (tensor.dtype != TITANRT_F32 && tensor.dtype != TITANRT_BF16)
      return Status::unsupported(std::string(op) + ": " + name + " dtype " +
                                 std::to_string(tensor.dtype) +
                                 " (f32 or bf16)");
    TITANRT_RETURN_IF_ERROR(
        checkBuffer(op, name.c_str(), tensor.data, {tensor.numel}));
    for (int64_t start = 0; start < tensor.numel; start += kNormChunk)
      chunks.push_back({i, start});
  }
  std::vector<double> sums(chunks.size());
  pool.parallelFor(int64_t(chunks.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const auto [index, start] = chunks[size_t(c)];
      const titanrt_norm_tensor &tensor = tensors[index];
      const int64_t stop = std::min(tensor.numel, start + kNormChunk);
      sums[size_t(c)] = tensor.dtype == TITANRT_F32
                            ? sumSquares<float>(tensor.data, start, stop)
                            : sumSquares<uint16_t>(tensor.data, start, stop);
    }
  });
  double total = 0;
  for (double sum : sums)
    total += sum;
  *out = float(total);
  return Status::success();
}
