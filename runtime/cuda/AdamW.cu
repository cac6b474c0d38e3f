//===- AdamW.cu - AdamW of all of a rank's tensors in one launch ----------===//
//
// One block per chunk of kAdamWChunkElements elements of one tensor (the
// chunk table on the device, written once by FusedAdamW::create), its 256
// threads striding over the chunk: coalesced f32 reads and writes of the
// parameter and both moments, and of the gradient (f32 or bf16).
//
//===----------------------------------------------------------------------===//

#include "cuda/AdamW.h"
#include "cuda/Arguments.h"
#include "cuda/Launch.cuh"

#include <algorithm>
#include <cstring>
#include <tuple>

using namespace titan::rt;
using namespace titan::rt::cuda;

namespace {

/// The AdamW update of elements [start, end) of `tensor` (gradients of
/// type G, multiplied by `scale`), its bf16 copy too when it has one.
template <typename G>
__device__ __forceinline__ void updateChunk(const AdamWTensor &tensor,
                                            const AdamWScalars &s, float scale,
                                            int64_t start, int64_t end) {
  const G *grad = static_cast<const G *>(tensor.grad);
  bf16 *copy = reinterpret_cast<bf16 *>(tensor.paramCopyOut);
  for (int64_t i = start + threadIdx.x; i < end; i += blockDim.x) {
    updateAdamWElement(s, toFloat(grad[i]) * scale, tensor.param[i],
                       tensor.expAvg[i], tensor.expAvgSq[i], tensor.paramOut[i],
                       tensor.expAvgOut[i], tensor.expAvgSqOut[i]);
    if (copy)
      copy[i] = fromFloat<bf16>(tensor.paramOut[i]);
  }
}

/// One chunk of one tensor per block, the step's scalars computed by the
/// block's first thread from the lr and step in device memory (as
/// adamWScalars does on the host).
__global__ void __launch_bounds__(256)
    adamWKernel(const AdamWTensor *tensors, const AdamWChunk *chunks,
                AdamWOperands shared) {
  __shared__ AdamWScalars scalars;
  if (threadIdx.x == 0)
    scalars =
        adamWScalars(adamWHyperparameters(shared, *shared.lr, *shared.step));
  __syncthreads();
  const AdamWChunk chunk = chunks[blockIdx.x];
  const AdamWTensor tensor = tensors[chunk.tensor];
  const int64_t end = min(tensor.numel, chunk.start + kAdamWChunkElements);
  const float scale = shared.gradScale ? *shared.gradScale : 1.0f;
  if (tensor.gradDtype == TITANRT_BF16)
    updateChunk<bf16>(tensor, scalars, scale, chunk.start, end);
  else
    updateChunk<float>(tensor, scalars, scale, chunk.start, end);
}

} // namespace

Status ChunkTables::upload(const void *tensors, int64_t tensorBytes,
                           const std::vector<int64_t> &numels,
                           cudaStream_t stream) {
  if (numels.size() > size_t(INT32_MAX))
    return Status::unsupported("a tensor table of more than 2^31 tensors");
  const std::vector<AdamWChunk> chunks = planAdamWChunks(numels);
  numChunks = int64_t(chunks.size());
  chunksOffset = ceilDiv(tensorBytes, 256) * 256;
  const int64_t bytes =
      chunksOffset + int64_t(chunks.size() * sizeof(AdamWChunk));
  std::vector<char> host(size_t(bytes), 0);
  if (tensorBytes > 0)
    std::memcpy(host.data(), tensors, size_t(tensorBytes));
  if (!chunks.empty())
    std::memcpy(host.data() + chunksOffset, chunks.data(),
                chunks.size() * sizeof(AdamWChunk));
  TITANRT_RETURN_IF_ERROR(tables.allocate(bytes, "a tensor table"));
  if (bytes == 0)
    return Status::success();
  // The pageable copy has left `host` when cudaMemcpyAsync returns.
  return checkCuda(cudaMemcpyAsync(tables.get(), host.data(), size_t(bytes),
                                   cudaMemcpyHostToDevice, stream),
                   "cudaMemcpyAsync", "a tensor table");
}

AdamWTensor cuda::getAdamWTensor(const AdamWOperands &o) {
  AdamWTensor tensor;
  tensor.param = o.param;
  tensor.grad = o.grad;
  tensor.expAvg = o.expAvg;
  tensor.expAvgSq = o.expAvgSq;
  tensor.paramOut = o.paramOut;
  tensor.expAvgOut = o.expAvgOut;
  tensor.expAvgSqOut = o.expAvgSqOut;
  tensor.paramCopyOut = o.paramCopyOut;
  tensor.numel = o.numel;
  tensor.gradDtype = o.gradDtype;
  return tensor;
}

Status FusedAdamW::create(std::unique_ptr<FusedAdamW> &optimizer,
                          std::vector<AdamWTensor> tensors,
                          cudaStream_t stream) {
  const char *op = "titanrt_fused_adamw (CUDA)";
  std::vector<int64_t> numels;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const AdamWTensor &tensor = tensors[i];
    std::string name = "tensor " + std::to_string(i);
    TITANRT_RETURN_IF_ERROR(checkFloatDtype(
        op, (name + " gradient dtype").c_str(), tensor.gradDtype));
    TITANRT_RETURN_IF_ERROR(checkExtents(op, {{name.c_str(), tensor.numel}}));
    TITANRT_RETURN_IF_ERROR(
        checkPointers(op, tensor.numel,
                      {{"param", tensor.param},
                       {"grad", tensor.grad},
                       {"exp_avg", tensor.expAvg},
                       {"exp_avg_sq", tensor.expAvgSq},
                       {"param_out", tensor.paramOut},
                       {"exp_avg_out", tensor.expAvgOut},
                       {"exp_avg_sq_out", tensor.expAvgSqOut}}));
    if (tensor.paramCopyOut)
      TITANRT_RETURN_IF_ERROR(checkPointers(
          op, tensor.numel, {{"param_copy_out", tensor.paramCopyOut}}));
    numels.push_back(tensor.numel);
  }
  std::unique_ptr<FusedAdamW> created(new FusedAdamW());
  TITANRT_RETURN_IF_ERROR(created->tables.upload(
      tensors.data(), int64_t(tensors.size() * sizeof(AdamWTensor)), numels,
      stream));
  created->tensors = std::move(tensors);
  optimizer = std::move(created);
  return Status::success();
}

bool FusedAdamW::updates(const std::vector<AdamWTensor> &other) const {
  auto fields = [](const AdamWTensor &t) {
    return std::tie(t.param, t.grad, t.expAvg, t.expAvgSq, t.paramOut,
                    t.expAvgOut, t.expAvgSqOut, t.paramCopyOut, t.numel,
                    t.gradDtype);
  };
  return std::equal(other.begin(), other.end(), tensors.begin(), tensors.end(),
                    [&](const AdamWTensor &a, const AdamWTensor &b) {
                      return fields(a) == fields(b);
                    });
}

Status FusedAdamW::step(cudaStream_t stream,
                        const AdamWOperands &shared) const {
  const char *op = "titanrt_fused_adamw (CUDA)";
  TITANRT_RETURN_IF_ERROR(
      checkPointers(op, 1, {{"lr", shared.lr}, {"step", shared.step}}));
  // lr and step are on the device: the host checks the rest.
  TITANRT_RETURN_IF_ERROR(checkAdamWHyperparameters(
      adamWHyperparameters(shared, /*lr=*/0, /*step=*/0), op));
  if (tables.getNumChunks() == 0)
    return Status::success();
  return launchKernel(op, adamWLaunch(tables.getNumChunks()), stream,
                      adamWKernel, tables.getTensors<AdamWTensor>(),
                      tables.getChunks(), shared);
}

Status AdamWOptimizers::step(cudaStream_t stream,
                             const std::vector<AdamWOperands> &tensors) {
  if (tensors.empty())
    return Status::success();
  std::vector<AdamWTensor> list;
  for (const AdamWOperands &operands : tensors)
    list.push_back(getAdamWTensor(operands));
  const FusedAdamW *optimizer = nullptr;
  TITANRT_RETURN_IF_ERROR(optimizers.get(
      [&](const FusedAdamW &known) { return known.updates(list); },
      [&](std::unique_ptr<FusedAdamW> &created) {
        return FusedAdamW::create(created, list, stream);
      },
      optimizer));
  return optimizer->step(stream, tensors.front());
}
