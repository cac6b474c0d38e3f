//===- CpuBackend.h - the CPU backend's compute -----------------*- C++ -*-===//
//
// ComputeBackend on the rank's threads: OpenBLAS GEMMs and titan's CPU
// kernels (CpuKernels.h), each call done when it returns.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CPU_CPUBACKEND_H
#define TITAN_RUNTIME_CPU_CPUBACKEND_H

#include "core/ComputeBackend.h"
#include "cpu/ThreadPool.h"

namespace titan::rt::cpu {

/// The CPU backend's compute on `threads` threads (the calling thread
/// included).
class CpuBackend final : public ComputeBackend {
public:
  explicit CpuBackend(int threads) : pool(threads) {}

  const char *getName() const override { return "cpu"; }
  Status matmul(int32_t dtype, const void *a, const void *b, const void *addend,
                void *c, int64_t batch, int64_t m, int64_t n, int64_t k,
                bool transposeA, bool transposeB, bool bShared) override;
  Status attention(int32_t dtype, const AttentionShape &shape, const void *q,
                   const void *k, const void *v, void *out,
                   float *lse) override;
  Status attentionGrad(int32_t dtype, const AttentionShape &shape,
                       const void *q, const void *k, const void *v,
                       const void *out, const float *lse, const void *grad,
                       void *dq, void *dk, void *dv, void *workspace) override;
  Status embeddingGrad(int32_t dtype, int32_t idsDtype, const void *ids,
                       const void *grad, void *out, int64_t numIds,
                       int64_t vocab, int64_t dim) override;
  Status findIdOutside(int32_t idsDtype, const void *ids, int64_t numIds,
                       int64_t bound, int64_t &position, int64_t &id) override;
  Status rmsNorm(int32_t dtype, int32_t weightDtype, const void *x,
                 const void *weight, void *y, int64_t rows, int64_t cols,
                 double eps) override;
  Status rmsNormGrad(int32_t dtype, int32_t weightDtype, const void *x,
                     const void *weight, const void *grad, const void *addend,
                     void *dx, void *dweight, void *workspace, int64_t rows,
                     int64_t cols, double eps) override;
  Status crossEntropy(int32_t dtype, const LossShape &shape, const void *logits,
                      const void *labels, float *loss,
                      void *workspace) override;
  Status crossEntropyGrad(int32_t dtype, const LossShape &shape,
                          const void *logits, const void *labels,
                          const float *grad, void *dlogits,
                          void *workspace) override;
  Status squaredNorm(const std::vector<titanrt_norm_tensor> &tensors,
                     float *out) override;
  Status adamW(const std::vector<titanrt_adamw_tensor> &tensors,
               const AdamWCall &call) override;
  Status copy(const void *in, void *out, int64_t bytes) override;
  Status writeInteger(int32_t dtype, int64_t value, void *out) override;

private:
  ThreadPool pool;
};

} // namespace titan::rt::cpu

#endif // TITAN_RUNTIME_CPU_CPUBACKEND_H
