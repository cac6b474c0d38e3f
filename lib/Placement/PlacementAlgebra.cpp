//===- PlacementAlgebra.cpp - DTensor layout algebra ----------------------===//

#include "titan/Placement/PlacementAlgebra.h"
#include "titan/Support/FormatInts.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/Twine.h"

#include <cassert>
#include <limits>

using namespace mlir::titan;
using llvm::ArrayRef;
using llvm::SmallVector;
using llvm::Twine;

static llvm::Error makeError(const Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

static int64_t product(ArrayRef<int64_t> values) {
  int64_t result = 1;
  for (int64_t v : values)
    result *= v;
  return result;
}

//===----------------------------------------------------------------------===//
// DeviceMesh
//===----------------------------------------------------------------------===//

llvm::Expected<DeviceMesh> DeviceMesh::get(ArrayRef<std::string> axisNames,
                                           ArrayRef<int64_t> axisSizes) {
  if (axisNames.size() != axisSizes.size())
    return makeError("device mesh has " + Twine(axisNames.size()) +
                     " axis names but " + Twine(axisSizes.size()) +
                     " axis sizes; give one name per axis");
  llvm::SmallSet<llvm::StringRef, 8> seen;
  for (auto [axis, name, size] : llvm::enumerate(axisNames, axisSizes)) {
    if (name.empty())
      return makeError("device mesh axis " + Twine(axis) +
                       " has an empty name; name every axis");
    if (!seen.insert(name).second)
      return makeError("device mesh axis name '" + name +
                       "' is used twice; axis names must be distinct");
    if (size < 1)
      return makeError("device mesh axis '" + name + "' has size " +
                       Twine(size) + "; every axis needs at least 1 rank");
  }
  return DeviceMesh(axisNames, axisSizes);
}

std::optional<unsigned> DeviceMesh::findAxis(llvm::StringRef name) const {
  for (auto [axis, axisName] : llvm::enumerate(names))
    if (axisName == name)
      return axis;
  return std::nullopt;
}

int64_t DeviceMesh::getNumRanks() const { return product(sizes); }

SmallVector<int64_t> DeviceMesh::getCoordinate(int64_t rank) const {
  assert(rank >= 0 && rank < getNumRanks() && "rank out of range");
  SmallVector<int64_t> coordinate(sizes.size());
  for (unsigned axis = sizes.size(); axis-- > 0;) {
    coordinate[axis] = rank % sizes[axis];
    rank /= sizes[axis];
  }
  return coordinate;
}

int64_t DeviceMesh::getRank(ArrayRef<int64_t> coordinate) const {
  assert(coordinate.size() == sizes.size() && "one coordinate per axis");
  int64_t rank = 0;
  for (auto [c, size] : llvm::zip_equal(coordinate, sizes)) {
    assert(c >= 0 && c < size && "coordinate out of range");
    rank = rank * size + c;
  }
  return rank;
}

SmallVector<int64_t> DeviceMesh::getAxisGroup(int64_t rank,
                                              unsigned axis) const {
  SmallVector<int64_t> coordinate = getCoordinate(rank);
  SmallVector<int64_t> group;
  for (int64_t c = 0; c < sizes[axis]; ++c) {
    coordinate[axis] = c;
    group.push_back(getRank(coordinate));
  }
  return group;
}

//===----------------------------------------------------------------------===//
// Local shapes
//===----------------------------------------------------------------------===//

ChunkExtent mlir::titan::getChunkExtent(int64_t dimSize, int64_t numChunks,
                                        int64_t index) {
  assert(numChunks >= 1 && index >= 0 && index < numChunks && dimSize >= 0);
  int64_t chunk = llvm::divideCeil(dimSize, numChunks);
  int64_t begin = std::min(dimSize, index * chunk);
  int64_t end = std::min(dimSize, (index + 1) * chunk);
  return {begin, end - begin};
}

llvm::Error mlir::titan::verifyPlacements(ArrayRef<int64_t> globalShape,
                                          ArrayRef<int64_t> meshSizes,
                                          ArrayRef<Placement> placements) {
  if (placements.size() != meshSizes.size())
    return makeError("placements " + formatPlacements(placements) + " name " +
                     Twine(placements.size()) + " mesh axes but the mesh " +
                     formatInts(meshSizes) + " has " + Twine(meshSizes.size()) +
                     "; give one placement per mesh axis");
  for (auto [axis, size] : llvm::enumerate(meshSizes))
    if (size < 1)
      return makeError("mesh axis " + Twine(axis) + " has size " + Twine(size) +
                       "; every axis needs at least 1 rank");
  for (auto [dim, size] : llvm::enumerate(globalShape))
    if (size < 0)
      return makeError("tensor shape " + formatInts(globalShape) +
                       " has negative size in dim " + Twine(dim));
  std::optional<ReduceKind> partialKind = getPartialKind(placements);
  for (auto [axis, p] : llvm::enumerate(placements)) {
    if (p.isShard() && (p.getDim() < 0 ||
                        p.getDim() >= static_cast<int64_t>(globalShape.size())))
      return makeError("placement " + p.str() + " on mesh axis " + Twine(axis) +
                       " shards dim " + Twine(p.getDim()) + " of a rank-" +
                       Twine(globalShape.size()) +
                       " tensor; shard a dim in [0, " +
                       Twine(globalShape.size()) + ")");
    if (p.isPartial() && p.getReduce() != *partialKind)
      return makeError("placements " + formatPlacements(placements) +
                       " mix partial reductions " +
                       stringifyReduce(*partialKind) + " and " +
                       stringifyReduce(p.getReduce()) +
                       "; the value would depend on the reduction order, use "
                       "one reduce kind");
  }
  return llvm::Error::success();
}

/// `computeLocalShapeAndGlobalOffset` for a verified layout.
static LocalShard getLocalShard(ArrayRef<int64_t> globalShape,
                                ArrayRef<int64_t> meshSizes,
                                ArrayRef<Placement> placements,
                                ArrayRef<int64_t> coordinate) {
  LocalShard shard{SmallVector<int64_t>(globalShape),
                   SmallVector<int64_t>(globalShape.size(), 0)};
  for (auto [p, size, c] : llvm::zip_equal(placements, meshSizes, coordinate)) {
    if (!p.isShard())
      continue;
    int64_t dim = p.getDim();
    ChunkExtent extent = getChunkExtent(shard.shape[dim], size, c);
    shard.offset[dim] += extent.offset;
    shard.shape[dim] = extent.size;
  }
  return shard;
}

llvm::Expected<LocalShard> mlir::titan::computeLocalShapeAndGlobalOffset(
    ArrayRef<int64_t> globalShape, ArrayRef<int64_t> meshSizes,
    ArrayRef<Placement> placements, ArrayRef<int64_t> coordinate) {
  if (llvm::Error err = verifyPlacements(globalShape, meshSizes, placements))
    return std::move(err);
  if (coordinate.size() != meshSizes.size())
    return makeError("coordinate " + formatInts(coordinate) + " has " +
                     Twine(coordinate.size()) + " entries but the mesh " +
                     formatInts(meshSizes) + " has " + Twine(meshSizes.size()) +
                     " axes; give one coordinate per mesh axis");
  for (auto [axis, c, size] : llvm::enumerate(coordinate, meshSizes))
    if (c < 0 || c >= size)
      return makeError("coordinate " + formatInts(coordinate) + " is " +
                       Twine(c) + " on mesh axis " + Twine(axis) + " of size " +
                       Twine(size) + "; use [0, " + Twine(size) + ")");
  return getLocalShard(globalShape, meshSizes, placements, coordinate);
}

/// The largest local shape of a verified layout: torch.chunk sizes are
/// monotone in the size chunked, so nesting ceil divisions gives the maximum.
static SmallVector<int64_t>
getPaddedLocalShape(ArrayRef<int64_t> globalShape, ArrayRef<int64_t> meshSizes,
                    ArrayRef<Placement> placements) {
  SmallVector<int64_t> shape(globalShape);
  for (auto [p, size] : llvm::zip_equal(placements, meshSizes))
    if (p.isShard())
      shape[p.getDim()] = llvm::divideCeil(shape[p.getDim()], size);
  return shape;
}

/// Whether every rank holds the same size of `dim` in a verified layout: the
/// dim divides by the product of the axis sizes sharding it.
static bool isDimEven(ArrayRef<int64_t> globalShape,
                      ArrayRef<int64_t> meshSizes,
                      ArrayRef<Placement> placements, int64_t dim) {
  int64_t ways = 1;
  for (auto [p, size] : llvm::zip_equal(placements, meshSizes))
    if (p.isShard(dim))
      ways *= size;
  return globalShape[dim] % ways == 0;
}

llvm::Expected<PaddingInfo>
mlir::titan::computePadding(ArrayRef<int64_t> globalShape,
                            ArrayRef<int64_t> meshSizes,
                            ArrayRef<Placement> placements) {
  if (llvm::Error err = verifyPlacements(globalShape, meshSizes, placements))
    return std::move(err);
  bool even =
      llvm::all_of(llvm::seq<int64_t>(globalShape.size()), [&](int64_t d) {
        return isDimEven(globalShape, meshSizes, placements, d);
      });
  return PaddingInfo{even,
                     getPaddedLocalShape(globalShape, meshSizes, placements)};
}

//===----------------------------------------------------------------------===//
// Redistribution planning
//===----------------------------------------------------------------------===//

llvm::StringRef mlir::titan::stringifyStepKind(StepKind kind) {
  switch (kind) {
  case StepKind::AllGather:
    return "all_gather";
  case StepKind::AllReduce:
    return "all_reduce";
  case StepKind::ReduceScatter:
    return "reduce_scatter";
  case StepKind::AllToAll:
    return "all_to_all";
  case StepKind::LocalChunk:
    return "local_chunk";
  case StepKind::Partition:
    return "partition";
  }
  llvm_unreachable("unknown StepKind");
}

std::string RedistributeStep::str() const {
  std::string text =
      stringifyStepKind(kind).str() + "(axis " + std::to_string(meshAxis);
  if (unshardDim && shardDim)
    text += ", dim " + std::to_string(*unshardDim) + " -> dim " +
            std::to_string(*shardDim);
  else if (unshardDim || shardDim)
    text += ", dim " + std::to_string(unshardDim ? *unshardDim : *shardDim);
  if (reduce)
    text += ", " + stringifyReduce(*reduce).str();
  if (needsPadding)
    text += ", padded";
  return text + "): " + formatPlacements(before) + " -> " +
         formatPlacements(after);
}

namespace {
/// Builds a plan step by step from the current placements.
class Planner {
public:
  Planner(ArrayRef<int64_t> globalShape, ArrayRef<int64_t> meshSizes,
          ArrayRef<Placement> from)
      : globalShape(globalShape), meshSizes(meshSizes), current(from) {}

  /// Appends the steps that take mesh axis `axis` from its current placement
  /// to `target`: one collective, or for S -> P and P(a) -> P(b) a reduction
  /// to R followed by a partition.
  void transition(unsigned axis, Placement target) {
    Placement now = current[axis];
    if (now == target)
      return;
    if (now.isShard() && target.isShard()) {
      emit(StepKind::AllToAll, axis, target, now.getDim(), target.getDim(),
           std::nullopt);
      return;
    }
    if (now.isPartial() && target.isShard()) {
      emit(StepKind::ReduceScatter, axis, target, std::nullopt, target.getDim(),
           now.getReduce());
      return;
    }
    if (now.isShard())
      emit(StepKind::AllGather, axis, Placement::replicate(), now.getDim(),
           std::nullopt, std::nullopt);
    else if (now.isPartial())
      emit(StepKind::AllReduce, axis, Placement::replicate(), std::nullopt,
           std::nullopt, now.getReduce());
    if (target.isShard())
      emit(StepKind::LocalChunk, axis, target, std::nullopt, target.getDim(),
           std::nullopt);
    else if (target.isPartial())
      emit(StepKind::Partition, axis, target, std::nullopt, std::nullopt,
           target.getReduce());
  }

  ArrayRef<Placement> getCurrent() const { return current; }
  std::vector<RedistributeStep> takeSteps() { return std::move(steps); }

private:
  void emit(StepKind kind, unsigned axis, Placement next,
            std::optional<int64_t> unshardDim, std::optional<int64_t> shardDim,
            std::optional<ReduceKind> reduce) {
    RedistributeStep step;
    step.kind = kind;
    step.meshAxis = axis;
    step.unshardDim = unshardDim;
    step.shardDim = shardDim;
    step.reduce = reduce;
    step.before = current;
    current[axis] = next;
    step.after = current;
    step.paddedBefore =
        getPaddedLocalShape(globalShape, meshSizes, step.before);
    step.paddedAfter = getPaddedLocalShape(globalShape, meshSizes, step.after);
    // Only collectives move equal-size buffers; a local chunk just slices.
    step.needsPadding = kind != StepKind::LocalChunk &&
                        ((unshardDim && !isDimEven(globalShape, meshSizes,
                                                   step.before, *unshardDim)) ||
                         (shardDim && !isDimEven(globalShape, meshSizes,
                                                 step.after, *shardDim)));
    // A step may only touch a dim that no inner axis shards: the inner shards
    // would otherwise be interleaved with the ones this axis moves.
    assert(llvm::none_of(ArrayRef(step.before).drop_front(axis + 1),
                         [&](const Placement &p) {
                           return (unshardDim && p.isShard(*unshardDim)) ||
                                  (shardDim && p.isShard(*shardDim));
                         }) &&
           "redistribution step touches a dim an inner mesh axis shards");
    steps.push_back(std::move(step));
  }

  ArrayRef<int64_t> globalShape;
  ArrayRef<int64_t> meshSizes;
  SmallVector<Placement> current;
  std::vector<RedistributeStep> steps;
};
} // namespace

/// Whether the mesh axes before `axis` shard `dim` identically in `a` and `b`.
static bool samePrefixSharding(ArrayRef<Placement> a, ArrayRef<Placement> b,
                               unsigned axis, int64_t dim) {
  return llvm::all_of(llvm::seq<unsigned>(axis), [&](unsigned i) {
    return a[i].isShard(dim) == b[i].isShard(dim);
  });
}

llvm::Expected<std::vector<RedistributeStep>> mlir::titan::planRedistribution(
    ArrayRef<int64_t> globalShape, ArrayRef<int64_t> meshSizes,
    ArrayRef<Placement> from, ArrayRef<Placement> to) {
  if (llvm::Error err = verifyPlacements(globalShape, meshSizes, from))
    return std::move(err);
  if (llvm::Error err = verifyPlacements(globalShape, meshSizes, to))
    return std::move(err);

  Planner planner(globalShape, meshSizes, from);
  // The inner-to-outer pass is needed only when the source has shards:
  // without them every forward step works on whole dims. DTensor tests
  // `num_shards > 1`; shards on size-1 axes count here too, so that no step
  // ever splits a dim under an inner shard. A change of partial kind also
  // needs it, so that every P(a) is reduced before the first P(b) appears
  // and no intermediate layout mixes reduce kinds.
  bool fromHasShards =
      llvm::any_of(from, [](const Placement &p) { return p.isShard(); });
  std::optional<ReduceKind> fromKind = getPartialKind(from);
  std::optional<ReduceKind> toKind = getPartialKind(to);
  bool kindChanges = fromKind && toKind && *fromKind != *toKind;
  if (fromHasShards || kindChanges) {
    for (unsigned axis = meshSizes.size(); axis-- > 0;) {
      Placement target = to[axis];
      Placement now = planner.getCurrent()[axis];
      // An outer axis still to change would split or gather under this
      // axis's shards: replicate it now, reshard it in the forward pass.
      // Partials are created only in the forward pass, after every reduction.
      if ((target.isShard() && !samePrefixSharding(planner.getCurrent(), to,
                                                   axis, target.getDim())) ||
          (target.isPartial() && target != now))
        target = Placement::replicate();
      planner.transition(axis, target);
    }
  }
  for (unsigned axis = 0; axis < meshSizes.size(); ++axis)
    planner.transition(axis, to[axis]);
  return planner.takeSteps();
}
