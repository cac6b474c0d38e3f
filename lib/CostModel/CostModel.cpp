//===- CostModel.cpp - what communication and compute cost ----------------===//
//
// See include/titan/CostModel/CostModel.h.
//
//===----------------------------------------------------------------------===//

#include "titan/CostModel/CostModel.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

#include <limits>
#include <string>

using namespace mlir;
using namespace mlir::titan;

double mlir::titan::getBytesSentPerRank(CollectiveKind kind, int64_t groupSize,
                                        double inputBytes) {
  double n = groupSize;
  switch (kind) {
  case CollectiveKind::AllGather:
    // Each rank receives (and a ring forwards) n-1 shards.
    return (n - 1) * inputBytes;
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    return (n - 1) / n * inputBytes;
  case CollectiveKind::AllReduce:
    return 2 * (n - 1) / n * inputBytes;
  case CollectiveKind::Broadcast:
  case CollectiveKind::Send:
    return inputBytes;
  case CollectiveKind::Recv:
    return 0;
  }
  llvm_unreachable("unknown CollectiveKind");
}

/// The product of `values` as a double.
static double product(llvm::ArrayRef<int64_t> values) {
  double result = 1;
  for (int64_t value : values)
    result *= double(value);
  return result;
}

double mlir::titan::getStepBytesPerRank(const RedistributeStep &step,
                                        int64_t axisSize,
                                        int64_t elementBytes) {
  double bytes = elementBytes, n = axisSize;
  switch (step.kind) {
  case StepKind::AllGather:
    return getBytesSentPerRank(CollectiveKind::AllGather, axisSize,
                               product(step.paddedBefore) * bytes);
  case StepKind::ReduceScatter:
    // The operand is n padded chunks.
    return getBytesSentPerRank(CollectiveKind::ReduceScatter, axisSize,
                               n * product(step.paddedAfter) * bytes);
  case StepKind::AllReduce:
    return getBytesSentPerRank(CollectiveKind::AllReduce, axisSize,
                               product(step.paddedBefore) * bytes);
  case StepKind::AllToAll: {
    // The local buffer is dim j padded to n blocks; n-1 of them leave.
    llvm::SmallVector<int64_t> block(step.paddedBefore);
    block[*step.shardDim] = step.paddedAfter[*step.shardDim];
    return getBytesSentPerRank(CollectiveKind::AllToAll, axisSize,
                               n * product(block) * bytes);
  }
  case StepKind::LocalChunk:
  case StepKind::Partition:
    return 0;
  }
  llvm_unreachable("unknown StepKind");
}

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<RedistributeCost> mlir::titan::estimateRedistributeCost(
    llvm::ArrayRef<RedistributeStep> steps, llvm::ArrayRef<int64_t> meshSizes,
    int64_t elementBytes, llvm::ArrayRef<double> axisBandwidth) {
  if (elementBytes < 1)
    return makeError("element size " + llvm::Twine(elementBytes) +
                     " bytes is not positive; give the dtype's byte width");
  if (!axisBandwidth.empty() && axisBandwidth.size() != meshSizes.size())
    return makeError("got " + llvm::Twine(axisBandwidth.size()) +
                     " axis bandwidths for a mesh of " +
                     llvm::Twine(meshSizes.size()) +
                     " axes; give one per axis or none");
  for (auto [axis, bandwidth] : llvm::enumerate(axisBandwidth))
    if (!(bandwidth > 0))
      return makeError("bandwidth of mesh axis " + llvm::Twine(axis) + " is " +
                       std::to_string(bandwidth) +
                       "; bandwidths must be positive");
  RedistributeCost cost;
  for (const RedistributeStep &step : steps) {
    if (step.meshAxis >= meshSizes.size())
      return makeError("step " + step.str() + " runs on mesh axis " +
                       llvm::Twine(step.meshAxis) + " of a mesh with " +
                       llvm::Twine(meshSizes.size()) + " axes");
    double bytes =
        getStepBytesPerRank(step, meshSizes[step.meshAxis], elementBytes);
    double seconds =
        axisBandwidth.empty() ? 0.0 : bytes / axisBandwidth[step.meshAxis];
    cost.stepBytes.push_back(bytes);
    cost.stepSeconds.push_back(seconds);
    cost.totalBytes += bytes;
    cost.totalSeconds += seconds;
  }
  return cost;
}

RedistributeCost mlir::titan::estimateRedistribution(
    llvm::ArrayRef<int64_t> shape, int64_t elementBytes,
    llvm::ArrayRef<Placement> from, llvm::ArrayRef<Placement> to,
    llvm::ArrayRef<int64_t> meshSizes, llvm::ArrayRef<double> axisBandwidth) {
  if (from == to)
    return {};
  RedistributeCost refused;
  refused.totalBytes = refused.totalSeconds =
      std::numeric_limits<double>::infinity();
  llvm::SmallVector<int64_t> staticShape(shape);
  for (int64_t &size : staticShape)
    if (size < 0)
      size = 1;
  auto steps = planRedistribution(staticShape, meshSizes, from, to);
  if (!steps) {
    llvm::consumeError(steps.takeError());
    return refused;
  }
  auto cost =
      estimateRedistributeCost(*steps, meshSizes, elementBytes, axisBandwidth);
  if (!cost) {
    llvm::consumeError(cost.takeError());
    return refused;
  }
  return *cost;
}
