//===- SquaredNorm.cu - the squared norm of many tensors ------------------===//
//
// One block per chunk of kAdamWChunkElements elements of one tensor (the
// chunk table on the device, written once per list), its 256 threads
// striding over the chunk: coalesced reads of f32 or bf16 elements.
//
//===----------------------------------------------------------------------===//

#include "cuda/AdamW.h"
#include "cuda/Arguments.h"
#include "cuda/Launch.cuh"
#include "cuda/SquaredNorm.h"

#include <algorithm>
#include <tuple>

using namespace titan::rt;
using namespace titan::rt::cuda;

namespace {

/// The sum of every thread's f64 `value` in the block (kAdamWThreads
/// threads), added in a fixed tree order through shared memory (DeviceSupport's
/// blockSum shuffles f32); every thread gets it.
__device__ double sumOverBlock(double value) {
  __shared__ double sums[kAdamWThreads];
  sums[threadIdx.x] = value;
  __syncthreads();
  for (unsigned stride = kAdamWThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      sums[threadIdx.x] += sums[threadIdx.x + stride];
    __syncthreads();
  }
  return sums[0];
}

/// The squares of elements [start, end) of `data` (of type T) that this
/// thread reads, each squared in f32, summed in f64.
template <typename T>
__device__ double threadSquares(const void *data, int64_t start, int64_t end) {
  const T *values = static_cast<const T *>(data);
  double sum = 0;
  for (int64_t i = start + threadIdx.x; i < end; i += blockDim.x) {
    const float x = toFloat(values[i]);
    sum += double(x * x);
  }
  return sum;
}

/// partials[chunk] = the sum of the squares of chunk blockIdx.x.
__global__ void __launch_bounds__(256)
    squaredNormPartials(const titanrt_norm_tensor *tensors,
                        const AdamWChunk *chunks, double *partials) {
  const AdamWChunk chunk = chunks[blockIdx.x];
  const titanrt_norm_tensor tensor = tensors[chunk.tensor];
  const int64_t end = min(tensor.numel, chunk.start + kAdamWChunkElements);
  const double sum = tensor.dtype == TITANRT_BF16
                         ? threadSquares<bf16>(tensor.data, chunk.start, end)
                         : threadSquares<float>(tensor.data, chunk.start, end);
  const double total = sumOverBlock(sum);
  if (threadIdx.x == 0)
    partials[blockIdx.x] = total;
}

/// *out = the sum of the `count` partials, rounded to f32 (one block).
__global__ void __launch_bounds__(256)
    squaredNormTotal(const double *partials, int64_t count, float *out) {
  double sum = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
    sum += partials[i];
  const double total = sumOverBlock(sum);
  if (threadIdx.x == 0)
    *out = float(total);
}

} // namespace

Status SquaredNormPlan::create(std::unique_ptr<SquaredNormPlan> &plan,
                               std::vector<titanrt_norm_tensor> tensors,
                               cudaStream_t stream) {
  const char *op = "titanrt_squared_norm (CUDA)";
  std::vector<int64_t> numels;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const titanrt_norm_tensor &tensor = tensors[i];
    const std::string name = "tensor " + std::to_string(i);
    TITANRT_RETURN_IF_ERROR(checkFloatDtype(op, name.c_str(), tensor.dtype));
    TITANRT_RETURN_IF_ERROR(checkExtents(op, {{name.c_str(), tensor.numel}}));
    TITANRT_RETURN_IF_ERROR(
        checkPointers(op, tensor.numel, {{name.c_str(), tensor.data}}));
    numels.push_back(tensor.numel);
  }
  std::unique_ptr<SquaredNormPlan> created(new SquaredNormPlan());
  TITANRT_RETURN_IF_ERROR(created->tables.upload(
      tensors.data(), int64_t(tensors.size() * sizeof(titanrt_norm_tensor)),
      numels, stream));
  TITANRT_RETURN_IF_ERROR(created->partials.allocate(
      std::max<int64_t>(created->getNumChunks(), 1) * int64_t(sizeof(double)),
      "the squared norm's partial sums"));
  created->tensors = std::move(tensors);
  plan = std::move(created);
  return Status::success();
}

bool SquaredNormPlan::sums(
    const std::vector<titanrt_norm_tensor> &other) const {
  auto fields = [](const titanrt_norm_tensor &t) {
    return std::tie(t.data, t.numel, t.dtype);
  };
  return std::equal(
      other.begin(), other.end(), tensors.begin(), tensors.end(),
      [&](const titanrt_norm_tensor &a, const titanrt_norm_tensor &b) {
        return fields(a) == fields(b);
      });
}

Status SquaredNormPlan::compute(cudaStream_t stream, float *out) const {
  const char *op = "titanrt_squared_norm (CUDA)";
  TITANRT_RETURN_IF_ERROR(checkPointers(op, 1, {{"out", out}}));
  const int64_t numChunks = tables.getNumChunks();
  if (numChunks > 0)
    TITANRT_RETURN_IF_ERROR(
        launchKernel(op, adamWLaunch(numChunks), stream, squaredNormPartials,
                     tables.getTensors<titanrt_norm_tensor>(),
                     tables.getChunks(), partials.as<double>()));
  return launchKernel(op, adamWLaunch(1), stream, squaredNormTotal,
                      partials.as<const double>(), numChunks, out);
}

Status SquaredNorms::compute(cudaStream_t stream,
                             const std::vector<titanrt_norm_tensor> &tensors,
                             float *out) {
  const SquaredNormPlan *plan = nullptr;
  TITANRT_RETURN_IF_ERROR(plans.get(
      [&](const SquaredNormPlan &known) { return known.sums(tensors); },
      [&](std::unique_ptr<SquaredNormPlan> &created) {
        return SquaredNormPlan::create(created, tensors, stream);
      },
      plan));
  return plan->compute(stream, out);
}
