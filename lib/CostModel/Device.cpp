//===- Device.cpp - what a device computes and moves per second -----------===//
//
// See include/titan/CostModel/Device.h.
//
//===----------------------------------------------------------------------===//

#include "titan/CostModel/Device.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::titan;

static llvm::Error invalid(const DeviceDescription &device,
                           const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "device '" + device.name + "': " + message);
}

llvm::Error mlir::titan::verifyDevice(const DeviceDescription &device) {
  auto positive = [](double value) {
    return std::isfinite(value) && value > 0;
  };
  auto fraction = [&](double value) { return positive(value) && value <= 1; };
  if (!positive(device.memoryBytes))
    return invalid(device, "memory_gib must be positive");
  if (device.ranksPerNode < 0)
    return invalid(device, "ranks_per_node must be 0 (one node) or positive");
  if (device.threadsPerRank < 0)
    return invalid(device, "threads_per_rank must be 0 (not a CPU device) or "
                           "positive");
  if (!(device.hardwareThreadsPerRank == 0 ||
        (positive(device.hardwareThreadsPerRank) &&
         device.hardwareThreadsPerRank <= double(device.threadsPerRank))))
    return invalid(device, "hardware_threads_per_rank must be in (0, "
                           "threads_per_rank], or absent");
  for (const std::optional<double> &peak : device.matmulPeak)
    if (peak && !positive(*peak))
      return invalid(device, "every [peak_tflops] entry must be positive");
  if (!positive(device.vectorPeak))
    return invalid(device, "peak_tflops.vector must be positive");
  if (!positive(device.memoryBytesPerSecond))
    return invalid(device, "memory.bandwidth_gbps must be positive");
  if (!fraction(device.memoryEfficiency))
    return invalid(device, "memory.efficiency must be in (0, 1]");
  if (!(device.opOverheadSeconds >= 0 &&
        std::isfinite(device.opOverheadSeconds)))
    return invalid(device, "op_overhead_us must be non-negative");
  if (device.gemmEfficiency.empty())
    return invalid(device, "[gemm] needs at least one point");
  for (auto [index, point] : llvm::enumerate(device.gemmEfficiency)) {
    if (!positive(point.flops) || !fraction(point.efficiency))
      return invalid(device, "gemm point " + llvm::Twine(index) +
                                 ": flops must be positive and efficiency "
                                 "in (0, 1]");
    if (index && point.flops <= device.gemmEfficiency[index - 1].flops)
      return invalid(device, "gemm.flops must be ascending");
  }
  if (!fraction(device.attentionEfficiency))
    return invalid(device, "gemm.attention_efficiency must be in (0, 1]");
  for (auto [name, link] : {std::pair{"intra_node", &device.intraNode},
                            std::pair{"inter_node", &device.interNode}}) {
    if (!positive(link->bytesPerSecond))
      return invalid(device,
                     llvm::Twine(name) + ".bandwidth_gbps must be positive");
    if (!(link->latencySeconds >= 0 && std::isfinite(link->latencySeconds)))
      return invalid(device,
                     llvm::Twine(name) + ".latency_us must be non-negative");
  }
  return llvm::Error::success();
}

double mlir::titan::getMatmulPeak(const DeviceDescription &device,
                                  ElementType type) {
  auto peakOf = [&](ElementType t) -> const std::optional<double> & {
    return device.matmulPeak[static_cast<unsigned>(t)];
  };
  if (isFloatElementType(type) && peakOf(type))
    return *peakOf(type);
  if (peakOf(ElementType::F32))
    return *peakOf(ElementType::F32);
  return device.vectorPeak;
}

double mlir::titan::getGemmEfficiency(const DeviceDescription &device,
                                      double flops) {
  llvm::ArrayRef<GemmEfficiencyPoint> curve = device.gemmEfficiency;
  if (flops <= curve.front().flops)
    return curve.front().efficiency;
  if (flops >= curve.back().flops)
    return curve.back().efficiency;
  auto upper = llvm::find_if(
      curve, [&](const GemmEfficiencyPoint &p) { return p.flops > flops; });
  const GemmEfficiencyPoint &lower = *(upper - 1);
  double t =
      std::log(flops / lower.flops) / std::log(upper->flops / lower.flops);
  return lower.efficiency + t * (upper->efficiency - lower.efficiency);
}

double mlir::titan::predictComputeSeconds(const DeviceDescription &device,
                                          ComputeClass kind, ElementType type,
                                          double flops, double bytes) {
  double rate = device.vectorPeak;
  if (kind == ComputeClass::Gemm)
    rate = getMatmulPeak(device, type) * getGemmEfficiency(device, flops);
  else if (kind == ComputeClass::Attention)
    rate = getMatmulPeak(device, type) * device.attentionEfficiency;
  double computeSeconds = flops / rate;
  double memorySeconds =
      bytes / (device.memoryBytesPerSecond * device.memoryEfficiency);
  return std::max(computeSeconds, memorySeconds) + device.opOverheadSeconds;
}

double mlir::titan::predictCopySeconds(const DeviceDescription &device,
                                       double bytes) {
  return predictComputeSeconds(device, ComputeClass::Vector, ElementType::F32,
                               0, 2.0 * bytes);
}

int64_t mlir::titan::getRingSteps(CollectiveKind kind, int64_t groupSize) {
  if (groupSize <= 1)
    return 0;
  switch (kind) {
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    return groupSize - 1;
  case CollectiveKind::AllReduce:
    return 2 * (groupSize - 1);
  case CollectiveKind::Broadcast:
  case CollectiveKind::Send:
  case CollectiveKind::Recv:
    return 1;
  }
  llvm_unreachable("unknown CollectiveKind");
}

bool mlir::titan::axisSpansNodes(llvm::ArrayRef<int64_t> meshSizes,
                                 unsigned axis, int64_t ranksPerNode) {
  int64_t worldSize = 1;
  for (int64_t size : meshSizes)
    worldSize *= size;
  if (ranksPerNode <= 0 || ranksPerNode >= worldSize)
    return false;
  int64_t stride = 1;
  for (unsigned later = axis + 1; later < meshSizes.size(); ++later)
    stride *= meshSizes[later];
  // Every group is {base + j * stride}: it stays on one node when its first
  // and last ranks do.
  int64_t span = stride * (meshSizes[axis] - 1);
  for (int64_t base = 0; base < worldSize; ++base) {
    if ((base / stride) % meshSizes[axis] != 0)
      continue; // Not the first member of its group.
    if (base / ranksPerNode != (base + span) / ranksPerNode)
      return true;
  }
  return false;
}

const LinkDescription &
mlir::titan::getAxesLink(const DeviceDescription &device,
                         llvm::ArrayRef<int64_t> meshSizes,
                         llvm::ArrayRef<unsigned> axes, int64_t ranksPerNode) {
  bool spans = llvm::any_of(axes, [&](unsigned axis) {
    return axisSpansNodes(meshSizes, axis, ranksPerNode);
  });
  return spans ? device.interNode : device.intraNode;
}

double mlir::titan::predictCollectiveSeconds(const LinkDescription &link,
                                             CollectiveKind kind,
                                             int64_t groupSize,
                                             double bytesSent) {
  if (groupSize <= 1)
    return 0;
  return double(getRingSteps(kind, groupSize)) * link.latencySeconds +
         bytesSent / link.bytesPerSecond;
}

double mlir::titan::getModelFlopsPerToken(double nonEmbeddingParameters,
                                          double attentionWidthSum,
                                          double seqLen) {
  return 6 * nonEmbeddingParameters + 12 * attentionWidthSum * seqLen;
}
