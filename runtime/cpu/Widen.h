//===- Widen.h - float32 copies of bf16 and f16 buffers ---------*- C++ -*-===//
//
// The CPU kernels compute in float32 (Debian's OpenBLAS has no bf16 GEMM):
// a bf16 or f16 call widens its inputs into float32 copies, runs the
// float32 kernel and rounds the results back once. The copies live on the
// heap for the duration of the call, outside the rank's arena.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CPU_WIDEN_H
#define TITAN_RUNTIME_CPU_WIDEN_H

#include "cpu/ThreadPool.h"

#include <cstdint>
#include <vector>

namespace titan::rt::cpu {

/// Whether the kernels compute `dtype` on float32 copies (bf16, f16).
bool isNarrowFloat(int32_t dtype);

/// The `count` elements of narrow `dtype` at `source` as float32.
std::vector<float> widen(ThreadPool &pool, int32_t dtype, const void *source,
                         int64_t count);

/// Writes `values` rounded to narrow `dtype` (nearest even) to `target`.
void narrow(ThreadPool &pool, int32_t dtype, const std::vector<float> &values,
            void *target);

} // namespace titan::rt::cpu

#endif // TITAN_RUNTIME_CPU_WIDEN_H
