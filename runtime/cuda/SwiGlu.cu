//===- SwiGlu.cu - SwiGLU forward and backward ----------------------------===//
//
// Elementwise (elementwiseLaunch, grid-stride) over rows x cols: the gate
// and up inputs (and their gradients) are read and written with a row
// stride, so that one fused [rows, 2 cols] GEMM output (x [w1; w3]) is
// used in place; the product and its cotangent are contiguous.
//
//===----------------------------------------------------------------------===//

#include "cuda/Arguments.h"
#include "cuda/Kernels.h"
#include "cuda/Launch.cuh"

using namespace titan::rt;
using namespace titan::rt::cuda;

namespace {

__device__ __forceinline__ float sigmoid(float a) {
  return 1.0f / (1.0f + __expf(-a));
}

/// One output element per thread.
template <typename T>
__global__ void swiGluForwardKernel(const T *gate, const T *up, T *out,
                                    int64_t count, int64_t cols,
                                    int64_t stride) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t at = i / cols * stride + i % cols;
    const float a = toFloat(gate[at]);
    out[i] = fromFloat<T>(a * sigmoid(a) * toFloat(up[at]));
  }
}

/// One element of each input's cotangent per thread.
template <typename T>
__global__ void swiGluBackwardKernel(const T *gate, const T *up, const T *dout,
                                     T *dgate, T *dup, int64_t count,
                                     int64_t cols, int64_t stride) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t at = i / cols * stride + i % cols;
    const float a = toFloat(gate[at]), b = toFloat(up[at]);
    const float g = toFloat(dout[i]), s = sigmoid(a);
    dgate[at] = fromFloat<T>(g * b * s * (1.0f + a * (1.0f - s)));
    dup[at] = fromFloat<T>(g * a * s);
  }
}

/// Sets `count`; checks both directions' shapes.
Status checkSwiGlu(const char *op, int32_t dtype, int64_t rows, int64_t cols,
                   int64_t inputStride, int64_t &count) {
  TITANRT_RETURN_IF_ERROR(checkFloatDtype(op, "dtype", dtype));
  TITANRT_RETURN_IF_ERROR(checkExtents(
      op, {{"rows", rows}, {"cols", cols}, {"input_stride", inputStride}}));
  if (inputStride < cols)
    return Status::invalidArgument(
        std::string(op) + ": input_stride = " + std::to_string(inputStride) +
        " is less than cols = " + std::to_string(cols));
  int64_t span;
  TITANRT_RETURN_IF_ERROR(
      checkProduct(op, {{"rows", rows}, {"input_stride", inputStride}}, span));
  return checkProduct(op, {{"rows", rows}, {"cols", cols}}, count);
}

} // namespace

Status cuda::swiGluForward(cudaStream_t stream, int32_t dtype, const void *gate,
                           const void *up, void *out, int64_t rows,
                           int64_t cols, int64_t inputStride) {
  const char *op = "swiglu (CUDA)";
  int64_t count;
  TITANRT_RETURN_IF_ERROR(
      checkSwiGlu(op, dtype, rows, cols, inputStride, count));
  TITANRT_RETURN_IF_ERROR(
      checkPointers(op, count, {{"gate", gate}, {"up", up}, {"out", out}}));
  if (count == 0)
    return Status::success();
  return withFloatType(dtype, [&](auto t) {
    using T = decltype(t);
    return launchKernel(op, elementwiseLaunch(count), stream,
                        swiGluForwardKernel<T>, static_cast<const T *>(gate),
                        static_cast<const T *>(up), static_cast<T *>(out),
                        count, cols, inputStride);
  });
}

Status cuda::swiGluBackward(cudaStream_t stream, int32_t dtype,
                            const void *gate, const void *up, const void *dout,
                            void *dgate, void *dup, int64_t rows, int64_t cols,
                            int64_t inputStride) {
  const char *op = "swiglu_grad (CUDA)";
  int64_t count;
  TITANRT_RETURN_IF_ERROR(
      checkSwiGlu(op, dtype, rows, cols, inputStride, count));
  TITANRT_RETURN_IF_ERROR(checkPointers(op, count,
                                        {{"gate", gate},
                                         {"up", up},
                                         {"dout", dout},
                                         {"dgate", dgate},
                                         {"dup", dup}}));
  if (count == 0)
    return Status::success();
  return withFloatType(dtype, [&](auto t) {
    using T = decltype(t);
    return launchKernel(op, elementwiseLaunch(count), stream,
                        swiGluBackwardKernel<T>, static_cast<const T *>(gate),
                        static_cast<const T *>(up),
                        static_cast<const T *>(dout), static_cast<T *>(dgate),
                        static_cast<T *>(dup), count, cols, inputStride);
  });
}
