//===- CudaBackend.cpp - the CUDA backend's compute -----------------------===//

#include "cuda/CudaBackend.h"

#include "cuda/Arguments.h"
#include "cuda/CudaStatus.h"
#include "cuda/Kernels.h"
#include "cuda/LaunchConfig.h"

#include "titan/Runtime/titanrt.h"

#include <cstdio>

using namespace titan::rt;
using namespace titan::rt::cuda;

CrossEntropyWorkspace cuda::splitCrossEntropyWorkspace(void *workspace,
                                                       int64_t rows) {
  float *base = static_cast<float *>(workspace);
  return {base,
          base + rows,
          base + 2 * rows,
          base + 3 * rows,
          base + 4 * rows,
          base + 4 * rows + 1};
}

// titanrt_rms_norm_grad_workspace_bytes plans the backward's partials.
static_assert(kRmsNormGradBlocks == TITANRT_RMS_NORM_GRAD_PARTIALS,
              "titanrt.h's RMSNorm workspace differs from the kernel's");

Status CudaBackend::create(std::unique_ptr<CudaBackend> &backend,
                           AttentionKernels attentionKernels) {
  std::unique_ptr<CudaBackend> created(new CudaBackend);
  created->attentionKernels = attentionKernels;
  TITANRT_RETURN_IF_ERROR(Stream::create(created->stream));
  TITANRT_RETURN_IF_ERROR(GemmEngine::create(created->gemm));
  if (attentionKernels == AttentionKernels::Cudnn) {
#if TITAN_HAVE_CUDNN
    TITANRT_RETURN_IF_ERROR(
        CudnnAttention::create(created->cudnnAttention, created->stream.get()));
#else
    return Status::unsupported(
        "TITAN_CUDA_ATTENTION=cudnn: this CUDA backend was built without "
        "cuDNN (its CUDA toolkit had no cudnn_graph.h); rebuild it where the "
        "toolkit has cuDNN 9, or choose auto or titan");
#endif
  }
  backend = std::move(created);
  return Status::success();
}

Status CudaBackend::chooseCudnn(AttentionPass pass, int32_t dtype,
                                const AttentionShape &shape,
                                std::initializer_list<const void *> operands,
                                bool &useCudnn) {
  useCudnn = false;
  int64_t rows = 0;
  // A call titan's launchers reject (they say why) or that has nothing to
  // do stays with them.
  if ((attentionKernels != AttentionKernels::Auto &&
       attentionKernels != AttentionKernels::Cudnn) ||
      !checkAttentionCall("attention", dtype, shape, rows).ok() || rows == 0)
    return Status::success();
  // f32 attention is titan's under auto (cuDNN's fused attention is
  // 16-bit): no note.
  if (dtype != TITANRT_BF16 && attentionKernels == AttentionKernels::Auto)
    return Status::success();
  Status status = Status::success();
#if TITAN_HAVE_CUDNN
  if (dtype != TITANRT_BF16) {
    status = Status::unsupported("cuDNN's fused attention takes bf16, not " +
                                 dtypeName(dtype));
  } else if (!areAligned(16, operands)) {
    status = Status::unsupported(
        "cuDNN's fused attention needs 16-byte aligned operands");
  } else if (!cudnnAttention && cudnnFailure.ok()) {
    cudnnFailure = CudnnAttention::create(cudnnAttention, stream.get());
  }
  if (status.ok())
    status =
        cudnnAttention ? cudnnAttention->prepare(pass, shape) : cudnnFailure;
#else
  (void)pass, (void)dtype, (void)shape, (void)operands;
  status = Status::unsupported(
      "this CUDA backend was built without cuDNN (its CUDA toolkit had no "
      "cudnn_graph.h)");
#endif
  if (status.ok()) {
    useCudnn = true;
#if TITAN_HAVE_CUDNN
    // Which library runs attention, said once (a job's log shows it).
    if (!notedCudnn) {
      notedCudnn = true;
      const CudnnLibrary &library = cudnnAttention->getLibrary();
      std::fprintf(stderr, "titan: note: attention runs on cuDNN %zu (%s)\n",
                   library.version, library.path.c_str());
    }
#endif
    return Status::success();
  }
  if (attentionKernels == AttentionKernels::Cudnn)
    return status;
  if (notedFallbacks.insert(status.getMessage()).second)
    std::fprintf(stderr,
                 "titan: note: %s; titan's attention kernels run it "
                 "(TITAN_CUDA_ATTENTION=titan chooses them for every call)\n",
                 status.getMessage().c_str());
  return Status::success();
}

Status CudaBackend::matmul(int32_t dtype, const void *a, const void *b,
                           const void *addend, void *c, int64_t batch,
                           int64_t m, int64_t n, int64_t k, bool transposeA,
                           bool transposeB, bool bShared) {
  return gemm->matmul(stream.get(), dtype, a, b, addend, c, batch, m, n, k,
                      transposeA, transposeB, bShared);
}

Status CudaBackend::attention(int32_t dtype, const AttentionShape &shape,
                              const void *q, const void *k, const void *v,
                              void *out, float *lse) {
  bool useCudnn = false;
  TITANRT_RETURN_IF_ERROR(chooseCudnn(AttentionPass::Forward, dtype, shape,
                                      {q, k, v, out, lse}, useCudnn));
#if TITAN_HAVE_CUDNN
  if (useCudnn)
    return cudnnAttention->forward(shape, q, k, v, out, lse);
#endif
  return attentionForward(stream.get(), dtype, shape, q, k, v, out, lse,
                          attentionKernels);
}

Status CudaBackend::attentionGrad(int32_t dtype, const AttentionShape &shape,
                                  const void *q, const void *k, const void *v,
                                  const void *out, const float *lse,
                                  const void *grad, void *dq, void *dk,
                                  void *dv, void *workspace) {
  bool useCudnn = false;
  TITANRT_RETURN_IF_ERROR(
      chooseCudnn(AttentionPass::Backward, dtype, shape,
                  {q, k, v, out, lse, grad, dq, dk, dv, workspace}, useCudnn));
#if TITAN_HAVE_CUDNN
  if (useCudnn)
    return cudnnAttention->backward(shape, q, k, v, out, grad, lse, dq, dk, dv,
                                    workspace);
#endif
  return attentionBackward(stream.get(), dtype, shape, q, k, v, out, grad, lse,
                           dq, dk, dv, workspace, attentionKernels);
}

Status CudaBackend::embeddingGrad(int32_t dtype, int32_t idsDtype,
                                  const void *ids, const void *grad, void *out,
                                  int64_t numIds, int64_t vocab, int64_t dim) {
  int64_t bytes = embeddingGradWorkspaceBytes(numIds, vocab);
  if (bytes > embeddingWorkspace.getBytes())
    TITANRT_RETURN_IF_ERROR(embeddingWorkspace.allocate(
        bytes, "the embedding gradient's workspace"));
  return embeddingBackward(stream.get(), dtype, idsDtype, ids, grad, out,
                           embeddingWorkspace.get(), numIds, vocab, dim);
}

Status CudaBackend::findIdOutside(int32_t idsDtype, const void *ids,
                                  int64_t numIds, int64_t bound,
                                  int64_t &position, int64_t &id) {
  if (!idCheckWorkspace.get())
    TITANRT_RETURN_IF_ERROR(idCheckWorkspace.allocate(
        findIdOutsideWorkspaceBytes, "the id check's workspace"));
  return cuda::findIdOutside(stream.get(), idsDtype, ids, numIds, bound,
                             idCheckWorkspace.get(), position, id);
}

Status CudaBackend::rmsNorm(int32_t dtype, int32_t weightDtype, const void *x,
                            const void *weight, void *y, int64_t rows,
                            int64_t cols, double eps) {
  return rmsNormForward(stream.get(), dtype, weightDtype, x, weight, y, rows,
                        cols, eps);
}

Status CudaBackend::rmsNormGrad(int32_t dtype, int32_t weightDtype,
                                const void *x, const void *weight,
                                const void *grad, const void *addend, void *dx,
                                void *dweight, void *workspace, int64_t rows,
                                int64_t cols, double eps) {
  return rmsNormBackward(stream.get(), dtype, weightDtype, x, weight, grad,
                         addend, dx, dweight, workspace, rows, cols, eps);
}

/// The kernels' shape of a whole-vocabulary loss.
static CrossEntropyShape kernelShape(const LossShape &shape) {
  return {shape.rows, shape.vocab, /*vocabStart=*/0, shape.ignoreIndex,
          shape.labelsDtype};
}

/// Partials and finish: `loss`, and the rows' log-sum-exp and count in
/// `parts`.
static Status computeLoss(cudaStream_t stream, int32_t dtype,
                          const LossShape &shape, const void *logits,
                          const void *labels,
                          const CrossEntropyWorkspace &parts, float *loss) {
  CrossEntropyShape kernel = kernelShape(shape);
  TITANRT_RETURN_IF_ERROR(
      crossEntropyPartials(stream, dtype, kernel, logits, labels, parts.rowMax,
                           parts.rowSumExp, parts.targetLogit));
  return crossEntropyFinish(stream, kernel, parts.rowMax, parts.rowSumExp,
                            parts.targetLogit, labels, loss, parts.lse,
                            parts.validCount);
}

Status CudaBackend::crossEntropy(int32_t dtype, const LossShape &shape,
                                 const void *logits, const void *labels,
                                 float *loss, void *workspace) {
  return computeLoss(stream.get(), dtype, shape, logits, labels,
                     splitCrossEntropyWorkspace(workspace, shape.rows), loss);
}

Status CudaBackend::crossEntropyGrad(int32_t dtype, const LossShape &shape,
                                     const void *logits, const void *labels,
                                     const float *grad, void *dlogits,
                                     void *workspace) {
  CrossEntropyWorkspace parts =
      splitCrossEntropyWorkspace(workspace, shape.rows);
  TITANRT_RETURN_IF_ERROR(computeLoss(stream.get(), dtype, shape, logits,
                                      labels, parts, parts.loss));
  return crossEntropyBackward(stream.get(), dtype, kernelShape(shape), logits,
                              labels, parts.lse, grad, parts.validCount,
                              dlogits);
}

Status CudaBackend::squaredNorm(const std::vector<titanrt_norm_tensor> &tensors,
                                float *out) {
  return squaredNorms.compute(stream.get(), tensors, out);
}

Status CudaBackend::adamW(const std::vector<titanrt_adamw_tensor> &tensors,
                          const AdamWCall &call) {
  return optimizers.step(stream.get(), tensors, call);
}

Status CudaBackend::copy(const void *in, void *out, int64_t bytes) {
  return checkCuda(
      cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, stream.get()),
      "cudaMemcpyAsync", "titanrt_copy");
}

Status CudaBackend::writeInteger(int32_t dtype, int64_t value, void *out) {
  int32_t narrow = static_cast<int32_t>(value);
  const void *source = dtype == TITANRT_I64
                           ? static_cast<const void *>(&value)
                           : static_cast<const void *>(&narrow);
  size_t bytes = dtype == TITANRT_I64 ? sizeof(value) : sizeof(narrow);
  // From pageable memory: the call returns once `source` is staged, so the
  // locals may go.
  return checkCuda(
      cudaMemcpyAsync(out, source, bytes, cudaMemcpyHostToDevice, stream.get()),
      "cudaMemcpyAsync", "titanrt_axis_index's result");
}
