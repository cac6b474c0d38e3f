//===- Widen.cpp - float32 copies of bf16 and f16 buffers -----------------===//

#include "cpu/Widen.h"

#include "core/LowPrecision.h"
#include "titan/Runtime/titanrt.h"

using namespace titan::rt;
using namespace titan::rt::cpu;

namespace {

/// Elements converted per task: large enough that waking a thread pays.
constexpr int64_t kConvertGrain = int64_t(1) << 16;

} // namespace

bool cpu::isNarrowFloat(int32_t dtype) {
  return dtype == TITANRT_BF16 || dtype == TITANRT_F16;
}

std::vector<float> cpu::widen(ThreadPool &pool, int32_t dtype,
                              const void *source, int64_t count) {
  std::vector<float> values(count);
  pool.parallelFor(count, kConvertGrain, [&](int64_t begin, int64_t end) {
    if (dtype == TITANRT_BF16) {
      const auto *bits = static_cast<const uint16_t *>(source);
      for (int64_t i = begin; i < end; ++i)
        values[i] = bf16ToFloat(bits[i]);
    } else {
      const auto *halves = static_cast<const _Float16 *>(source);
      for (int64_t i = begin; i < end; ++i)
        values[i] = float(halves[i]);
    }
  });
  return values;
}

void cpu::narrow(ThreadPool &pool, int32_t dtype,
                 const std::vector<float> &values, void *target) {
  int64_t count = int64_t(values.size());
  pool.parallelFor(count, kConvertGrain, [&](int64_t begin, int64_t end) {
    narrowFloats(dtype, values.data(), target, begin, end);
  });
}
