//===- AdamW.h - AdamW on the GPU -------------------------------*- C++ -*-===//
//
// Two launchers of one update. titanrt_adamw (adamWStep), what the
// executables call: one parameter per launch, its lr and step read on the
// device. FusedAdamW: one launch updates every parameter of a rank: the
// tensors' list is cut once into chunks of kAdamWChunkElements
// (planAdamWChunks) and copied to the GPU with the tensors' pointers; each
// step launches one block per chunk. The arithmetic is titan.adamw's
// (dialects/titan/TitanComputeOps.td), which is torch.optim.AdamW's: with
// t = step + 1, the step-dependent scalars in double, then per element in
// f32
//   p = p * (1 - lr * weight_decay)
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g^2
//   p = p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// Parameters and moments are f32 (the master copy), gradients f32 or bf16,
// optionally scaled by a clipping coefficient on the device.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_ADAMW_H
#define TITAN_RUNTIME_CUDA_ADAMW_H

#include "core/Status.h"
#include "cuda/Device.h"
#include "cuda/LaunchConfig.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace titan::rt::cuda {

/// One parameter and its optimizer state (device pointers, `numel`
/// elements each).
struct AdamWTensor {
  float *param = nullptr;
  const void *grad = nullptr;
  float *expAvg = nullptr;
  float *expAvgSq = nullptr;
  int64_t numel = 0;
};

/// The fused AdamW of a fixed list of tensors (a rank's parameters, whose
/// places the memory plan fixed).
class FusedAdamW {
public:
  /// Plans the chunks of `tensors` (gradients of `gradDtype`, TITANRT_F32 or
  /// TITANRT_BF16) and copies the tables to the device on `stream`.
  static Status create(std::unique_ptr<FusedAdamW> &optimizer,
                       int32_t gradDtype, std::vector<AdamWTensor> tensors,
                       cudaStream_t stream);

  /// Updates every tensor in one launch on `stream`. `gradScale`, if not
  /// null, is an f32 on the device every gradient is multiplied by first
  /// (the global-norm clipping coefficient).
  Status step(cudaStream_t stream, const AdamWHyperparameters &hyper,
              const float *gradScale = nullptr) const;

  int64_t getNumChunks() const { return numChunks; }

private:
  FusedAdamW() = default;

  int32_t gradDtype = TITANRT_F32;
  int64_t numChunks = 0;
  /// AdamWTensor[tensors] then AdamWChunk[numChunks].
  DeviceBuffer tables;
  int64_t chunksOffset = 0;
};

/// titanrt_adamw of one tensor on `stream`: one block per
/// kAdamWChunkElements elements, the step's scalars computed on the device
/// from the lr and step in device memory (titan.adamw; the executables'
/// optimizer, one call per parameter).
Status adamWStep(cudaStream_t stream, const AdamWOperands &operands);

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_ADAMW_H
