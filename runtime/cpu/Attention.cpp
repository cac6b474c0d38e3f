//===- Attention.cpp - titanrt_attention and titanrt_attention_grad -------===//
//
// Checks the arguments, then runs the kernels of the widest instruction set
// the CPU supports (AttentionKernels.h). Compiled for the baseline target,
// so that a CPU without AVX2 gets an error instead of an illegal
// instruction.
//
//===----------------------------------------------------------------------===//

#include "cpu/Arguments.h"
#include "cpu/AttentionKernels.h"
#include "cpu/CpuKernels.h"
#include "cpu/Widen.h"

using namespace titan::rt;
using namespace titan::rt::cpu;

const AttentionKernels *cpu::getAttentionKernels() {
#ifdef __x86_64__
  static const AttentionKernels *kernels =
      __builtin_cpu_supports("x86-64-v4")   ? &attentionKernelsV4
      : __builtin_cpu_supports("x86-64-v3") ? &attentionKernelsV3
                                            : nullptr;
  return kernels;
#else
  return &attentionKernelsV3;
#endif
}

namespace {

/// Checks the arguments both directions share and finds the kernels.
Status checkAttention(const char *op, int32_t dtype, int64_t batch,
                      int64_t qHeads, int64_t kvHeads, int64_t seq,
                      int64_t headDim, const AttentionKernels *&kernels) {
  TITANRT_RETURN_IF_ERROR(checkFloatDtype(op, dtype, /*allowF64=*/false));
  TITANRT_RETURN_IF_ERROR(checkNonNegative(op, "batch", batch));
  TITANRT_RETURN_IF_ERROR(checkNonNegative(op, "q_heads", qHeads));
  TITANRT_RETURN_IF_ERROR(checkNonNegative(op, "kv_heads", kvHeads));
  TITANRT_RETURN_IF_ERROR(checkNonNegative(op, "seq", seq));
  TITANRT_RETURN_IF_ERROR(checkNonNegative(op, "head_dim", headDim));
  if (kvHeads == 0 ? qHeads != 0 : qHeads % kvHeads != 0)
    return Status::invalidArgument(
        std::string(op) + ": q_heads = " + std::to_string(qHeads) +
        " is not a multiple of kv_heads = " + std::to_string(kvHeads));
  kernels = getAttentionKernels();
  if (!kernels)
    return Status::unsupported(std::string(op) +
                               ": the CPU backend needs an x86-64-v3 CPU "
                               "(AVX2, FMA)");
  return Status::success();
}

} // namespace

Status cpu::attention(ThreadPool &pool, int32_t dtype, const void *q,
                      const void *k, const void *v, void *out, float *lse,
                      int64_t batch, int64_t qHeads, int64_t kvHeads,
                      int64_t seq, int64_t headDim, bool causal, double scale) {
  const char *op = "attention";
  const AttentionKernels *kernels;
  TITANRT_RETURN_IF_ERROR(
      checkAttention(op, dtype, batch, qHeads, kvHeads, seq, headDim, kernels));
  TITANRT_RETURN_IF_ERROR(
      checkBuffer(op, "q", q, {batch, qHeads, seq, headDim}));
  TITANRT_RETURN_IF_ERROR(
      checkBuffer(op, "k", k, {batch, kvHeads, seq, headDim}));
  TITANRT_RETURN_IF_ERROR(
      checkBuffer(op, "v", v, {batch, kvHeads, seq, headDim}));
  TITANRT_RETURN_IF_ERROR(
      checkBuffer(op, "out", out, {batch, qHeads, seq, headDim}));
  TITANRT_RETURN_IF_ERROR(checkBuffer(op, "lse", lse, {batch, qHeads, seq}));
  AttentionShape shape{batch,   qHeads, kvHeads,     seq,
                       headDim, causal, float(scale)};
  if (isNarrowFloat(dtype)) {
    int64_t qSize = batch * qHeads * seq * headDim;
    int64_t kvSize = batch * kvHeads * seq * headDim;
    std::vector<float> wideOut(qSize);
    kernels->forward(pool, shape, widen(pool, dtype, q, qSize).data(),
                     widen(pool, dtype, k, kvSize).data(),
                     widen(pool, dtype, v, kvSize).data(), wideOut.data(), lse);
    narrow(pool, dtype, wideOut, out);
    return Status::success();
  }
  kernels->forward(pool, shape, static_cast<const float *>(q),
                   static_cast<const float *>(k), static_cast<const float *>(v),
                   static_cast<float *>(out), lse);
  return Status::success();
}

Status cpu::attentionGrad(ThreadPool &pool, int32_t dtype, const void *q,
                          const void *k, const void *v, const void *out,
                          const float *lse, const void *grad, void *dq,
                          void *dk, void *dv, void *workspace, int64_t batch,
                          int64_t qHeads, int64_t kvHeads, int64_t seq,
                          int64_t headDim, bool causal, double scale) {
  const char *op = "attention_grad";
  const AttentionKernels *kernels;
  TITANRT_RETURN_IF_ERROR(
      checkAttention(op, dtype, batch, qHeads, kvHeads, seq, headDim, kernels));
  using Buffer = std::pair<const char *, const void *>;
  for (auto [name, pointer] : {Buffer{"q", q}, Buffer{"out", out},
                               Buffer{"grad", grad}, Buffer{"dq", dq}})
    TITANRT_RETURN_IF_ERROR(
        checkBuffer(op, name, pointer, {batch, qHeads, seq, headDim}));
  for (auto [name, pointer] :
       {Buffer{"k", k}, Buffer{"v", v}, Buffer{"dk", dk}, Buffer{"dv", dv}})
    TITANRT_RETURN_IF_ERROR(
        checkBuffer(op, name, pointer, {batch, kvHeads, seq, headDim}));
  for (auto [name, pointer] :
       {Buffer{"lse", lse}, Buffer{"workspace", workspace}})
    TITANRT_RETURN_IF_ERROR(
        checkBuffer(op, name, pointer, {batch, qHeads, seq}));
  AttentionShape shape{batch,   qHeads, kvHeads,     seq,
                       headDim, causal, float(scale)};
  if (isNarrowFloat(dtype)) {
    int64_t qSize = batch * qHeads * seq * headDim;
    int64_t kvSize = batch * kvHeads * seq * headDim;
    std::vector<float> wideDq(qSize), wideDk(kvSize), wideDv(kvSize);
    kernels->backward(pool, shape, widen(pool, dtype, q, qSize).data(),
                      widen(pool, dtype, k, kvSize).data(),
                      widen(pool, dtype, v, kvSize).data(),
                      widen(pool, dtype, out, qSize).data(), lse,
                      widen(pool, dtype, grad, qSize).data(), wideDq.data(),
                      wideDk.data(), wideDv.data(),
                      static_cast<float *>(workspace));
    narrow(pool, dtype, wideDq, dq);
    narrow(pool, dtype, wideDk, dk);
    narrow(pool, dtype, wideDv, dv);
    return Status::success();
  }
  kernels->backward(
      pool, shape, static_cast<const float *>(q), static_cast<const float *>(k),
      static_cast<const float *>(v), static_cast<const float *>(out), lse,
      static_cast<const float *>(grad), static_cast<float *>(dq),
      static_cast<float *>(dk), static_cast<float *>(dv),
      static_cast<float *>(workspace));
  return Status::success();
}
