//===- Softmax.cu - softmax over the last dimension, forward and backward -===//
//
// One block per row (rowLaunch). The forward makes one pass for the row's
// maximum and sum of exponentials at once (an online softmax: each thread
// keeps its running pair, rescaling the sum when the maximum grows; the
// block combines the pairs in a fixed tree), and a second pass writes the
// probabilities. The backward reduces sum(dy * y) and writes y * (dy - it).
//
//===----------------------------------------------------------------------===//

#include "cuda/Arguments.h"
#include "cuda/Kernels.h"
#include "cuda/Launch.cuh"

using namespace titan::rt;
using namespace titan::rt::cuda;

namespace {

/// One row per block.
template <typename T>
__global__ void __launch_bounds__(1024)
    softmaxForwardKernel(const T *x, T *y, int64_t cols) {
  __shared__ float scratch[64];
  const T *xRow = x + int64_t(blockIdx.x) * cols;
  T *yRow = y + int64_t(blockIdx.x) * cols;
  MaxSum state = {-INFINITY, 0.0f};
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    accumulate(state, toFloat(xRow[c]));
  state = blockCombine(state, scratch);
  const float inverse = 1.0f / state.sum;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    yRow[c] = fromFloat<T>(__expf(toFloat(xRow[c]) - state.max) * inverse);
}

/// One row per block.
template <typename T>
__global__ void __launch_bounds__(1024)
    softmaxBackwardKernel(const T *y, const T *dy, T *dx, int64_t cols) {
  __shared__ float scratch[32];
  const int64_t offset = int64_t(blockIdx.x) * cols;
  float dot = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    dot += toFloat(dy[offset + c]) * toFloat(y[offset + c]);
  dot = blockSum(dot, scratch);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    dx[offset + c] =
        fromFloat<T>(toFloat(y[offset + c]) * (toFloat(dy[offset + c]) - dot));
}

Status checkSoftmax(const char *op, int32_t dtype, int64_t rows, int64_t cols,
                    int64_t &elements) {
  TITANRT_RETURN_IF_ERROR(checkFloatDtype(op, "dtype", dtype));
  TITANRT_RETURN_IF_ERROR(checkExtents(op, {{"rows", rows}, {"cols", cols}}));
  return checkProduct(op, {{"rows", rows}, {"cols", cols}}, elements);
}

} // namespace

Status cuda::softmaxForward(cudaStream_t stream, int32_t dtype, const void *x,
                            void *y, int64_t rows, int64_t cols) {
  const char *op = "softmax (CUDA)";
  int64_t elements;
  TITANRT_RETURN_IF_ERROR(checkSoftmax(op, dtype, rows, cols, elements));
  TITANRT_RETURN_IF_ERROR(checkPointers(op, elements, {{"x", x}, {"y", y}}));
  if (elements == 0)
    return Status::success();
  return withFloatType(dtype, [&](auto t) {
    using T = decltype(t);
    return launchKernel(op, rowLaunch(rows, cols), stream,
                        softmaxForwardKernel<T>, static_cast<const T *>(x),
                        static_cast<T *>(y), cols);
  });
}

Status cuda::softmaxBackward(cudaStream_t stream, int32_t dtype, const void *y,
                             const void *dy, void *dx, int64_t rows,
                             int64_t cols) {
  const char *op = "softmax_grad (CUDA)";
  int64_t elements;
  TITANRT_RETURN_IF_ERROR(checkSoftmax(op, dtype, rows, cols, elements));
  TITANRT_RETURN_IF_ERROR(
      checkPointers(op, elements, {{"y", y}, {"dy", dy}, {"dx", dx}}));
  if (elements == 0)
    return Status::success();
  return withFloatType(dtype, [&](auto t) {
    using T = decltype(t);
    return launchKernel(op, rowLaunch(rows, cols), stream,
                        softmaxBackwardKernel<T>, static_cast<const T *>(y),
                        static_cast<const T *>(dy), static_cast<T *>(dx), cols);
  });
}
