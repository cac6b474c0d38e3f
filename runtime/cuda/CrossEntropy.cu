//===- CrossEntropy.cu - cross-entropy loss, vocabulary-parallel ----------===//
//
// The loss in the steps Kernels.h describes, so that tensor-parallel ranks
// holding columns of the logits combine per-row statistics with two small
// all-reduces instead of gathering the logits:
//   partials  one block per row (rowLaunch): an online max / sum of
//             exponentials over the rank's columns in one pass, and the
//             label's logit if the rank holds it;
//   rescale   one thread per row: the rank's sum relative to the global
//             maximum;
//   finish    one block of 1024 threads over all rows: log-sum-exp per row
//             and the mean over the rows not ignored, summed in a fixed
//             order (deterministic);
//   backward  one block per row: softmax minus the one-hot label, times the
//             loss's cotangent over the count.
// The row kernels read 8 logits per thread and access (16 bytes of bf16)
// where the rank's vocabulary is a multiple of 8 and the tensors are
// 16-byte aligned (withRowVector), one otherwise.
//
//===----------------------------------------------------------------------===//

#include "cuda/Arguments.h"
#include "cuda/Kernels.h"
#include "cuda/Launch.cuh"

using namespace titan::rt;
using namespace titan::rt::cuda;

namespace {

/// One row of the logits per block: its maximum, sum of exponentials and
/// target logit over this rank's columns, V columns per thread at a time.
template <int V, typename T>
__global__ void __launch_bounds__(1024)
    crossEntropyPartialsKernel(const T *logits, const void *labels,
                               bool labels64, int64_t vocab, int64_t vocabStart,
                               int64_t ignoreIndex, float *rowMax,
                               float *rowSumExp, float *targetLogit) {
  __shared__ float scratch[64];
  const int64_t row = blockIdx.x;
  const T *rowLogits = logits + row * vocab;
  MaxSum state = {-INFINITY, 0.0f};
  for (int64_t c = int64_t(threadIdx.x) * V; c < vocab;
       c += int64_t(blockDim.x) * V) {
    float values[V];
    loadFloats<V>(rowLogits + c, values);
#pragma unroll
    for (int i = 0; i < V; ++i)
      accumulate(state, values[i]);
  }
  state = blockCombine(state, scratch);
  if (threadIdx.x == 0) {
    rowMax[row] = state.max;
    rowSumExp[row] = state.sum;
    const int64_t label = loadId(labels, row, labels64);
    const int64_t local = label - vocabStart;
    targetLogit[row] = label != ignoreIndex && local >= 0 && local < vocab
                           ? toFloat(rowLogits[local])
                           : 0.0f;
  }
}

/// One thread per row: the row's sum relative to the global maximum.
__global__ void crossEntropyRescaleKernel(const float *rowMax,
                                          const float *globalMax,
                                          float *rowSumExp, int64_t rows) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < rows;
       i += int64_t(gridDim.x) * blockDim.x)
    rowSumExp[i] = rowMax[i] == -INFINITY
                       ? 0.0f
                       : rowSumExp[i] * __expf(rowMax[i] - globalMax[i]);
}

/// One block over all rows: log-sum-exps, the mean loss and the count.
__global__ void __launch_bounds__(1024)
    crossEntropyFinishKernel(const float *rowMax, const float *rowSumExp,
                             const float *targetLogit, const void *labels,
                             bool labels64, int64_t rows, int64_t ignoreIndex,
                             float *loss, float *lse, float *validCount) {
  __shared__ float scratch[32];
  float sum = 0.0f, count = 0.0f;
  for (int64_t row = threadIdx.x; row < rows; row += blockDim.x) {
    const float rowLse = rowMax[row] + logf(rowSumExp[row]);
    lse[row] = rowLse;
    if (loadId(labels, row, labels64) != ignoreIndex) {
      sum += rowLse - targetLogit[row];
      count += 1.0f;
    }
  }
  sum = blockSum(sum, scratch);
  count = blockSum(count, scratch);
  if (threadIdx.x == 0) {
    *loss = sum / count; // NaN when every row is ignored, as PyTorch
    if (validCount)
      *validCount = count;
  }
}

/// One row of the logits' cotangent per block, V columns per thread at a
/// time.
template <int V, typename T>
__global__ void __launch_bounds__(1024)
    crossEntropyBackwardKernel(const T *logits, const void *labels,
                               bool labels64, const float *lse,
                               const float *gradLoss, const float *validCount,
                               int64_t vocab, int64_t vocabStart,
                               int64_t ignoreIndex, T *dlogits) {
  const int64_t row = blockIdx.x;
  const T *rowLogits = logits + row * vocab;
  T *rowGrad = dlogits + row * vocab;
  const int64_t label = loadId(labels, row, labels64);
  const int64_t step = int64_t(blockDim.x) * V;
  if (label == ignoreIndex) {
    const float zeros[V] = {};
    for (int64_t c = int64_t(threadIdx.x) * V; c < vocab; c += step)
      storeFloats<V>(rowGrad + c, zeros);
    return;
  }
  const float scale = *gradLoss / *validCount, rowLse = lse[row];
  const int64_t local = label - vocabStart;
  for (int64_t c = int64_t(threadIdx.x) * V; c < vocab; c += step) {
    float values[V];
    loadFloats<V>(rowLogits + c, values);
#pragma unroll
    for (int i = 0; i < V; ++i) {
      const float p = __expf(values[i] - rowLse);
      values[i] = scale * (c + i == local ? p - 1.0f : p);
    }
    storeFloats<V>(rowGrad + c, values);
  }
}

/// The checks every step shares; sets `elements` (of the logits).
Status checkShape(const char *op, const CrossEntropyShape &shape,
                  int64_t &elements) {
  TITANRT_RETURN_IF_ERROR(checkIdsDtype(op, "labels dtype", shape.labelsDtype));
  TITANRT_RETURN_IF_ERROR(
      checkExtents(op, {{"rows", shape.rows},
                        {"local_vocab", shape.localVocab},
                        {"vocab_start", shape.vocabStart}}));
  return checkProduct(op, {{"rows", shape.rows}, {"vocab", shape.localVocab}},
                      elements);
}

} // namespace

Status cuda::crossEntropyPartials(cudaStream_t stream, int32_t dtype,
                                  const CrossEntropyShape &shape,
                                  const void *logits, const void *labels,
                                  float *rowMax, float *rowSumExp,
                                  float *targetLogit) {
  const char *op = "cross_entropy partials (CUDA)";
  int64_t elements;
  TITANRT_RETURN_IF_ERROR(checkFloatDtype(op, "dtype", dtype));
  TITANRT_RETURN_IF_ERROR(checkShape(op, shape, elements));
  TITANRT_RETURN_IF_ERROR(checkPointers(op, shape.rows,
                                        {{"logits", logits},
                                         {"labels", labels},
                                         {"row_max", rowMax},
                                         {"row_sum_exp", rowSumExp},
                                         {"target_logit", targetLogit}}));
  if (shape.rows == 0)
    return Status::success();
  return withRowVector(shape.localVocab, {logits}, [&](auto vector) {
    return withFloatType(dtype, [&](auto t) {
      using T = decltype(t);
      return launchKernel(
          op, rowLaunch(shape.rows, shape.localVocab), stream,
          crossEntropyPartialsKernel<decltype(vector)::value, T>,
          static_cast<const T *>(logits), labels,
          shape.labelsDtype == TITANRT_I64, shape.localVocab, shape.vocabStart,
          shape.ignoreIndex, rowMax, rowSumExp, targetLogit);
    });
  });
}

Status cuda::crossEntropyRescale(cudaStream_t stream, const float *rowMax,
                                 const float *globalMax, float *rowSumExp,
                                 int64_t rows) {
  const char *op = "cross_entropy rescale (CUDA)";
  TITANRT_RETURN_IF_ERROR(checkExtents(op, {{"rows", rows}}));
  TITANRT_RETURN_IF_ERROR(checkPointers(op, rows,
                                        {{"row_max", rowMax},
                                         {"global_max", globalMax},
                                         {"row_sum_exp", rowSumExp}}));
  if (rows == 0)
    return Status::success();
  return launchKernel(op, elementwiseLaunch(rows), stream,
                      crossEntropyRescaleKernel, rowMax, globalMax, rowSumExp,
                      rows);
}

Status cuda::crossEntropyFinish(cudaStream_t stream,
                                const CrossEntropyShape &shape,
                                const float *rowMax, const float *rowSumExp,
                                const float *targetLogit, const void *labels,
                                float *loss, float *lse, float *validCount) {
  const char *op = "cross_entropy finish (CUDA)";
  int64_t elements;
  TITANRT_RETURN_IF_ERROR(checkShape(op, shape, elements));
  TITANRT_RETURN_IF_ERROR(checkPointers(op, shape.rows,
                                        {{"row_max", rowMax},
                                         {"row_sum_exp", rowSumExp},
                                         {"target_logit", targetLogit},
                                         {"labels", labels},
                                         {"lse", lse}}));
  TITANRT_RETURN_IF_ERROR(checkPointers(op, 1, {{"loss", loss}}));
  return launchKernel(op, singleBlockLaunch(), stream, crossEntropyFinishKernel,
                      rowMax, rowSumExp, targetLogit, labels,
                      shape.labelsDtype == TITANRT_I64, shape.rows,
                      shape.ignoreIndex, loss, lse, validCount);
}

Status cuda::crossEntropyBackward(cudaStream_t stream, int32_t dtype,
                                  const CrossEntropyShape &shape,
                                  const void *logits, const void *labels,
                                  const float *lse, const float *gradLoss,
                                  const float *validCount, void *dlogits) {
  const char *op = "cross_entropy_grad (CUDA)";
  int64_t elements;
  TITANRT_RETURN_IF_ERROR(checkFloatDtype(op, "dtype", dtype));
  TITANRT_RETURN_IF_ERROR(checkShape(op, shape, elements));
  TITANRT_RETURN_IF_ERROR(checkPointers(op, elements,
                                        {{"logits", logits},
                                         {"labels", labels},
                                         {"lse", lse},
                                         {"grad_loss", gradLoss},
                                         {"valid_count", validCount},
                                         {"dlogits", dlogits}}));
  if (elements == 0)
    return Status::success();
  return withRowVector(shape.localVocab, {logits, dlogits}, [&](auto vector) {
    return withFloatType(dtype, [&](auto t) {
      using T = decltype(t);
      return launchKernel(
          op, rowLaunch(shape.rows, shape.localVocab), stream,
          crossEntropyBackwardKernel<decltype(vector)::value, T>,
          static_cast<const T *>(logits), labels,
          shape.labelsDtype == TITANRT_I64, lse, gradLoss, validCount,
          shape.localVocab, shape.vocabStart, shape.ignoreIndex,
          static_cast<T *>(dlogits));
    });
  });
}
