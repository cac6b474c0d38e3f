//===- CudaBackend.cpp - the CUDA backend's compute -----------------------===//

#include "cuda/CudaBackend.h"

#include "cuda/CudaStatus.h"
#include "cuda/Kernels.h"
#include "cuda/LaunchConfig.h"

#include "titan/Runtime/titanrt.h"

using namespace titan::rt;
using namespace titan::rt::cuda;

AttentionGradWorkspace
cuda::splitAttentionGradWorkspace(void *workspace,
                                  const AttentionShape &shape) {
  float *base = static_cast<float *>(workspace);
  return {base, base + shape.batch * shape.qHeads * shape.seq};
}

Status CudaBackend::create(std::unique_ptr<CudaBackend> &backend) {
  std::unique_ptr<CudaBackend> created(new CudaBackend);
  TITANRT_RETURN_IF_ERROR(Stream::create(created->stream));
  TITANRT_RETURN_IF_ERROR(GemmEngine::create(created->gemm));
  backend = std::move(created);
  return Status::success();
}

Status CudaBackend::matmul(int32_t dtype, const void *a, const void *b, void *c,
                           int64_t batch, int64_t m, int64_t n, int64_t k,
                           bool transposeA, bool transposeB, bool bShared) {
  return gemm->matmul(stream.get(), dtype, a, b, c, batch, m, n, k, transposeA,
                      transposeB, bShared);
}

Status CudaBackend::attention(int32_t dtype, const AttentionShape &shape,
                              const void *q, const void *k, const void *v,
                              void *out) {
  return attentionForward(stream.get(), dtype, shape, q, k, v, out,
                          /*lse=*/nullptr);
}

Status CudaBackend::attentionGrad(int32_t dtype, const AttentionShape &shape,
                                  const void *q, const void *k, const void *v,
                                  const void *grad, void *dq, void *dk,
                                  void *dv, void *workspace) {
  AttentionGradWorkspace parts = splitAttentionGradWorkspace(workspace, shape);
  // The forward's output in dq, read (for delta) before the last kernel of
  // the backward writes dq.
  TITANRT_RETURN_IF_ERROR(
      attentionForward(stream.get(), dtype, shape, q, k, v, dq, parts.lse));
  return attentionBackward(stream.get(), dtype, shape, q, k, v, dq, grad,
                           parts.lse, dq, dk, dv, parts.delta);
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
