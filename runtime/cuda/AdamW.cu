//===- AdamW.cu - AdamW of one tensor or of all of them -------------------===//
//
// One block per chunk of kAdamWChunkElements elements of one tensor (for
// FusedAdamW the chunk table is on the device, written once by
// FusedAdamW::create; for titanrt_adamw the chunks are the block indices),
// its 256 threads striding over the chunk: coalesced f32 reads and writes
// of the parameter and both moments, and of the gradient (f32 or bf16).
//
//===----------------------------------------------------------------------===//

#include "cuda/AdamW.h"
#include "cuda/Arguments.h"
#include "cuda/Launch.cuh"

#include <cstring>

using namespace titan::rt;
using namespace titan::rt::cuda;

namespace {

/// The AdamW update of element i: reads param, grad (multiplied by
/// `scale`), m and v at i and writes the updates to the outputs at i
/// (which may be the inputs).
template <typename G>
__device__ __forceinline__ void
updateElement(const AdamWScalars &s, float scale, const float *param,
              const G *grad, const float *expAvg, const float *expAvgSq,
              float *paramOut, float *expAvgOut, float *expAvgSqOut,
              int64_t i) {
  updateAdamWElement(s, toFloat(grad[i]) * scale, param[i], expAvg[i],
                     expAvgSq[i], paramOut[i], expAvgOut[i], expAvgSqOut[i]);
}

/// One chunk of one tensor per block: the AdamW update of its elements
/// (gradients of type G).
template <typename G>
__global__ void __launch_bounds__(256)
    adamWKernel(const AdamWTensor *tensors, const AdamWChunk *chunks,
                AdamWScalars s, const float *gradScale) {
  const AdamWChunk chunk = chunks[blockIdx.x];
  const AdamWTensor tensor = tensors[chunk.tensor];
  const int64_t end = min(tensor.numel, chunk.start + kAdamWChunkElements);
  const float scale = gradScale ? *gradScale : 1.0f;
  const G *grad = static_cast<const G *>(tensor.grad);
  for (int64_t i = chunk.start + threadIdx.x; i < end; i += blockDim.x)
    updateElement(s, scale, tensor.param, grad, tensor.expAvg, tensor.expAvgSq,
                  tensor.param, tensor.expAvg, tensor.expAvgSq, i);
}

/// titanrt_adamw of one tensor: chunk blockIdx.x of `o`'s elements, the
/// step's scalars computed by the block's first thread from the lr and
/// step in device memory (as adamWScalars does on the host); the updated
/// parameter's bf16 copy too when `o` asks for one.
template <typename G>
__global__ void __launch_bounds__(256) adamWTensorKernel(AdamWOperands o) {
  __shared__ AdamWScalars scalars;
  if (threadIdx.x == 0)
    scalars = adamWScalars(adamWHyperparameters(o, *o.lr, *o.step));
  __syncthreads();
  const AdamWScalars s = scalars;
  const int64_t start = int64_t(blockIdx.x) * kAdamWChunkElements;
  const int64_t end = min(o.numel, start + kAdamWChunkElements);
  const float scale = o.gradScale ? *o.gradScale : 1.0f;
  const G *grad = static_cast<const G *>(o.grad);
  bf16 *copy = reinterpret_cast<bf16 *>(o.paramCopyOut);
  for (int64_t i = start + threadIdx.x; i < end; i += blockDim.x) {
    updateElement(s, scale, o.param, grad, o.expAvg, o.expAvgSq, o.paramOut,
                  o.expAvgOut, o.expAvgSqOut, i);
    if (copy)
      copy[i] = fromFloat<bf16>(o.paramOut[i]);
  }
}

} // namespace

Status FusedAdamW::create(std::unique_ptr<FusedAdamW> &optimizer,
                          int32_t gradDtype, std::vector<AdamWTensor> tensors,
                          cudaStream_t stream) {
  const char *op = "adamw (CUDA)";
  TITANRT_RETURN_IF_ERROR(checkFloatDtype(op, "gradient dtype", gradDtype));
  std::vector<int64_t> numels;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const AdamWTensor &tensor = tensors[i];
    std::string name = "tensor " + std::to_string(i);
    TITANRT_RETURN_IF_ERROR(checkExtents(op, {{name.c_str(), tensor.numel}}));
    TITANRT_RETURN_IF_ERROR(checkPointers(op, tensor.numel,
                                          {{"param", tensor.param},
                                           {"grad", tensor.grad},
                                           {"exp_avg", tensor.expAvg},
                                           {"exp_avg_sq", tensor.expAvgSq}}));
    numels.push_back(tensor.numel);
  }
  if (tensors.size() > size_t(INT32_MAX))
    return Status::unsupported(std::string(op) + ": more than 2^31 tensors");
  std::vector<AdamWChunk> chunks = planAdamWChunks(numels);

  std::unique_ptr<FusedAdamW> created(new FusedAdamW());
  created->gradDtype = gradDtype;
  created->numChunks = int64_t(chunks.size());
  const int64_t tensorBytes = int64_t(tensors.size() * sizeof(AdamWTensor));
  created->chunksOffset = ceilDiv(tensorBytes, 256) * 256;
  const int64_t bytes =
      created->chunksOffset + int64_t(chunks.size() * sizeof(AdamWChunk));
  std::vector<char> host(size_t(bytes), 0);
  if (!tensors.empty())
    std::memcpy(host.data(), tensors.data(), size_t(tensorBytes));
  if (!chunks.empty())
    std::memcpy(host.data() + created->chunksOffset, chunks.data(),
                chunks.size() * sizeof(AdamWChunk));
  TITANRT_RETURN_IF_ERROR(
      created->tables.allocate(bytes, "the AdamW tensor table"));
  if (bytes > 0)
    TITANRT_RETURN_IF_ERROR(checkCuda(
        cudaMemcpyAsync(created->tables.get(), host.data(), size_t(bytes),
                        cudaMemcpyHostToDevice, stream),
        "cudaMemcpyAsync", "the AdamW tensor table"));
  // The pageable copy has left `host` when cudaMemcpyAsync returns.
  optimizer = std::move(created);
  return Status::success();
}

Status FusedAdamW::step(cudaStream_t stream, const AdamWHyperparameters &hyper,
                        const float *gradScale) const {
  TITANRT_RETURN_IF_ERROR(checkAdamWHyperparameters(hyper, "adamw (CUDA)"));
  if (numChunks == 0)
    return Status::success();
  const auto *tensors = tables.as<const AdamWTensor>();
  const auto *chunks = reinterpret_cast<const AdamWChunk *>(
      tables.as<const char>() + chunksOffset);
  const AdamWScalars scalars = adamWScalars(hyper);
  return withFloatType(gradDtype, [&](auto g) {
    using G = decltype(g);
    return launchKernel("adamw (CUDA)", adamWLaunch(numChunks), stream,
                        adamWKernel<G>, tensors, chunks, scalars, gradScale);
  });
}

Status cuda::adamWStep(cudaStream_t stream, const AdamWOperands &o) {
  const char *op = "titanrt_adamw (CUDA)";
  TITANRT_RETURN_IF_ERROR(checkFloatDtype(op, "grad_dtype", o.gradDtype));
  TITANRT_RETURN_IF_ERROR(checkExtents(op, {{"numel", o.numel}}));
  TITANRT_RETURN_IF_ERROR(checkPointers(op, o.numel,
                                        {{"param", o.param},
                                         {"grad", o.grad},
                                         {"exp_avg", o.expAvg},
                                         {"exp_avg_sq", o.expAvgSq},
                                         {"lr", o.lr},
                                         {"step", o.step},
                                         {"param_out", o.paramOut},
                                         {"exp_avg_out", o.expAvgOut},
                                         {"exp_avg_sq_out", o.expAvgSqOut}}));
  if (o.paramCopyOut)
    TITANRT_RETURN_IF_ERROR(
        checkPointers(op, o.numel, {{"param_copy_out", o.paramCopyOut}}));
  // lr and step are on the device: the host checks the rest.
  TITANRT_RETURN_IF_ERROR(checkAdamWHyperparameters(
      adamWHyperparameters(o, /*lr=*/0, /*step=*/0), op));
  if (o.numel == 0)
    return Status::success();
  return withFloatType(o.gradDtype, [&](auto g) {
    using G = decltype(g);
    return launchKernel(op, adamWLaunch(ceilDiv(o.numel, kAdamWChunkElements)),
                        stream, adamWTensorKernel<G>, o);
  });
}
