//===- CpuKernels.h - the CPU backend's hand-written kernels ----*- C++ -*-===//
//
// The operations compiled code calls into the CPU backend for (titanrt.h
// documents each): GEMMs through OpenBLAS, blocked causal attention and its
// backward, the embedding scatter-add, RMSNorm, cross-entropy and AdamW. Arguments are
// checked (a Status names what is wrong); the work is spread over `pool`.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CPU_CPUKERNELS_H
#define TITAN_RUNTIME_CPU_CPUKERNELS_H

#include "core/Status.h"
#include "cpu/ThreadPool.h"

#include <cstdint>
#include <vector>

namespace titan::rt {
struct AdamWCall;     // core/ComputeBackend.h
struct LossShape;     // core/ComputeBackend.h
} // namespace titan::rt

namespace titan::rt::cpu {

/// titanrt_matmul: F32 and F64 through OpenBLAS (BF16 and F16 on float32
/// copies), cut into single-threaded GEMMs (a batch entry times a panel of
/// C) that the pool runs (Gemm.cpp); an addend is BLAS's C with beta = 1.
Status matmul(ThreadPool &pool, int32_t dtype, const void *a, const void *b,
              const void *addend, void *c, int64_t batch, int64_t m, int64_t n,
              int64_t k, bool transposeA, bool transposeB, bool bShared);

/// titanrt_attention: F32 (BF16 and F16 on float32 copies), flash-attention
/// style, with each query row's log-sum-exp in `lse` (Attention.cpp);
/// bitwise equal results for any number of threads.
Status attention(ThreadPool &pool, int32_t dtype, const void *q, const void *k,
                 const void *v, void *out, float *lse, int64_t batch,
                 int64_t qHeads, int64_t kvHeads, int64_t seq, int64_t headDim,
                 bool causal, double scale);

/// titanrt_attention_grad: F32 (BF16 and F16 on float32 copies), from the
/// forward's `out` and `lse`; the workspace receives each query row's
/// rowsum(dO * O) (Attention.cpp); bitwise equal results for any number of
/// threads.
Status attentionGrad(ThreadPool &pool, int32_t dtype, const void *q,
                     const void *k, const void *v, const void *out,
                     const float *lse, const void *grad, void *dq, void *dk,
                     void *dv, void *workspace, int64_t batch, int64_t qHeads,
                     int64_t kvHeads, int64_t seq, int64_t headDim, bool causal,
                     double scale);

/// titanrt_check_ids' search (ComputeBackend::findIdOutside): the first of
/// `numIds` ids outside [0, bound), its index in `position` (-1 when none)
/// and its value in `id`.
Status findIdOutside(int32_t idsDtype, const void *ids, int64_t numIds,
                     int64_t bound, int64_t &position, int64_t &id);

/// titanrt_embedding_grad: F32 and F64, ids I64 or I32, checked before
/// anything is written (Embedding.cpp); bitwise equal results for any number
/// of threads.

Status embeddingGrad(ThreadPool &pool, int32_t dtype, int32_t idsDtype,
                     const void *ids, const void *grad, void *out,
                     int64_t numIds, int64_t vocab, int64_t dim);

/// titanrt_rms_norm: F32 and BF16 (RowKernels.cpp).
Status rmsNorm(ThreadPool &pool, int32_t dtype, int32_t weightDtype,
               const void *x, const void *weight, void *y, int64_t rows,
               int64_t cols, double eps);

/// titanrt_rms_norm_grad: F32 and BF16, the weight gradient summed through
/// the workspace's partials, an optional addend added to dx's rows before
/// they are stored; bitwise equal results for any number of threads.
Status rmsNormGrad(ThreadPool &pool, int32_t dtype, int32_t weightDtype,
                   const void *x, const void *weight, const void *grad,
                   const void *addend, void *dx, void *dweight, void *workspace,
                   int64_t rows, int64_t cols, double eps);

/// titanrt_cross_entropy: F32 and BF16 logits; labels are checked before
/// anything is written. Bitwise equal results for any number of threads.
Status crossEntropy(ThreadPool &pool, int32_t dtype, const LossShape &shape,
                    const void *logits, const void *labels, float *loss,
                    void *workspace);

/// titanrt_cross_entropy_grad: as crossEntropy.
Status crossEntropyGrad(ThreadPool &pool, int32_t dtype, const LossShape &shape,
                        const void *logits, const void *labels,
                        const float *grad, void *dlogits, void *workspace);

/// titanrt_squared_norm: f32 or bf16 tensors, checked first; the same
/// bits for any number of threads (Optimizer.cpp).
Status squaredNorm(ThreadPool &pool,
                   const std::vector<titanrt_norm_tensor> &tensors, float *out);

/// titanrt_fused_adamw: f32 or bf16 gradients, every tensor's arguments
/// and the step's lr and step checked before anything is written
/// (Optimizer.cpp); bitwise equal results for any number of threads.
Status adamW(ThreadPool &pool, const std::vector<titanrt_adamw_tensor> &tensors,
             const AdamWCall &call);

} // namespace titan::rt::cpu

#endif // TITAN_RUNTIME_CPU_CPUKERNELS_H
