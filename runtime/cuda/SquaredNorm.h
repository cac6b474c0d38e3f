//===- SquaredNorm.h - the gradients' squared norm on the GPU ---*- C++ -*-===//
//
// titanrt_squared_norm on the device (titan.squared_norm): the sum of the
// squares of every element of a list of tensors, in two launches whatever
// their number. The tensors are cut into the optimizer's chunks
// (planAdamWChunks); one block per chunk squares its elements in f32 and
// sums them in f64, its threads' sums added in a fixed tree order, into one
// partial per chunk; then one block adds the partials in a fixed order and
// writes the total rounded to f32. No atomics: the bits depend on the sizes
// alone.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_SQUAREDNORM_H
#define TITAN_RUNTIME_CUDA_SQUAREDNORM_H

#include "core/ComputeBackend.h"
#include "core/Status.h"
#include "cuda/AdamW.h"
#include "cuda/Device.h"
#include "cuda/PlanCache.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace titan::rt::cuda {

/// The squared norm of a fixed list of tensors (device pointers): the
/// tables and the partials on the device.
class SquaredNormPlan {
public:
  /// Checks `tensors`, plans their chunks and copies the tables to the
  /// device on `stream`.
  static Status create(std::unique_ptr<SquaredNormPlan> &plan,
                       std::vector<titanrt_norm_tensor> tensors,
                       cudaStream_t stream);

  /// Whether this sums exactly `tensors`, in this order.
  bool sums(const std::vector<titanrt_norm_tensor> &tensors) const;

  /// Writes the sum of the squares to `out` (an f32 on the device), two
  /// launches on `stream`.
  Status compute(cudaStream_t stream, float *out) const;

  int64_t getNumChunks() const { return tables.getNumChunks(); }

private:
  SquaredNormPlan() = default;

  std::vector<titanrt_norm_tensor> tensors;
  ChunkTables tables;
  /// One double per chunk.
  DeviceBuffer partials;
};

/// The plan of each list of tensors a backend has been asked to sum.
class SquaredNorms {
public:
  /// titanrt_squared_norm of `tensors` into `out` on `stream`.
  Status compute(cudaStream_t stream,
                 const std::vector<titanrt_norm_tensor> &tensors, float *out);

  /// The lists known.
  size_t size() const { return plans.size(); }

private:
  PlanCache<SquaredNormPlan> plans;
};

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_SQUAREDNORM_H
