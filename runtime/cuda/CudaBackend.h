//===- CudaBackend.h - the CUDA backend's compute ---------------*- C++ -*-===//
//
// ComputeBackend (core/ComputeBackend.h) on one GPU: every call is queued on
// the rank's compute stream, in order, and returns without waiting (a
// result is ready once the stream is synchronized). GEMMs go through
// cuBLASLt (Gemm.h); attention through cuDNN's fused attention where it
// applies (CudnnAttention.h; AttentionKernels says when) and titan's
// kernels otherwise; the embedding gradient, RMSNorm and cross-entropy
// through titan's kernels (Kernels.h).
//
// titanrt_attention_grad reads the forward's output and log-sum-exp (the
// compiler keeps both for it), so the backward is three kernels and no
// second forward; its workspace (titanrt_attention_grad_workspace_bytes)
// is attentionBackward's delta.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_CUDABACKEND_H
#define TITAN_RUNTIME_CUDA_CUDABACKEND_H

#include "core/ComputeBackend.h"
#include "cuda/AdamW.h"
#include "cuda/Device.h"
#include "cuda/Gemm.h"
#include "cuda/KernelTypes.h"
#include "cuda/SquaredNorm.h"

#if TITAN_HAVE_CUDNN
#include "cuda/CudnnAttention.h"
#endif

#include <initializer_list>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace titan::rt::cuda {

/// Where titanrt_cross_entropy(_grad)'s workspace
/// (titanrt_cross_entropy_workspace_bytes) keeps the kernels' statistics,
/// f32 [rows] each, and the two scalars.
struct CrossEntropyWorkspace {
  float *rowMax = nullptr;
  float *rowSumExp = nullptr;
  float *targetLogit = nullptr;
  float *lse = nullptr;
  float *validCount = nullptr;
  /// The loss titanrt_cross_entropy_grad recomputes (the forward writes
  /// its own output).
  float *loss = nullptr;
};

/// The parts of `workspace` for `rows` rows.
CrossEntropyWorkspace splitCrossEntropyWorkspace(void *workspace, int64_t rows);

/// The CUDA backend's compute on the current device.
class CudaBackend final : public ComputeBackend {
public:
  /// Creates the backend on the current device (selectDevice first): its
  /// compute stream and cuBLASLt engine; its attention calls run
  /// `attentionKernels` (AttentionKernels::Cudnn loads cuDNN here, failing
  /// if it cannot; Auto on the first bf16 call).
  static Status
  create(std::unique_ptr<CudaBackend> &backend,
         AttentionKernels attentionKernels = AttentionKernels::Auto);

  /// The stream every call is queued on.
  cudaStream_t getStream() const { return stream.get(); }

  const char *getName() const override { return "cuda"; }
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
  /// The scatter's workspace (embeddingGradWorkspaceBytes) is the
  /// backend's: allocated on the first call and grown when a larger one
  /// comes, so a step allocates only the first time.
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
  /// Recomputes the rows' log-sum-exp and the count into the workspace,
  /// then the cotangent.
  Status crossEntropyGrad(int32_t dtype, const LossShape &shape,
                          const void *logits, const void *labels,
                          const float *grad, void *dlogits,
                          void *workspace) override;
  /// Two launches whatever the number of tensors (SquaredNorms).
  Status squaredNorm(const std::vector<titanrt_norm_tensor> &tensors,
                     float *out) override;
  /// One launch over every tensor (FusedAdamW), whose tables are uploaded
  /// the first time a list of tensors is seen and reused after
  /// (AdamWOptimizers).
  Status adamW(const std::vector<titanrt_adamw_tensor> &tensors,
               const AdamWCall &call) override;
  Status copy(const void *in, void *out, int64_t bytes) override;
  Status writeInteger(int32_t dtype, int64_t value, void *out) override;

private:
  CudaBackend() = default;

  /// Whether cuDNN runs this attention call (`useCudnn`): under
  /// AttentionKernels::Auto when it can (else a note on stderr, once per
  /// reason, and titan's kernels run it), under Cudnn always (an error
  /// when it cannot); never under Titan or CudaCores.
  Status chooseCudnn(AttentionPass pass, int32_t dtype,
                     const AttentionShape &shape,
                     std::initializer_list<const void *> operands,
                     bool &useCudnn);

  Stream stream;
  std::unique_ptr<GemmEngine> gemm;
  DeviceBuffer embeddingWorkspace;
  /// findIdOutside's answer, allocated on the first id check.
  DeviceBuffer idCheckWorkspace;
  AdamWOptimizers optimizers;
  SquaredNorms squaredNorms;
  AttentionKernels attentionKernels = AttentionKernels::Auto;
#if TITAN_HAVE_CUDNN
  /// Created on first use; `cudnnFailure` is why it could not be.
  std::unique_ptr<CudnnAttention> cudnnAttention;
  Status cudnnFailure;
  /// Whether the library that runs attention has been noted.
  bool notedCudnn = false;
#endif
  /// The reasons cuDNN could not take a call, each noted once.
  std::set<std::string> notedFallbacks;
};

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_CUDABACKEND_H
