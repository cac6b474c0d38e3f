//===- RmsNorm.cu - RMSNorm forward and backward --------------------------===//
//
// One block per row (rowLaunch): the threads stride over the row, a block
// reduction gives the row's statistics, and a second pass (reading the row
// again, from L1/L2) writes the result. The backward recomputes the
// statistics from x. Its weight gradient is a sum over rows; to be bitwise
// reproducible without atomics, block b of G = min(rows, 256) handles rows
// b, b + G, ... and accumulates their dy * x * r in its own row of the
// workspace ([G, cols] f32), which a second kernel sums over the G blocks
// in a fixed order (8 warps per 32 columns, each over every 8th partial
// row, then the warps in order). Rows whose columns are a multiple of 8, on
// 16-byte aligned tensors, move 8 elements per thread and access (16 bytes of
// bf16); the others one.
//
//===----------------------------------------------------------------------===//

#include "cuda/Arguments.h"
#include "cuda/Kernels.h"
#include "cuda/Launch.cuh"

using namespace titan::rt;
using namespace titan::rt::cuda;

namespace {

/// One row per block; each thread reads V consecutive columns at a time.
template <int V, typename T, typename W>
__global__ void __launch_bounds__(1024)
    rmsNormForwardKernel(const T *x, const W *weight, T *y, int64_t cols,
                         float eps) {
  __shared__ float scratch[32];
  const T *xRow = x + int64_t(blockIdx.x) * cols;
  T *yRow = y + int64_t(blockIdx.x) * cols;
  const int64_t step = int64_t(blockDim.x) * V;
  float sumSquares = 0.0f;
  for (int64_t c = int64_t(threadIdx.x) * V; c < cols; c += step) {
    float value[V];
    loadFloats<V>(xRow + c, value);
#pragma unroll
    for (int i = 0; i < V; ++i)
      sumSquares += value[i] * value[i];
  }
  float r = rsqrtf(blockSum(sumSquares, scratch) / float(cols) + eps);
  for (int64_t c = int64_t(threadIdx.x) * V; c < cols; c += step) {
    float value[V], scale[V];
    loadFloats<V>(xRow + c, value);
    loadFloats<V>(weight + c, scale);
#pragma unroll
    for (int i = 0; i < V; ++i)
      value[i] = value[i] * r * scale[i];
    storeFloats<V>(yRow + c, value);
  }
}

/// dx of rows b, b + G, ... in block b, and their weight-gradient sums in
/// row b of `partial`; V consecutive columns per thread at a time.
template <int V, typename T, typename W>
__global__ void __launch_bounds__(1024)
    rmsNormBackwardRowsKernel(const T *x, const W *weight, const T *dy,
                              const T *addend, T *dx, float *partial,
                              int64_t rows, int64_t cols, float eps) {
  __shared__ float scratch[32];
  float *blockPartial = partial + int64_t(blockIdx.x) * cols;
  const int64_t step = int64_t(blockDim.x) * V;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *xRow = x + row * cols, *dyRow = dy + row * cols;
    const T *addendRow = addend ? addend + row * cols : nullptr;
    T *dxRow = dx + row * cols;
    float sumSquares = 0.0f, sumGradX = 0.0f;
    for (int64_t c = int64_t(threadIdx.x) * V; c < cols; c += step) {
      float value[V], grad[V], scale[V];
      loadFloats<V>(xRow + c, value);
      loadFloats<V>(dyRow + c, grad);
      loadFloats<V>(weight + c, scale);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        sumSquares += value[i] * value[i];
        sumGradX += grad[i] * scale[i] * value[i];
      }
    }
    sumSquares = blockSum(sumSquares, scratch);
    sumGradX = blockSum(sumGradX, scratch);
    const float r = rsqrtf(sumSquares / float(cols) + eps);
    const float xCoefficient = r * r * (sumGradX / float(cols));
    const bool first = row == blockIdx.x;
    for (int64_t c = int64_t(threadIdx.x) * V; c < cols; c += step) {
      float value[V], grad[V], scale[V], sum[V], added[V] = {},
                                                 accumulated[V] = {};
      loadFloats<V>(xRow + c, value);
      loadFloats<V>(dyRow + c, grad);
      loadFloats<V>(weight + c, scale);
      if (addendRow) // read before the write: dx may be the addend
        loadFloats<V>(addendRow + c, added);
      if (!first)
        loadFloats<V>(blockPartial + c, accumulated);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        sum[i] = r * (grad[i] * scale[i] - value[i] * xCoefficient);
        if (addendRow)
          sum[i] += added[i];
        const float contribution = grad[i] * value[i] * r;
        accumulated[i] = first ? contribution : accumulated[i] + contribution;
      }
      storeFloats<V>(dxRow + c, sum);
      storeFloats<V>(blockPartial + c, accumulated);
    }
  }
}

/// dweight[c] = the sum over the G blocks' partial sums, in a fixed order:
/// warp w of the block adds partial rows w, w + 8, ... of its 32 columns
/// (a lane per column: coalesced), then the warps' sums are added in warp
/// order (kRmsNormColumnWarps warps, kRmsNormColumnsPerBlock columns).
template <typename W>
__global__ void __launch_bounds__(256)
    rmsNormBackwardColumnsKernel(const float *partial, W *dweight,
                                 int64_t blocks, int64_t cols) {
  __shared__ float warpSums[kRmsNormColumnWarps][kRmsNormColumnsPerBlock];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t c = int64_t(blockIdx.x) * kRmsNormColumnsPerBlock + lane;
  float sum = 0.0f;
  if (c < cols)
    for (int64_t b = warp; b < blocks; b += kRmsNormColumnWarps)
      sum += partial[b * cols + c];
  warpSums[warp][lane] = sum;
  __syncthreads();
  if (warp == 0 && c < cols) {
    float total = 0.0f;
#pragma unroll
    for (int w = 0; w < kRmsNormColumnWarps; ++w)
      total += warpSums[w][lane];
    dweight[c] = fromFloat<W>(total);
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
  return withRowVector(cols, {x, weight, y}, [&](auto vector) {
    return withFloatType(dtype, [&](auto t) {
      return withFloatType(weightDtype, [&](auto w) {
        using T = decltype(t);
        using W = decltype(w);
        return launchKernel(op, config, stream,
                            rmsNormForwardKernel<decltype(vector)::value, T, W>,
                            static_cast<const T *>(x),
                            static_cast<const W *>(weight), static_cast<T *>(y),
                            cols, float(eps));
      });
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
  return withRowVector(
      cols, {x, weight, dy, addend, dx, partial}, [&](auto vector) {
        return withFloatType(dtype, [&](auto t) {
          return withFloatType(weightDtype, [&](auto w) {
            using T = decltype(t);
            using W = decltype(w);
            TITANRT_RETURN_IF_ERROR(launchKernel(
                op, launch.rows, stream,
                rmsNormBackwardRowsKernel<decltype(vector)::value, T, W>,
                static_cast<const T *>(x), static_cast<const W *>(weight),
                static_cast<const T *>(dy), static_cast<const T *>(addend),
                static_cast<T *>(dx), partial, rows, cols, float(eps)));
            return launchKernel(
                op, launch.columns, stream, rmsNormBackwardColumnsKernel<W>,
                static_cast<const float *>(partial), static_cast<W *>(dweight),
                launch.rows.grid.x, cols);
          });
        });
      });
}
