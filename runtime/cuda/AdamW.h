//===- AdamW.h - AdamW on the GPU -------------------------------*- C++ -*-===//
//
// titanrt_fused_adamw on the device: FusedAdamW updates every parameter of a
// rank in one launch. The tensors' list is cut once into chunks of
// kAdamWChunkElements (planAdamWChunks) and copied to the GPU with the
// tensors' pointers; each step launches one block per chunk, whose first
// thread computes the step's scalars from the lr and step in device memory.
// The arithmetic is titan.adamw's (dialects/titan/TitanComputeOps.td), which
// is torch.optim.AdamW's: with t = step + 1, the step-dependent scalars in
// double, then per element in f32
//   p = p * (1 - lr * weight_decay)
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g^2
//   p = p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// Parameters and moments are f32 (the master copy) or bf16 (pure bf16
// training: computed in f32, each result rounded once), gradients f32 or
// bf16 (per tensor), optionally scaled by a clipping coefficient on the
// device;
// the updates go to the inputs or to other buffers, and optionally the
// updated parameter's bf16 copy too.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_ADAMW_H
#define TITAN_RUNTIME_CUDA_ADAMW_H

#include "core/Status.h"
#include "cuda/Device.h"
#include "cuda/LaunchConfig.h"
#include "cuda/PlanCache.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace titan::rt::cuda {

/// A list of tensors on the device, cut into chunks of
/// kAdamWChunkElements (planAdamWChunks) for one block each: the tensors'
/// table, then from the next multiple of 256 bytes the chunks' table.
class ChunkTables {
public:
  /// Plans the chunks of tensors of `numels` elements and copies the
  /// tables (`tensorBytes` bytes of tensors at `tensors`, then the chunks)
  /// to the device on `stream`.
  Status upload(const void *tensors, int64_t tensorBytes,
                const std::vector<int64_t> &numels, cudaStream_t stream);

  /// The tensors' table on the device.
  template <typename T> const T *getTensors() const {
    return tables.as<const T>();
  }
  const AdamWChunk *getChunks() const {
    return reinterpret_cast<const AdamWChunk *>(tables.as<const char>() +
                                                chunksOffset);
  }
  int64_t getNumChunks() const { return numChunks; }

private:
  DeviceBuffer tables;
  int64_t chunksOffset = 0;
  int64_t numChunks = 0;
};

/// The fused AdamW of a fixed list of tensors (a rank's parameters, whose
/// places the memory plan fixed).
class FusedAdamW {
public:
  /// Checks `tensors` (device pointers), plans their chunks and copies the
  /// tables to the device on `stream`.
  static Status create(std::unique_ptr<FusedAdamW> &optimizer,
                       std::vector<titanrt_adamw_tensor> tensors,
                       cudaStream_t stream);

  /// Whether this updates exactly `tensors`, in this order.
  bool updates(const std::vector<titanrt_adamw_tensor> &tensors) const;

  /// Updates every tensor in one launch on `stream`, with the lr, step
  /// (f32 scalars on the device), gradScale (an f32 on the device every
  /// gradient is multiplied by first, or null) and hyperparameters of
  /// `call`.
  Status step(cudaStream_t stream, const AdamWCall &call) const;

  int64_t getNumChunks() const { return tables.getNumChunks(); }

private:
  FusedAdamW() = default;

  /// The tensors, as the tables on the device hold them.
  std::vector<titanrt_adamw_tensor> tensors;
  ChunkTables tables;
};

/// The FusedAdamW of each list of tensors a backend has been asked to
/// update: a compiled program passes one list per titan.fused_adamw, the
/// same every step, so its tables are uploaded once, on the first step.
class AdamWOptimizers {
public:
  /// titanrt_fused_adamw of `tensors` with `call`'s lr, step, gradScale and
  /// hyperparameters on `stream`.
  Status step(cudaStream_t stream,
              const std::vector<titanrt_adamw_tensor> &tensors,
              const AdamWCall &call);

  /// The lists known.
  size_t size() const { return optimizers.size(); }

private:
  PlanCache<FusedAdamW> optimizers;
};

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_ADAMW_H
