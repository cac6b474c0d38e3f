//===- PlacementAlgebra.h - DTensor layout algebra --------------*- C++ -*-===//
//
// The arithmetic of DTensor placements over a device mesh, with the semantics
// of PyTorch 2.x `torch.distributed.tensor`:
//
//  - `DeviceMesh`: named axes, ranks laid out row-major (`init_device_mesh`).
//  - `computeLocalShapeAndGlobalOffset`: which box of the global tensor a rank
//    holds (torch.chunk sizes; several axes sharding one dim nest in mesh-axis
//    order).
//  - `planRedistribution`: the ordered collectives that turn one placements
//    list into another (DTensor's `_gen_transform_infos` order), with padded
//    buffer shapes (their costs: titan/CostModel/CostModel.h).
//
// Semantics decisions (see docs in the definitions below):
//  - R -> P(sum) keeps the value on coordinate 0 of the axis and zero on the
//    others (exact; DTensor divides by the axis size instead). R -> P(avg|max|
//    min) keeps the value on every rank of the axis.
//  - S(d) -> P is all_gather then that partition; P(a) -> P(b), a != b, is
//    all_reduce(a) then partition(b).
//  - One placements list may hold partials of one reduce kind only: the value
//    of [P(sum), P(max)] would depend on the order of the reductions.
//  - Uneven shards travel padded: every rank pads its shard to the largest
//    shard of the layout (`getPaddedLocalShape`), the collective moves
//    equal-size buffers, and the receiver drops the padding (DTensor pads
//    all_gather the same way).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PLACEMENT_PLACEMENTALGEBRA_H
#define TITAN_PLACEMENT_PLACEMENTALGEBRA_H

#include "titan/Placement/Placement.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::titan {

//===----------------------------------------------------------------------===//
// Device mesh
//===----------------------------------------------------------------------===//

/// A device mesh: named axes with sizes, in DTensor mesh-dim order. Rank r has
/// the row-major coordinate of r over the axis sizes (the last axis varies
/// fastest), as `init_device_mesh` lays ranks out.
class DeviceMesh {
public:
  /// Builds a mesh; fails unless there is one name per size, every size is at
  /// least 1 and the names are non-empty and distinct.
  static llvm::Expected<DeviceMesh> get(llvm::ArrayRef<std::string> axisNames,
                                        llvm::ArrayRef<int64_t> axisSizes);

  /// The number of mesh axes.
  unsigned getNumAxes() const { return sizes.size(); }
  /// The size of every axis, outermost first.
  llvm::ArrayRef<int64_t> getSizes() const { return sizes; }
  /// The size of axis `axis`.
  int64_t getSize(unsigned axis) const { return sizes[axis]; }
  /// The name of axis `axis`.
  llvm::StringRef getAxisName(unsigned axis) const { return names[axis]; }
  /// The index of the axis called `name`, if any.
  std::optional<unsigned> findAxis(llvm::StringRef name) const;
  /// The number of ranks: the product of the axis sizes.
  int64_t getNumRanks() const;

  /// The coordinate of `rank` (0 <= rank < getNumRanks()).
  llvm::SmallVector<int64_t> getCoordinate(int64_t rank) const;
  /// The rank at `coordinate` (one in-range entry per axis).
  int64_t getRank(llvm::ArrayRef<int64_t> coordinate) const;
  /// The ranks that share every coordinate of `rank` except the one on
  /// `axis`, ordered by their coordinate on `axis`: the process group a
  /// collective over `axis` runs in.
  llvm::SmallVector<int64_t> getAxisGroup(int64_t rank, unsigned axis) const;

private:
  DeviceMesh(llvm::ArrayRef<std::string> names, llvm::ArrayRef<int64_t> sizes)
      : names(names.begin(), names.end()), sizes(sizes.begin(), sizes.end()) {}

  llvm::SmallVector<std::string> names;
  llvm::SmallVector<int64_t> sizes;
};

//===----------------------------------------------------------------------===//
// Local shapes
//===----------------------------------------------------------------------===//

/// A contiguous range [offset, offset + size) of one tensor dimension.
struct ChunkExtent {
  int64_t offset;
  int64_t size;
};

/// The part of a dimension of `dimSize` elements that chunk `index` of
/// `numChunks` holds under torch.chunk: chunks of ceil(dimSize / numChunks)
/// elements, the last ones short or empty (10 on 4: 3,3,3,1; 5 on 4:
/// 2,2,1,0). An empty chunk sits at offset `dimSize`, as in DTensor.
ChunkExtent getChunkExtent(int64_t dimSize, int64_t numChunks, int64_t index);

/// Checks that `placements` is a layout of a tensor of `globalShape` on a mesh
/// of `meshSizes`: one placement per axis, every sharded dim in range, every
/// size non-negative, and at most one reduce kind among the partials.
llvm::Error verifyPlacements(llvm::ArrayRef<int64_t> globalShape,
                             llvm::ArrayRef<int64_t> meshSizes,
                             llvm::ArrayRef<Placement> placements);

/// The box of the global tensor one rank holds.
struct LocalShard {
  /// The local tensor's shape.
  llvm::SmallVector<int64_t> shape;
  /// Where the local tensor starts in the global tensor, per dim.
  llvm::SmallVector<int64_t> offset;
};

/// DTensor's `compute_local_shape_and_global_offset`: the shape and global
/// offset of the local tensor of the rank at `coordinate`. Mesh axes are
/// applied outermost first; `S(d)` chunks dim d of what the outer axes left
/// (so several axes sharding d nest), `R` and `P` leave every dim whole.
llvm::Expected<LocalShard> computeLocalShapeAndGlobalOffset(
    llvm::ArrayRef<int64_t> globalShape, llvm::ArrayRef<int64_t> meshSizes,
    llvm::ArrayRef<Placement> placements, llvm::ArrayRef<int64_t> coordinate);

/// Whether a layout needs padding to give every rank a buffer of one shape.
struct PaddingInfo {
  /// True when every rank's local shape equals `paddedLocalShape`: each
  /// sharded dim is divisible by the product of the axis sizes sharding it.
  bool isEven;
  /// The largest local shape of the layout, dim by dim: the buffer every rank
  /// pads its shard to for a collective.
  llvm::SmallVector<int64_t> paddedLocalShape;
};

/// Computes `PaddingInfo` for a layout (which `verifyPlacements` accepts).
llvm::Expected<PaddingInfo>
computePadding(llvm::ArrayRef<int64_t> globalShape,
               llvm::ArrayRef<int64_t> meshSizes,
               llvm::ArrayRef<Placement> placements);

//===----------------------------------------------------------------------===//
// Redistribution planning
//===----------------------------------------------------------------------===//

/// What one redistribution step does on its mesh axis.
enum class StepKind : uint8_t {
  /// S(d) -> R: concatenate the shards of dim d across the axis group.
  AllGather,
  /// P(op) -> R: reduce the partial values across the axis group.
  AllReduce,
  /// P(op) -> S(d): reduce across the group, each rank keeps its chunk of d.
  ReduceScatter,
  /// S(i) -> S(j): each rank sends chunk k of dim j to group member k and
  /// concatenates the received pieces along dim i.
  AllToAll,
  /// R -> S(d): each rank keeps its chunk of dim d; no communication.
  LocalChunk,
  /// R -> P(op): each rank keeps a part whose reduction across the group is
  /// the value (sum: coordinate 0 keeps it, the others hold zero; avg, max,
  /// min: every rank keeps it); no communication.
  Partition,
};

/// Returns "all_gather", "all_reduce", "reduce_scatter", "all_to_all",
/// "local_chunk" or "partition".
llvm::StringRef stringifyStepKind(StepKind kind);

/// One step of a redistribution: a collective (or local op) on one mesh axis
/// that changes that axis's placement from `before[meshAxis]` to
/// `after[meshAxis]`.
struct RedistributeStep {
  StepKind kind;
  /// The mesh axis whose process groups run the step.
  unsigned meshAxis;
  /// The tensor dim the axis stops sharding (AllGather, AllToAll).
  std::optional<int64_t> unshardDim;
  /// The tensor dim the axis starts sharding (ReduceScatter, AllToAll,
  /// LocalChunk).
  std::optional<int64_t> shardDim;
  /// The reduction of AllReduce and ReduceScatter, and the partial kind a
  /// Partition creates.
  std::optional<ReduceKind> reduce;
  /// The placements of every mesh axis before and after the step.
  llvm::SmallVector<Placement> before, after;
  /// The largest local shapes under `before` and `after`: the buffers of the
  /// collective (see `getStepBytesPerRank`).
  llvm::SmallVector<int64_t> paddedBefore, paddedAfter;
  /// True when the dims the step concatenates or splits are uneven, so ranks
  /// pad their pieces to `paddedBefore` / `paddedAfter` and the receivers
  /// drop the padding.
  bool needsPadding;

  /// Prints e.g. "all_gather(axis 1, dim 0): [S(0), S(0)] -> [S(0), R]".
  std::string str() const;
};

/// The ordered steps that redistribute a tensor of `globalShape` from `from`
/// to `to` on a mesh of `meshSizes`, following DTensor's
/// `_gen_transform_infos`: when the source has shards, mesh axes are first
/// visited innermost to outermost, and an axis whose target is S(d) is sent to
/// R instead whenever the axes before it shard dim d differently now than in
/// the target (so an inner shard of d is always undone before an outer axis
/// touches d); then the axes are visited outermost to innermost to reach the
/// target. Each step touches a dim only while no inner axis shards it.
llvm::Expected<std::vector<RedistributeStep>> planRedistribution(
    llvm::ArrayRef<int64_t> globalShape, llvm::ArrayRef<int64_t> meshSizes,
    llvm::ArrayRef<Placement> from, llvm::ArrayRef<Placement> to);

} // namespace mlir::titan

#endif // TITAN_PLACEMENT_PLACEMENTALGEBRA_H
