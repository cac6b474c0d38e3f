//===- RmsNorm.cu - RMSNorm forward and backward --------------------------===//
//
// One block per row (rowLaunch): the threads stride over the row, a block
// reduction gives the row's statistics, and a second pass (reading the row
// again, from L1/L2) writes the result. The backward recomputes the
// statistics from x. Its weight gradient is a sum over rows; to be bitwise
// reproducible without atomics, block b of G = min(rows, 256) handles rows
// b, b + G, ... and accumulates their dy * x * r in its own row of the
// workspace ([G, cols] f32), which a second kernel sums over the G blocks
// in order.
//
//===----------------------------------------------------------------------===//

#include "cuda/Arguments.h"
#include "cuda/Kernels.h"
#include "cuda/Launch.cuh"

using namespace titan::rt;
using namespace titan::rt::cuda;

namespace {

/// One row per block.
template <typename T, typename W>
__global__ void __launch_bounds__(1024)
    rmsNormForwardKernel(const T *x, const W *weight, T *y, int64_t cols,
                         float eps) {
  __shared__ float scratch[32];
  const T *xRow = x + int64_t(blockIdx.x) * cols;
  T *yRow = y + int64_t(blockIdx.x) * cols;
  float sumSquares = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float value = toFloat(xRow[c]);
    sumSquares += value * value;
  }
  float r = rsqrtf(blockSum(sumSquares, scratch) / float(cols) + eps);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    yRow[c] = fromFloat<T>(toFloat(xRow[c]) * r * toFloat(weight[c]));
}

/// dx of rows b, b + G, ... in block b, and their weight-gradient sums in
/// row b of `partial`.
template <typename T, typename W>
__global__ void __launch_bounds__(1024)
    rmsNormBackwardRowsKernel(const T *x, const W *weight, const T *dy,
                              const T *addend, T *dx, float *partial,
                              int64_t rows, int64_t cols, float eps) {
  __shared__ float scratch[32];
  float *blockPartial = partial + int64_t(blockIdx.x) * cols;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *xRow = x + row * cols, *dyRow = dy + row * cols;
    const T *addendRow = addend ? addend + row * cols : nullptr;
    T *dxRow = dx + row * cols;
    float sumSquares = 0.0f, sumGradX = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      float value = toFloat(xRow[c]);
      sumSquares += value * value;
      sumGradX += toFloat(dyRow[c]) * toFloat(weight[c]) * value;
    }
    sumSquares = blockSum(sumSquares, scratch);
    sumGradX = blockSum(sumGradX, scratch);
    const float r = rsqrtf(sumSquares / float(cols) + eps);
    const float xCoefficient = r * r * (sumGradX / float(cols));
    const bool first = row == blockIdx.x;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      float value = toFloat(xRow[c]), grad = toFloat(dyRow[c]);
      float g = grad * toFloat(weight[c]);
      float sum = r * (g - value * xCoefficient);
      if (addendRow) // read before the write: dx may be the addend
        sum += toFloat(addendRow[c]);
      dxRow[c] = fromFloat<T>(sum);
      float contribution = grad * value * r;
      blockPartial[c] = first ? contribution : blockPartial[c] + contribution;
    }
  }
}

/// dweight[c] = the sum over the G blocks' partial sums, in block order.
template <typename W>
__global__ void rmsNormBackwardColumnsKernel(const float *partial, W *dweight,
                                             int64_t blocks, int64_t cols) {
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < cols;
       c += int64_t(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (int64_t b = 0; b < blocks; ++b)
      sum += partial[b * cols + c];
    dweight[c] = fromFloat<W>(sum);
  }
}

/// The checks both directions share; sets `elements`.
Status checkRmsNorm(const char *op, int32_t dtype, int32_t weightDtype,
                    int64_t rows, int64_t cols, double eps, int64_t &elements) {
  TITANRT_RETURN_IF_ERROR(checkFloatDtype(op, "dtype", dtype));
  TITANRT_RETURN_IF_ERROR(checkFloatDtype(op, "weight dtype", weightDtype));
  TITANRT_RETURN_IF_ERROR(checkExtents(op, {{"rows", rows}, {"cols", cols}}));
  TITANRT_RETURN_IF_ERROR(
      checkProduct(op, {{"rows", rows}, {"cols", cols}}, elements));
  if (!(eps > 0))
    return Status::invalidArgument(std::string(op) + ": eps = " +
                                   std::to_string(eps) + " must be positive");
  return Status::success();
}

} // namespace

Status cuda::rmsNormForward(cudaStream_t stream, int32_t dtype,
                            int32_t weightDtype, const void *x,
                            const void *weight, void *y, int64_t rows,
                            int64_t cols, double eps) {
  const char *op = "rms_norm (CUDA)";
  int64_t elements;
  TITANRT_RETURN_IF_ERROR(
      checkRmsNorm(op, dtype, weightDtype, rows, cols, eps, elements));
  TITANRT_RETURN_IF_ERROR(
      checkPointers(op, elements, {{"x", x}, {"weight", weight}, {"y", y}}));
  if (elements == 0)
    return Status::success();
  LaunchConfig config = rowLaunch(rows, cols);
  return withFloatType(dtype, [&](auto t) {
    return withFloatType(weightDtype, [&](auto w) {
      using T = decltype(t);
      using W = decltype(w);
      return launchKernel(op, config, stream, rmsNormForwardKernel<T, W>,
                          static_cast<const T *>(x),
                          static_cast<const W *>(weight), static_cast<T *>(y),
                          cols, float(eps));
    });
  });
}

Status cuda::rmsNormBackward(cudaStream_t stream, int32_t dtype,
                             int32_t weightDtype, const void *x,
                             const void *weight, const void *dy,
                             const void *addend, void *dx, void *dweight,
                             void *workspace, int64_t rows, int64_t cols,
                             double eps) {
  const char *op = "rms_norm_grad (CUDA)";
  int64_t elements;
  TITANRT_RETURN_IF_ERROR(
      checkRmsNorm(op, dtype, weightDtype, rows, cols, eps, elements));
  TITANRT_RETURN_IF_ERROR(checkPointers(op, elements,
                                        {{"x", x},
                                         {"weight", weight},
                                         {"dy", dy},
                                         {"dx", dx},
                                         {"dweight", dweight},
                                         {"workspace", workspace}}));
  TITANRT_RETURN_IF_ERROR(
      checkAddend(op, addend, dx, elements * int64_t(dtypeSize(dtype))));
  if (cols == 0)
    return Status::success();
  if (rows == 0) // no rows: the weight's gradient is 0
    return checkCuda(cudaMemsetAsync(dweight, 0,
                                     size_t(cols) * dtypeSize(weightDtype),
                                     stream),
                     "cudaMemsetAsync", op);
  RmsNormBackwardLaunch launch = rmsNormBackwardLaunch(rows, cols);
  float *partial = static_cast<float *>(workspace);
  return withFloatType(dtype, [&](auto t) {
    return withFloatType(weightDtype, [&](auto w) {
      using T = decltype(t);
      using W = decltype(w);
      TITANRT_RETURN_IF_ERROR(launchKernel(
          op, launch.rows, stream, rmsNormBackwardRowsKernel<T, W>,
          static_cast<const T *>(x), static_cast<const W *>(weight),
          static_cast<const T *>(dy), static_cast<const T *>(addend),
          static_cast<T *>(dx), partial, rows, cols, float(eps)));
      return launchKernel(op, launch.columns, stream,
                          rmsNormBackwardColumnsKernel<W>,
                          static_cast<const float *>(partial),
                          static_cast<W *>(dweight), launch.rows.grid.x, cols);
    });
  });
}
