//===- CpuBackend.cpp - the CPU backend's compute -------------------------===//

#include "cpu/CpuBackend.h"

#include "cpu/CpuKernels.h"

#include "titan/Runtime/titanrt.h"

#include <cstring>

using namespace titan::rt;
using namespace titan::rt::cpu;

Status CpuBackend::matmul(int32_t dtype, const void *a, const void *b,
                          const void *addend, void *c, int64_t batch, int64_t m,
                          int64_t n, int64_t k, bool transposeA,
                          bool transposeB, bool bShared) {
  return cpu::matmul(pool, dtype, a, b, addend, c, batch, m, n, k, transposeA,
                     transposeB, bShared);
}

Status CpuBackend::attention(int32_t dtype, const AttentionShape &shape,
                             const void *q, const void *k, const void *v,
                             void *out, float *lse) {
  return cpu::attention(pool, dtype, q, k, v, out, lse, shape.batch,
                        shape.qHeads, shape.kvHeads, shape.seq, shape.headDim,
                        shape.causal, shape.scale);
}

Status CpuBackend::attentionGrad(int32_t dtype, const AttentionShape &shape,
                                 const void *q, const void *k, const void *v,
                                 const void *out, const float *lse,
                                 const void *grad, void *dq, void *dk, void *dv,
                                 void *workspace) {
  return cpu::attentionGrad(pool, dtype, q, k, v, out, lse, grad, dq, dk, dv,
                            workspace, shape.batch, shape.qHeads, shape.kvHeads,
                            shape.seq, shape.headDim, shape.causal,
                            shape.scale);
}

Status CpuBackend::embeddingGrad(int32_t dtype, int32_t idsDtype,
                                 const void *ids, const void *grad, void *out,
                                 int64_t numIds, int64_t vocab, int64_t dim) {
  return cpu::embeddingGrad(pool, dtype, idsDtype, ids, grad, out, numIds,
                            vocab, dim);
}

Status CpuBackend::findIdOutside(int32_t idsDtype, const void *ids,
                                 int64_t numIds, int64_t bound,
                                 int64_t &position, int64_t &id) {
  return cpu::findIdOutside(idsDtype, ids, numIds, bound, position, id);
}

Status CpuBackend::rmsNorm(int32_t dtype, int32_t weightDtype, const void *x,
                           const void *weight, void *y, int64_t rows,
                           int64_t cols, double eps) {
  return cpu::rmsNorm(pool, dtype, weightDtype, x, weight, y, rows, cols, eps);
}

Status CpuBackend::rmsNormGrad(int32_t dtype, int32_t weightDtype,
                               const void *x, const void *weight,
                               const void *grad, const void *addend, void *dx,
                               void *dweight, void *workspace, int64_t rows,
                               int64_t cols, double eps) {
  return cpu::rmsNormGrad(pool, dtype, weightDtype, x, weight, grad, addend, dx,
                          dweight, workspace, rows, cols, eps);
}

Status CpuBackend::crossEntropy(int32_t dtype, const LossShape &shape,
                                const void *logits, const void *labels,
                                float *loss, void *workspace) {
  return cpu::crossEntropy(pool, dtype, shape, logits, labels, loss, workspace);
}

Status CpuBackend::crossEntropyGrad(int32_t dtype, const LossShape &shape,
                                    const void *logits, const void *labels,
                                    const float *grad, void *dlogits,
                                    void *workspace) {
  return cpu::crossEntropyGrad(pool, dtype, shape, logits, labels, grad,
                               dlogits, workspace);
}

Status CpuBackend::squaredNorm(const std::vector<titanrt_norm_tensor> &tensors,
                               float *out) {
  return cpu::squaredNorm(pool, tensors, out);
}

Status CpuBackend::adamW(const std::vector<titanrt_adamw_tensor> &tensors,
                         const AdamWCall &call) {
  return cpu::adamW(pool, tensors, call);
}

Status CpuBackend::copy(const void *in, void *out, int64_t bytes) {
  std::memcpy(out, in, bytes);
  return Status::success();
}

Status CpuBackend::writeInteger(int32_t dtype, int64_t value, void *out) {
  if (dtype == TITANRT_I64) {
    std::memcpy(out, &value, sizeof(value));
  } else {
    int32_t narrow = static_cast<int32_t>(value);
    std::memcpy(out, &narrow, sizeof(narrow));
  }
  return Status::success();
}
