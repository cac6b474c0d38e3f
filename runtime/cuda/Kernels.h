//===- Kernels.h - the CUDA backend's own kernels ---------------*- C++ -*-===//
//
// Host launchers of titan's CUDA kernels. Each checks its arguments (a
// Status names the bad one), chooses its launch shape with LaunchConfig.h's
// pure functions, and queues the kernel on `stream`; nothing synchronizes.
// Tensors are dense, row-major device buffers; `dtype` is a titanrt_dtype,
// TITANRT_F32 or TITANRT_BF16 (inputs and outputs in that type, math in
// f32). Reference.h has a CPU reference of every kernel, and
// docs/cuda-backend.md describes the algorithms.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_KERNELS_H
#define TITAN_RUNTIME_CUDA_KERNELS_H

#include "core/Status.h"
#include "cuda/LaunchConfig.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace titan::rt::cuda {

//===----------------------------------------------------------------------===//
// RMSNorm (titan.rms_norm, titan.rms_norm_grad)
//===----------------------------------------------------------------------===//

/// y = x * rsqrt(mean(x^2, -1) + eps) * weight over rows of `cols`
/// elements; x and y of `dtype`, weight [cols] of `weightDtype`.
Status rmsNormForward(cudaStream_t stream, int32_t dtype, int32_t weightDtype,
                      const void *x, const void *weight, void *y, int64_t rows,
                      int64_t cols, double eps);

/// dx = r * (g - x * r^2 * mean(g * x, -1)) with g = dy * weight and
/// r = rsqrt(mean(x^2) + eps), recomputed; dweight = sum over rows of
/// dy * x * r, in `weightDtype`, bitwise reproducible. An optional
/// `addend` (like x; it may be dx) is added to dx before it is rounded.
/// `workspace` holds rmsNormBackwardWorkspaceBytes(rows, cols) bytes.
Status rmsNormBackward(cudaStream_t stream, int32_t dtype, int32_t weightDtype,
                       const void *x, const void *weight, const void *dy,
                       const void *addend, void *dx, void *dweight,
                       void *workspace, int64_t rows, int64_t cols, double eps);

//===----------------------------------------------------------------------===//
// RoPE (titan.rope)
//===----------------------------------------------------------------------===//

/// Rotates pair j of position s of x [batch, seq, heads, headDim] by the
/// angle whose cosine and sine are cos[s, j], sin[s, j] (tables [seq,
/// headDim / 2] of `tableDtype`): (a, b) -> (a c - b s, a s + b c). `out`
/// may be `x`.
Status ropeForward(cudaStream_t stream, int32_t dtype, int32_t tableDtype,
                   const void *x, const void *cos, const void *sin, void *out,
                   int64_t batch, int64_t seq, int64_t heads, int64_t headDim,
                   RopeStyle style);

/// The cotangent of ropeForward: the rotation by the opposite angle,
/// (ga, gb) -> (ga c + gb s, gb c - ga s). `dx` may be `dout`.
Status ropeBackward(cudaStream_t stream, int32_t dtype, int32_t tableDtype,
                    const void *dout, const void *cos, const void *sin,
                    void *dx, int64_t batch, int64_t seq, int64_t heads,
                    int64_t headDim, RopeStyle style);

//===----------------------------------------------------------------------===//
// SwiGLU (Llama's feed-forward gate: silu(x w1) * (x w3))
//===----------------------------------------------------------------------===//

/// out[r, c] = silu(gate[r, c]) * up[r, c], silu(a) = a * sigmoid(a), for
/// rows x cols elements; gate and up are read with row stride
/// `inputStride` (>= cols; 2 * cols reads one fused [rows, 2 cols] GEMM
/// output whose halves are `gate` and `up`), out is contiguous.
Status swiGluForward(cudaStream_t stream, int32_t dtype, const void *gate,
                     const void *up, void *out, int64_t rows, int64_t cols,
                     int64_t inputStride);

/// dgate = dout * up * sigmoid(a) * (1 + a * (1 - sigmoid(a))) and
/// dup = dout * silu(a) (a = gate), written with row stride `inputStride`
/// like the inputs; dout is contiguous.
Status swiGluBackward(cudaStream_t stream, int32_t dtype, const void *gate,
                      const void *up, const void *dout, void *dgate, void *dup,
                      int64_t rows, int64_t cols, int64_t inputStride);

//===----------------------------------------------------------------------===//
// Softmax over the last dimension (titan.softmax)
//===----------------------------------------------------------------------===//

/// y = exp(x - max) / sum(exp(x - max)) per row of `cols` elements.
Status softmaxForward(cudaStream_t stream, int32_t dtype, const void *x,
                      void *y, int64_t rows, int64_t cols);

/// dx = y * (dy - sum(dy * y)) per row.
Status softmaxBackward(cudaStream_t stream, int32_t dtype, const void *y,
                       const void *dy, void *dx, int64_t rows, int64_t cols);

//===----------------------------------------------------------------------===//
// Attention (titan.attention, titan.attention_grad)
//===----------------------------------------------------------------------===//

/// out = softmax(q k^T * scale (+ causal mask)) v per batch and query head
/// (query head h reads KV head h / (qHeads / kvHeads)), flash-style: key
/// tiles stream through shared memory with an online softmax, no [seq,
/// seq] matrix. Also writes `lse` [batch, qHeads, seq] (f32): each query
/// row's natural log-sum-exp of its scaled scores, which the backward
/// reads. titan's kernels: on tensor cores where they apply unless
/// `kernels` is CudaCores (cuDNN's are CudaBackend's choice, not these).
Status attentionForward(cudaStream_t stream, int32_t dtype,
                        const AttentionShape &shape, const void *q,
                        const void *k, const void *v, void *out, float *lse,
                        AttentionKernels kernels = AttentionKernels::Titan);

/// dq, dk, dv of attentionForward given dout, recomputing the
/// probabilities from q, k and `lse`: dv = p^T dout, ds = p * (dout v^T -
/// rowsum(dout * out)), dq = ds k * scale, dk = ds^T q * scale; dk and dv
/// sum over the query heads of their group. No atomics: bitwise
/// reproducible. `workspace` holds attentionBackwardWorkspaceBytes(shape)
/// bytes.
Status attentionBackward(cudaStream_t stream, int32_t dtype,
                         const AttentionShape &shape, const void *q,
                         const void *k, const void *v, const void *out,
                         const void *dout, const float *lse, void *dq, void *dk,
                         void *dv, void *workspace,
                         AttentionKernels kernels = AttentionKernels::Titan);

//===----------------------------------------------------------------------===//
// Cross-entropy (titan.cross_entropy, titan.cross_entropy_grad)
//
// The mean over rows whose label is not `ignoreIndex` of logsumexp(logits
// row) - logits[row, label], in three steps so that the vocabulary may be
// sharded over tensor-parallel ranks (loss parallel):
//   1. crossEntropyPartials on each rank's [rows, localVocab] logits, the
//      columns of global ids [vocabStart, vocabStart + localVocab);
//   2. vocabulary-parallel only: all-reduce MAX of rowMax into globalMax,
//      crossEntropyRescale, then all-reduce SUM of rowSumExp and
//      targetLogit;
//   3. crossEntropyFinish (the loss, the rows' log-sum-exp and the count).
// Labels are TITANRT_I64 or TITANRT_I32 (`labelsDtype`).
//===----------------------------------------------------------------------===//

/// Per row, over this rank's columns: rowMax = max, rowSumExp = sum of
/// exp(logit - rowMax), targetLogit = logits[label - vocabStart] if the
/// label is one of these columns (and not ignored), else 0. All f32 [rows].
Status crossEntropyPartials(cudaStream_t stream, int32_t dtype,
                            const CrossEntropyShape &shape, const void *logits,
                            const void *labels, float *rowMax, float *rowSumExp,
                            float *targetLogit);

/// rowSumExp *= exp(rowMax - globalMax) per row: this rank's sums relative
/// to the maximum over all ranks, ready to be summed across them. globalMax
/// is another buffer than rowMax (the all-reduce's output).
Status crossEntropyRescale(cudaStream_t stream, const float *rowMax,
                           const float *globalMax, float *rowSumExp,
                           int64_t rows);

/// lse = rowMax + log(rowSumExp) per row; `loss` (f32 scalar) = the mean
/// of lse - targetLogit over the rows not ignored (NaN when all are, as
/// PyTorch); `validCount` (f32 scalar, may be null) = their number (exact
/// below 2^24 rows). Deterministic. Under vocabulary parallelism rowMax is
/// the global maximum and the sums and targets the all-reduced ones; `shape`
/// needs only rows, ignoreIndex and labelsDtype.
Status crossEntropyFinish(cudaStream_t stream, const CrossEntropyShape &shape,
                          const float *rowMax, const float *rowSumExp,
                          const float *targetLogit, const void *labels,
                          float *loss, float *lse, float *validCount);

/// dlogits[r, c] = gradLoss * (exp(logits[r, c] - lse[r]) - [vocabStart +
/// c == label]) / validCount for rows not ignored, 0 for the others
/// (gradLoss, validCount: f32 scalars on the device). dlogits may be
/// logits.
Status crossEntropyBackward(cudaStream_t stream, int32_t dtype,
                            const CrossEntropyShape &shape, const void *logits,
                            const void *labels, const float *lse,
                            const float *gradLoss, const float *validCount,
                            void *dlogits);

//===----------------------------------------------------------------------===//
// Embedding (titan.embedding, titan.embedding_grad)
//===----------------------------------------------------------------------===//

/// out[i, :] = table[ids[i], :] for i < numIds; table [vocab, dim]. Ids
/// outside [0, vocab) (which the data loader rejects) give zero rows.
Status embeddingForward(cudaStream_t stream, int32_t dtype, const void *table,
                        int32_t idsDtype, const void *ids, void *out,
                        int64_t numIds, int64_t vocab, int64_t dim);

/// titanrt_check_ids' search: the first of `numIds` ids outside [0,
/// bound), its index in `position` (-1 when none) and its value in `id`.
/// `workspace` holds findIdOutsideWorkspaceBytes; the call waits for the
/// stream (the answer is the host's).
Status findIdOutside(cudaStream_t stream, int32_t idsDtype, const void *ids,
                     int64_t numIds, int64_t bound, void *workspace,
                     int64_t &position, int64_t &id);

/// The bytes of findIdOutside's workspace: the first position found.
constexpr int64_t findIdOutsideWorkspaceBytes = sizeof(unsigned long long);

/// out [vocab, dim] = 0, then out[ids[i]] += grad[i] for i < numIds (ids
/// outside [0, vocab) are skipped), deterministically without sorting: a
/// histogram and scan of the ids place the positions of each id in
/// increasing order (a stable counting scatter), and each row sums its
/// positions' gradients in that order, in f32. `workspace` holds
/// embeddingGradWorkspaceBytes(numIds, vocab) bytes; numIds < 2^31.
Status embeddingBackward(cudaStream_t stream, int32_t dtype, int32_t idsDtype,
                         const void *ids, const void *grad, void *out,
                         void *workspace, int64_t numIds, int64_t vocab,
                         int64_t dim);

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_KERNELS_H
