//===- AttentionKernels.h - attention kernels per target --------*- C++ -*-===//
//
// The blocked attention kernels (AttentionKernels.inc) are compiled once per
// instruction set: AttentionV3.cpp for x86-64-v3 (AVX2, FMA; the compiler's
// default target on other architectures) and AttentionV4.cpp for x86-64-v4
// (AVX-512, twice the vector width). Attention.cpp checks the arguments and
// calls the widest set the CPU runs. Both compute the same floating-point
// operations per element, so they give bitwise equal results.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CPU_ATTENTIONKERNELS_H
#define TITAN_RUNTIME_CPU_ATTENTIONKERNELS_H

#include "cpu/ThreadPool.h"

#include <cstdint>

namespace titan::rt::cpu {

/// The sizes of one attention call, checked (titanrt.h names them). Heads
/// are numbered flat over the batch (batch entry b, q head h is head b *
/// qHeads + h); each head is a [seq, headDim] matrix.
struct AttentionShape {
  int64_t batch, qHeads, kvHeads, seq, headDim;
  /// Whether a query sees only the keys up to its own position.
  bool causal;
  /// The factor of q k^T.
  float scale;
};

/// The attention kernels compiled for one instruction set.
struct AttentionKernels {
  /// The target they are compiled for: "x86-64-v3", "x86-64-v4" or
  /// "generic".
  const char *target;
  /// titanrt_attention on checked arguments.
  void (*forward)(ThreadPool &pool, const AttentionShape &shape, const float *q,
                  const float *k, const float *v, float *out, float *lse);
  /// titanrt_attention_grad on checked arguments.
  void (*backward)(ThreadPool &pool, const AttentionShape &shape,
                   const float *q, const float *k, const float *v,
                   const float *out, const float *lse, const float *grad,
                   float *dq, float *dk, float *dv, float *workspace);
};

/// The kernels of AttentionV3.cpp.
extern const AttentionKernels attentionKernelsV3;
#ifdef __x86_64__
/// The kernels of AttentionV4.cpp.
extern const AttentionKernels attentionKernelsV4;
#endif

/// The kernels of the widest instruction set this CPU runs, or null if it
/// runs none (an x86-64 CPU without AVX2 and FMA).
const AttentionKernels *getAttentionKernels();

} // namespace titan::rt::cpu

#endif // TITAN_RUNTIME_CPU_ATTENTIONKERNELS_H
