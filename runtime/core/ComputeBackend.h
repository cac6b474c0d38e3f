//===- ComputeBackend.h - where a rank's runtime calls compute --*- C++ -*-===//
//
// The compute entries of titanrt.def (titanrt_matmul, titanrt_attention,
// titanrt_attention_grad, titanrt_embedding_grad, titanrt_rms_norm(_grad),
// titanrt_cross_entropy(_grad), titanrt_squared_norm,
// titanrt_fused_adamw) and the one value a
// runtime call writes into the step's memory itself (titanrt_axis_index),
// behind one interface: the CPU backend runs them on the rank's threads
// (cpu/CpuBackend.h), the CUDA backend queues them on the rank's compute
// stream (cuda/CudaBackend.h). Pointers are into the step's regions, on
// the backend's device; titanrt.h documents each operation's semantics.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CORE_COMPUTEBACKEND_H
#define TITAN_RUNTIME_CORE_COMPUTEBACKEND_H

#include "core/Status.h"

#include <cstdint>
#include <vector>

namespace titan::rt {

/// The shape of titanrt_attention and titanrt_attention_grad
/// (titan.attention): q and out [batch, qHeads, seq, headDim], k and v
/// [batch, kvHeads, seq, headDim].
struct AttentionShape {
  int64_t batch = 0;
  int64_t qHeads = 0;
  int64_t kvHeads = 0;
  int64_t seq = 0;
  int64_t headDim = 0;
  bool causal = true;
  /// The scores' scale, > 0 (titan.attention's default is
  /// 1 / sqrt(headDim)).
  double scale = 0;
};

/// The shape of titanrt_cross_entropy and titanrt_cross_entropy_grad
/// (titan.cross_entropy): logits [rows, vocab], labels [rows] of
/// `labelsDtype` (a titanrt_dtype).
struct LossShape {
  int64_t rows = 0;
  int64_t vocab = 0;
  int64_t ignoreIndex = -100;
  int32_t labelsDtype = 0;
};

/// What the tensors of one titanrt_fused_adamw call share (each tensor is a
/// titanrt_adamw_tensor): the float32 scalars lr, step and, unless null,
/// gradScale, in the backend's memory, and the hyperparameters.
struct AdamWCall {
  const float *lr = nullptr;
  const float *step = nullptr;
  const float *gradScale = nullptr;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weightDecay = 0.1;
};

/// The compute of one rank. Calls may be asynchronous (queued on a device
/// stream): a result is ready when the step's memory is next synchronized.
class ComputeBackend {
public:
  // Inline (no anchor): runtime/cuda, built alone on GPU machines, links
  // none of runtime/core's sources.
  virtual ~ComputeBackend() = default;

  /// The backend's name ("cpu", "cuda"), for messages.
  virtual const char *getName() const = 0;

  /// titanrt_matmul.
  virtual Status matmul(int32_t dtype, const void *a, const void *b,
                        const void *addend, void *c, int64_t batch, int64_t m,
                        int64_t n, int64_t k, bool transposeA, bool transposeB,
                        bool bShared) = 0;

  /// titanrt_attention of element type `dtype`: `out`, and each query
  /// row's log-sum-exp in `lse` (f32 [batch, qHeads, seq]).
  virtual Status attention(int32_t dtype, const AttentionShape &shape,
                           const void *q, const void *k, const void *v,
                           void *out, float *lse) = 0;

  /// titanrt_attention_grad of element type `dtype`, given the forward's
  /// `out` and `lse`; `workspace` holds
  /// titanrt_attention_grad_workspace_bytes bytes.
  virtual Status attentionGrad(int32_t dtype, const AttentionShape &shape,
                               const void *q, const void *k, const void *v,
                               const void *out, const float *lse,
                               const void *grad, void *dq, void *dk, void *dv,
                               void *workspace) = 0;

  /// titanrt_embedding_grad.
  virtual Status embeddingGrad(int32_t dtype, int32_t idsDtype, const void *ids,
                               const void *grad, void *out, int64_t numIds,
                               int64_t vocab, int64_t dim) = 0;

  /// The first of `numIds` ids (`idsDtype` TITANRT_I64 or TITANRT_I32)
  /// outside [0, bound): sets `position` to its index and `id` to it, or
  /// `position` to -1 when every id lies inside (titanrt_check_ids). Returns
  /// once the ids were read.
  virtual Status findIdOutside(int32_t idsDtype, const void *ids,
                               int64_t numIds, int64_t bound, int64_t &position,
                               int64_t &id) = 0;

  /// titanrt_rms_norm.
  virtual Status rmsNorm(int32_t dtype, int32_t weightDtype, const void *x,
                         const void *weight, void *y, int64_t rows,
                         int64_t cols, double eps) = 0;

  /// titanrt_rms_norm_grad; `workspace` holds
  /// titanrt_rms_norm_grad_workspace_bytes bytes.
  virtual Status rmsNormGrad(int32_t dtype, int32_t weightDtype, const void *x,
                             const void *weight, const void *grad,
                             const void *addend, void *dx, void *dweight,
                             void *workspace, int64_t rows, int64_t cols,
                             double eps) = 0;

  /// titanrt_cross_entropy; `workspace` holds
  /// titanrt_cross_entropy_workspace_bytes bytes.
  virtual Status crossEntropy(int32_t dtype, const LossShape &shape,
                              const void *logits, const void *labels,
                              float *loss, void *workspace) = 0;

  /// titanrt_cross_entropy_grad; `workspace` as for crossEntropy.
  virtual Status crossEntropyGrad(int32_t dtype, const LossShape &shape,
                                  const void *logits, const void *labels,
                                  const float *grad, void *dlogits,
                                  void *workspace) = 0;

  /// titanrt_squared_norm: the sum of the squares of every element of
  /// `tensors` into `out`.
  virtual Status squaredNorm(const std::vector<titanrt_norm_tensor> &tensors,
                             float *out) = 0;

  /// titanrt_fused_adamw: the step of every tensor of `tensors`, with the
  /// lr, step, gradScale and hyperparameters of `call`.
  virtual Status adamW(const std::vector<titanrt_adamw_tensor> &tensors,
                       const AdamWCall &call) = 0;

  /// titanrt_copy: `bytes` bytes from `in` to `out` (not overlapping).
  virtual Status copy(const void *in, void *out, int64_t bytes) = 0;

  /// Writes `value` as `dtype` (TITANRT_I64 or TITANRT_I32, checked by the
  /// caller) to `out` (titanrt_axis_index).
  virtual Status writeInteger(int32_t dtype, int64_t value, void *out) = 0;
};

} // namespace titan::rt

#endif // TITAN_RUNTIME_CORE_COMPUTEBACKEND_H
