//===- AdamW.cu - AdamW of all of a rank's tensors in one launch ----------===//
//
// One block per chunk of kAdamWChunkElements elements of one tensor (the
// chunk table on the device, written once by FusedAdamW::create), its 256
// threads striding over the chunk: coalesced reads and writes of the
// parameter and both moments (f32, or bf16 in pure bf16 training) and of
// the gradient (f32 or bf16).
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

/// The AdamW update of elements [start, end) of `t` (parameters and moments
/// of type P, gradients of type G, multiplied by `scale`) in f32, each
/// result rounded to P once; its bf16 copy too when it has one.
template <typename P, typename G>
__device__ __forceinline__ void updateChunk(const titanrt_adamw_tensor &t,
                                            const AdamWScalars &s, float scale,
                                            int64_t start, int64_t end) {
  const G *grad = static_cast<const G *>(t.grad);
  const P *param = static_cast<const P *>(t.param);
  const P *expAvg = static_cast<const P *>(t.exp_avg);
  const P *expAvgSq = static_cast<const P *>(t.exp_avg_sq);
  P *paramOut = static_cast<P *>(t.param_out);
  P *expAvgOut = static_cast<P *>(t.exp_avg_out);
  P *expAvgSqOut = static_cast<P *>(t.exp_avg_sq_out);
  bf16 *copy = static_cast<bf16 *>(t.param_copy_out);
  for (int64_t i = start + threadIdx.x; i < end; i += blockDim.x) {
    float p, m, v;
    updateAdamWElement(s, toFloat(grad[i]) * scale, toFloat(param[i]),
                       toFloat(expAvg[i]), toFloat(expAvgSq[i]), p, m, v);
    paramOut[i] = fromFloat<P>(p);
    expAvgOut[i] = fromFloat<P>(m);
    expAvgSqOut[i] = fromFloat<P>(v);
    if (copy)
      copy[i] = fromFloat<bf16>(p);
  }
}

/// One chunk of one tensor per block, the step's scalars computed by the
/// block's first thread from the lr and step in device memory (as
/// adamWScalars does on the host).
__global__ void __launch_bounds__(256)
    adamWKernel(const titanrt_adamw_tensor *tensors, const AdamWChunk *chunks,
                AdamWCall call) {
  __shared__ AdamWScalars scalars;
  if (threadIdx.x == 0)
    scalars = adamWScalars(adamWHyperparameters(call, *call.lr, *call.step));
  __syncthreads();
  const AdamWChunk chunk = chunks[blockIdx.x];
  const titanrt_adamw_tensor tensor = tensors[chunk.tensor];
  const int64_t end = min(tensor.numel, chunk.start + kAdamWChunkElements);
  const float scale = call.gradScale ? *call.gradScale : 1.0f;
  const bool bf16Grad = tensor.grad_dtype == TITANRT_BF16;
  if (tensor.param_dtype == TITANRT_BF16) {
    if (bf16Grad)
      updateChunk<bf16, bf16>(tensor, scalars, scale, chunk.start, end);
    else
      updateChunk<bf16, float>(tensor, scalars, scale, chunk.start, end);
  } else if (bf16Grad) {
    updateChunk<float, bf16>(tensor, scalars, scale, chunk.start, end);
  } else {
    updateChunk<float, float>(tensor, scalars, scale, chunk.start, end);
  }
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

Status FusedAdamW::create(std::unique_ptr<FusedAdamW> &optimizer,
                          std::vector<titanrt_adamw_tensor> tensors,
                          cudaStream_t stream) {
  const char *op = "titanrt_fused_adamw (CUDA)";
  std::vector<int64_t> numels;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const titanrt_adamw_tensor &tensor = tensors[i];
    std::string name = "tensor " + std::to_string(i);
    TITANRT_RETURN_IF_ERROR(checkFloatDtype(
        op, (name + " gradient dtype").c_str(), tensor.grad_dtype));
    TITANRT_RETURN_IF_ERROR(checkFloatDtype(
        op, (name + " parameter dtype").c_str(), tensor.param_dtype));
    if (tensor.param_dtype == TITANRT_BF16 && tensor.param_copy_out)
      return Status::invalidArgument(
          std::string(op) + ": " + name +
          ": a bf16 parameter has no narrower copy (param_copy_out must be "
          "null)");
    TITANRT_RETURN_IF_ERROR(checkExtents(op, {{name.c_str(), tensor.numel}}));
    TITANRT_RETURN_IF_ERROR(
        checkPointers(op, tensor.numel,
                      {{"param", tensor.param},
                       {"grad", tensor.grad},
                       {"exp_avg", tensor.exp_avg},
                       {"exp_avg_sq", tensor.exp_avg_sq},
                       {"param_out", tensor.param_out},
                       {"exp_avg_out", tensor.exp_avg_out},
                       {"exp_avg_sq_out", tensor.exp_avg_sq_out}}));
    if (tensor.param_copy_out)
      TITANRT_RETURN_IF_ERROR(checkPointers(
          op, tensor.numel, {{"param_copy_out", tensor.param_copy_out}}));
    numels.push_back(tensor.numel);
  }
  std::unique_ptr<FusedAdamW> created(new FusedAdamW());
  TITANRT_RETURN_IF_ERROR(created->tables.upload(
      tensors.data(), int64_t(tensors.size() * sizeof(titanrt_adamw_tensor)),
      numels, stream));
  created->tensors = std::move(tensors);
  optimizer = std::move(created);
  return Status::success();
}

bool FusedAdamW::updates(const std::vector<titanrt_adamw_tensor> &other) const {
  auto fields = [](const titanrt_adamw_tensor &t) {
    return std::tie(t.param, t.grad, t.exp_avg, t.exp_avg_sq, t.param_out,
                    t.exp_avg_out, t.exp_avg_sq_out, t.param_copy_out, t.numel,
                    t.grad_dtype, t.param_dtype);
  };
  return std::equal(
      other.begin(), other.end(), tensors.begin(), tensors.end(),
      [&](const titanrt_adamw_tensor &a, const titanrt_adamw_tensor &b) {
        return fields(a) == fields(b);
      });
}

Status FusedAdamW::step(cudaStream_t stream, const AdamWCall &call) const {
  const char *op = "titanrt_fused_adamw (CUDA)";
  TITANRT_RETURN_IF_ERROR(
      checkPointers(op, 1, {{"lr", call.lr}, {"step", call.step}}));
  // lr and step are on the device: the host checks the rest.
  TITANRT_RETURN_IF_ERROR(checkAdamWHyperparameters(
      adamWHyperparameters(call, /*lr=*/0, /*step=*/0), op));
  if (tables.getNumChunks() == 0)
    return Status::success();
  return launchKernel(op, adamWLaunch(tables.getNumChunks()), stream,
                      adamWKernel, tables.getTensors<titanrt_adamw_tensor>(),
                      tables.getChunks(), call);
}

Status AdamWOptimizers::step(cudaStream_t stream,
                             const std::vector<titanrt_adamw_tensor> &tensors,
                             const AdamWCall &call) {
  if (tensors.empty())
    return Status::success();
  const FusedAdamW *optimizer = nullptr;
  TITANRT_RETURN_IF_ERROR(optimizers.get(
      [&](const FusedAdamW &known) { return known.updates(tensors); },
      [&](std::unique_ptr<FusedAdamW> &created) {
        return FusedAdamW::create(created, tensors, stream);
      },
      optimizer));
  return optimizer->step(stream, call);
}
