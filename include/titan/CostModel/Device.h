//===- Device.h - what a device computes and moves per second ---*- C++ -*-===//
//
// The time model of titan's predictions. A DeviceDescription holds the
// figures of one accelerator (or of one CPU rank) and of the links between
// ranks, as a device file (docs/cost-model.md) gives them; titan-calibrate
// measures them on a CPU machine. From it:
//
//   - a compute op takes the roofline time of its FLOPs and bytes: the
//     larger of FLOPs / (peak of its class and element type x efficiency)
//     and bytes / (memory bandwidth x efficiency), plus a fixed launch
//     overhead; a GEMM's efficiency follows a curve by its FLOPs (small
//     GEMMs reach a small fraction of the peak);
//   - a collective takes alpha-beta time: its ring steps times the link's
//     latency plus the bytes one rank sends over the link's bandwidth; a
//     mesh axis whose groups span nodes (ranks_per_node) uses the
//     inter-node link, otherwise the intra-node one.
//
// Only LLVMSupport and titan's ElementType: no MLIR, no file format (the
// device files are read by titan/Config/DeviceFile.h).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_COSTMODEL_DEVICE_H
#define TITAN_COSTMODEL_DEVICE_H

#include "titan/CostModel/CostModel.h"
#include "titan/Support/ElementType.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::titan {

/// A point-to-point link class between ranks: alpha-beta figures.
struct LinkDescription {
  /// Bytes per second one rank sends over the link in one direction (what
  /// a ring collective's bus bandwidth reaches).
  double bytesPerSecond = 0;
  /// Seconds each step of a ring collective adds.
  double latencySeconds = 0;
};

/// One point of the GEMM efficiency curve: a GEMM of `flops` floating-point
/// operations reaches `efficiency` x the peak of its element type.
struct GemmEfficiencyPoint {
  double flops = 0;
  double efficiency = 0;
};

/// The figures of one device, per rank.
struct DeviceDescription {
  /// Short name ("h100-sxm") and one line for people.
  std::string name;
  std::string description;
  /// Memory of one rank's device, bytes.
  double memoryBytes = 0;
  /// Ranks that share a node (and the intra-node link); 0: every rank of
  /// a job is on one node.
  int64_t ranksPerNode = 0;
  /// The CPU threads of one rank its peaks were measured with (a CPU
  /// device: titan-calibrate writes them); 0 when they do not apply. A CPU
  /// rank that runs with other threads scales its MFU's peak by the ratio.
  int64_t threadsPerRank = 0;
  /// The hardware threads those threads had while the peaks were measured:
  /// fewer than threadsPerRank when the measured ranks oversubscribed the
  /// machine (its hardware threads over the ranks; titan-calibrate writes
  /// it); 0: threadsPerRank. The runtime compares a rank's own share of
  /// its machine with it.
  double hardwareThreadsPerRank = 0;
  /// Dense peak FLOP/s of matrix products by element type (F32, F64, F16,
  /// BF16; absent when the device has none).
  std::optional<double> matmulPeak[4];
  /// FLOP/s of everything that is not a matrix product (elementwise ops,
  /// reductions).
  double vectorPeak = 0;
  /// Memory bandwidth, bytes per second, and the fraction of it bandwidth-
  /// bound kernels reach.
  double memoryBytesPerSecond = 0;
  double memoryEfficiency = 1;
  /// Seconds every op adds (a kernel launch, a call into the runtime).
  double opOverheadSeconds = 0;
  /// GEMM efficiency by FLOPs, ascending in FLOPs; interpolated linearly in
  /// log(FLOPs), clamped at both ends.
  llvm::SmallVector<GemmEfficiencyPoint> gemmEfficiency;
  /// The efficiency of fused attention kernels relative to the matmul peak
  /// (flash-style kernels reach less than a large GEMM).
  double attentionEfficiency = 1;
  /// Links within a node and between nodes.
  LinkDescription intraNode;
  LinkDescription interNode;
};

/// Checks the invariants of `device`: positive bandwidths, peaks and
/// memory, efficiencies in (0, 1], GEMM points ascending in FLOPs, a
/// non-negative ranks per node. The message names the field.
llvm::Error verifyDevice(const DeviceDescription &device);

/// The matmul peak of `device` for `type`, falling back to F32's for
/// element types it lists no peak for (and to the vector peak when it lists
/// none at all).
double getMatmulPeak(const DeviceDescription &device, ElementType type);

/// The fraction of the peak a GEMM of `flops` reaches on `device`.
double getGemmEfficiency(const DeviceDescription &device, double flops);

/// How a compute op's time is modelled.
enum class ComputeClass : uint8_t {
  /// A matrix product: the matmul peak times the GEMM efficiency curve.
  Gemm,
  /// A fused attention kernel: the matmul peak times the attention
  /// efficiency.
  Attention,
  /// Anything else: the vector peak.
  Vector,
};

/// Seconds of one compute op of `flops` FLOPs touching `bytes` bytes of
/// memory in element type `type` on `device` (roofline plus overhead).
double predictComputeSeconds(const DeviceDescription &device, ComputeClass kind,
                             ElementType type, double flops, double bytes);

/// Seconds of copying `bytes` bytes once (each read and written) on
/// `device`: a vector op of no FLOPs.
double predictCopySeconds(const DeviceDescription &device, double bytes);

/// The ring steps of a collective of `kind` over `groupSize` ranks (each
/// costs the link's latency): n-1 for all_gather, reduce_scatter and
/// all_to_all, 2(n-1) for all_reduce, 1 for broadcast, send and recv; 0
/// for a group of one.
int64_t getRingSteps(CollectiveKind kind, int64_t groupSize);

/// Whether some group of mesh axis `axis` holds ranks of two nodes, ranks
/// laid out row-major over `meshSizes` and `ranksPerNode` consecutive ranks
/// per node (0: one node).
bool axisSpansNodes(llvm::ArrayRef<int64_t> meshSizes, unsigned axis,
                    int64_t ranksPerNode);

/// The link a collective over `axes` of the mesh runs on: inter-node when
/// one of them spans nodes.
const LinkDescription &getAxesLink(const DeviceDescription &device,
                                   llvm::ArrayRef<int64_t> meshSizes,
                                   llvm::ArrayRef<unsigned> axes,
                                   int64_t ranksPerNode);

/// Seconds of a collective of `kind` over `groupSize` ranks on `link` in
/// which each rank sends `bytesSent` bytes (getBytesSentPerRank): the bytes
/// over the link's bandwidth plus its ring steps' latency.
double predictCollectiveSeconds(const LinkDescription &link,
                                CollectiveKind kind, int64_t groupSize,
                                double bytesSent);

/// torchtitan's model FLOPs per token of a decoder (train step: forward and
/// backward): 6 x the parameters outside embeddings plus, for attention,
/// 12 x layers x heads x head_dim x seq_len, given as the sum over the
/// model's attention layers of heads x head_dim (`attentionWidthSum`).
double getModelFlopsPerToken(double nonEmbeddingParameters,
                             double attentionWidthSum, double seqLen);

} // namespace mlir::titan

#endif // TITAN_COSTMODEL_DEVICE_H
