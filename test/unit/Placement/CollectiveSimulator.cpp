//===- CollectiveSimulator.cpp - collectives on host tensors --------------===//
//
// See CollectiveSimulator.h.
//
//===----------------------------------------------------------------------===//

#include "CollectiveSimulator.h"

#include "titan/Support/FormatInts.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"

#include <cassert>
#include <functional>
#include <limits>
#include <numeric>

using namespace mlir::titan;
using llvm::ArrayRef;
using llvm::SmallVector;
using llvm::Twine;

static llvm::Error makeError(const Twine &message) {
  return llvm::createStringError(message);
}

/// The number of elements of `shape`.
static int64_t product(ArrayRef<int64_t> shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t(1),
                         std::multiplies<int64_t>());
}

//===----------------------------------------------------------------------===//
// Reference simulator
//===----------------------------------------------------------------------===//

int64_t HostTensor::getNumElements() const { return product(shape); }

/// Calls `fn` with every multi-index of `shape`, in row-major order.
static void forEachIndex(ArrayRef<int64_t> shape,
                         llvm::function_ref<void(ArrayRef<int64_t>)> fn) {
  if (product(shape) == 0)
    return;
  SmallVector<int64_t> index(shape.size(), 0);
  while (true) {
    fn(index);
    unsigned d = shape.size();
    while (d > 0 && ++index[d - 1] == shape[d - 1])
      index[--d] = 0;
    if (d == 0)
      return;
  }
}

/// The row-major position of `offset + index` in a tensor of `shape`.
static int64_t linearize(ArrayRef<int64_t> shape, ArrayRef<int64_t> index,
                         ArrayRef<int64_t> offset) {
  int64_t position = 0;
  for (auto [size, i, o] : llvm::zip_equal(shape, index, offset))
    position = position * size + i + o;
  return position;
}

/// A tensor of `shape` filled with `value`.
static HostTensor filled(ArrayRef<int64_t> shape, double value) {
  return HostTensor{SmallVector<int64_t>(shape),
                    std::vector<double>(product(shape), value)};
}

/// The box of `source` at `offset` with `shape`.
static HostTensor extractBox(const HostTensor &source, ArrayRef<int64_t> offset,
                             ArrayRef<int64_t> shape) {
  HostTensor box = filled(shape, 0);
  SmallVector<int64_t> zero(shape.size(), 0);
  forEachIndex(shape, [&](ArrayRef<int64_t> index) {
    box.data[linearize(shape, index, zero)] =
        source.data[linearize(source.shape, index, offset)];
  });
  return box;
}

/// Copies `box` into `target` at `offset`.
static void insertBox(HostTensor &target, const HostTensor &box,
                      ArrayRef<int64_t> offset) {
  SmallVector<int64_t> zero(box.shape.size(), 0);
  forEachIndex(box.shape, [&](ArrayRef<int64_t> index) {
    target.data[linearize(target.shape, index, offset)] =
        box.data[linearize(box.shape, index, zero)];
  });
}

/// `source` grown to `shape` (no smaller in any dim), padding with zeros.
static HostTensor padTo(const HostTensor &source, ArrayRef<int64_t> shape) {
  HostTensor padded = filled(shape, 0);
  insertBox(padded, source, SmallVector<int64_t>(shape.size(), 0));
  return padded;
}

/// `shape` with dim `dim` set to `size`.
static SmallVector<int64_t> withDim(ArrayRef<int64_t> shape, int64_t dim,
                                    int64_t size) {
  SmallVector<int64_t> result(shape);
  result[dim] = size;
  return result;
}

/// The slice [begin, begin + size) of dim `dim` of `source`.
static HostTensor sliceDim(const HostTensor &source, int64_t dim, int64_t begin,
                           int64_t size) {
  SmallVector<int64_t> offset(source.shape.size(), 0);
  offset[dim] = begin;
  return extractBox(source, offset, withDim(source.shape, dim, size));
}

/// Concatenates the first `sizes[k]` entries of dim `dim` of `pieces[k]`,
/// dropping each piece's padding.
static HostTensor concatUnpadded(ArrayRef<HostTensor> pieces, int64_t dim,
                                 ArrayRef<int64_t> sizes) {
  int64_t total = 0;
  for (int64_t size : sizes)
    total += size;
  HostTensor result = filled(withDim(pieces.front().shape, dim, total), 0);
  SmallVector<int64_t> offset(result.shape.size(), 0);
  for (auto [piece, size] : llvm::zip_equal(pieces, sizes)) {
    insertBox(result, sliceDim(piece, dim, 0, size), offset);
    offset[dim] += size;
  }
  return result;
}

/// The torch.chunk sizes of `dimSize` split `numChunks` ways.
static SmallVector<int64_t> chunkSizes(int64_t dimSize, int64_t numChunks) {
  return llvm::to_vector(
      llvm::map_range(llvm::seq<int64_t>(numChunks), [&](int64_t k) {
        return getChunkExtent(dimSize, numChunks, k).size;
      }));
}

/// `source` with dim `dim` cut into its `numChunks` torch.chunk pieces, each
/// padded with zeros to `block` entries: the send buffer of a collective
/// that scatters `dim`, with chunk k at [k * block, k * block + size).
static HostTensor padChunks(const HostTensor &source, int64_t dim,
                            int64_t numChunks, int64_t block) {
  HostTensor padded = filled(withDim(source.shape, dim, numChunks * block), 0);
  SmallVector<int64_t> offset(source.shape.size(), 0);
  for (int64_t k = 0; k < numChunks; ++k) {
    ChunkExtent extent = getChunkExtent(source.shape[dim], numChunks, k);
    offset[dim] = k * block;
    insertBox(padded, sliceDim(source, dim, extent.offset, extent.size),
              offset);
  }
  return padded;
}

/// The identity of `kind`: the value a reduction starts from.
static double reduceIdentity(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
  case ReduceKind::Avg:
    return 0;
  case ReduceKind::Max:
    return -std::numeric_limits<double>::infinity();
  case ReduceKind::Min:
    return std::numeric_limits<double>::infinity();
  }
  llvm_unreachable("unknown ReduceKind");
}

/// Folds `value` into `accumulator` (avg accumulates the sum).
static double combine(ReduceKind kind, double accumulator, double value) {
  switch (kind) {
  case ReduceKind::Sum:
  case ReduceKind::Avg:
    return accumulator + value;
  case ReduceKind::Max:
    return std::max(accumulator, value);
  case ReduceKind::Min:
    return std::min(accumulator, value);
  }
  llvm_unreachable("unknown ReduceKind");
}

/// Reduces equally shaped tensors elementwise; avg divides the sum by the
/// number of contributors.
static HostTensor reduceAll(ReduceKind kind, ArrayRef<HostTensor> inputs) {
  HostTensor result = filled(inputs.front().shape, reduceIdentity(kind));
  for (const HostTensor &input : inputs)
    for (auto [acc, v] : llvm::zip_equal(result.data, input.data))
      acc = combine(kind, acc, v);
  if (kind == ReduceKind::Avg)
    for (double &acc : result.data)
      acc /= inputs.size();
  return result;
}

/// splitmix64: a deterministic mixer for the partial splits.
static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// The part of `value` coordinate `c` of an axis of `n` ranks holds when the
/// axis is P(kind); the parts reduce to `value` exactly for integer values.
/// `seed` varies the parts per element and per outer partial coordinate.
static double splitPartial(ReduceKind kind, double value, int64_t c, int64_t n,
                           uint64_t seed) {
  auto offsetOf = [&](int64_t k) {
    return static_cast<double>(mix(seed ^ mix(k)) % 5) - 2;
  };
  auto distanceOf = [&](int64_t k) {
    return static_cast<double>(1 + mix(seed ^ mix(k)) % 3);
  };
  switch (kind) {
  case ReduceKind::Sum:
  case ReduceKind::Avg: {
    // Sum: coordinate 0 holds value - sum of the others' offsets.
    // Avg: every coordinate holds value + an offset; the offsets sum to 0.
    double base = kind == ReduceKind::Sum ? 0 : value;
    if (c != 0)
      return base + offsetOf(c);
    double others = 0;
    for (int64_t k = 1; k < n; ++k)
      others += offsetOf(k);
    return value - others;
  }
  case ReduceKind::Max:
    return c == 0 ? value : value - distanceOf(c);
  case ReduceKind::Min:
    return c == 0 ? value : value + distanceOf(c);
  }
  llvm_unreachable("unknown ReduceKind");
}

llvm::Expected<std::vector<HostTensor>>
mlir::titan::shardTensor(const DeviceMesh &mesh, const HostTensor &global,
                         ArrayRef<Placement> placements) {
  if (llvm::Error err =
          verifyPlacements(global.shape, mesh.getSizes(), placements))
    return std::move(err);
  if (static_cast<int64_t>(global.data.size()) != global.getNumElements())
    return makeError("host tensor of shape " + formatInts(global.shape) +
                     " holds " + Twine(global.data.size()) +
                     " values; it needs " + Twine(global.getNumElements()));
  std::vector<HostTensor> locals;
  for (int64_t rank = 0; rank < mesh.getNumRanks(); ++rank) {
    SmallVector<int64_t> coordinate = mesh.getCoordinate(rank);
    LocalShard shard = llvm::cantFail(computeLocalShapeAndGlobalOffset(
        global.shape, mesh.getSizes(), placements, coordinate));
    HostTensor local = extractBox(global, shard.offset, shard.shape);
    forEachIndex(shard.shape, [&](ArrayRef<int64_t> index) {
      uint64_t seed = mix(linearize(global.shape, index, shard.offset));
      double &value = local.data[linearize(
          shard.shape, index, SmallVector<int64_t>(index.size(), 0))];
      for (auto [axis, p] : llvm::enumerate(placements)) {
        if (!p.isPartial())
          continue;
        seed = mix(seed ^ axis);
        value = splitPartial(p.getReduce(), value, coordinate[axis],
                             mesh.getSize(axis), seed);
        // Inner partial axes split this axis's part differently per
        // coordinate here.
        seed = mix(seed ^ coordinate[axis]);
      }
    });
    locals.push_back(std::move(local));
  }
  return locals;
}

/// Checks one local tensor per rank, each of its rank's shape under
/// `placements`.
static llvm::Error verifyLocalShapes(const DeviceMesh &mesh,
                                     ArrayRef<int64_t> globalShape,
                                     ArrayRef<HostTensor> locals,
                                     ArrayRef<Placement> placements) {
  if (static_cast<int64_t>(locals.size()) != mesh.getNumRanks())
    return makeError("got " + Twine(locals.size()) +
                     " local tensors for a mesh of " +
                     Twine(mesh.getNumRanks()) + " ranks; give one per rank");
  for (auto [rank, local] : llvm::enumerate(locals)) {
    LocalShard shard = llvm::cantFail(computeLocalShapeAndGlobalOffset(
        globalShape, mesh.getSizes(), placements, mesh.getCoordinate(rank)));
    if (local.shape != shard.shape ||
        static_cast<int64_t>(local.data.size()) != local.getNumElements())
      return makeError(
          "rank " + Twine(rank) + " holds a local tensor of shape " +
          formatInts(local.shape) + " with " + Twine(local.data.size()) +
          " values; under " + formatPlacements(placements) +
          " it must have shape " + formatInts(shard.shape));
  }
  return llvm::Error::success();
}

/// Runs one step on the local tensors of one axis group (ordered by their
/// coordinate on the axis) and returns their new local tensors.
static std::vector<HostTensor> runGroupStep(const RedistributeStep &step,
                                            ArrayRef<HostTensor> inputs) {
  int64_t n = inputs.size();
  std::vector<HostTensor> outputs;
  switch (step.kind) {
  case StepKind::AllGather: {
    // Pad every shard to the layout's largest, gather, drop the padding.
    int64_t dim = *step.unshardDim;
    int64_t padded = step.paddedBefore[dim];
    SmallVector<HostTensor> buffers;
    int64_t logical = 0;
    for (const HostTensor &input : inputs) {
      buffers.push_back(padTo(input, withDim(input.shape, dim, padded)));
      logical += input.shape[dim];
    }
    HostTensor gathered = concatUnpadded(buffers, dim, chunkSizes(logical, n));
    outputs.assign(n, gathered);
    return outputs;
  }
  case StepKind::ReduceScatter: {
    // Pad every chunk of the dim to one block, reduce, keep one's own block
    // unpadded.
    int64_t dim = *step.shardDim;
    int64_t block = step.paddedAfter[dim];
    int64_t logical = inputs.front().shape[dim];
    SmallVector<HostTensor> buffers;
    for (const HostTensor &input : inputs)
      buffers.push_back(padChunks(input, dim, n, block));
    HostTensor reduced = reduceAll(*step.reduce, buffers);
    for (int64_t k = 0; k < n; ++k)
      outputs.push_back(sliceDim(reduced, dim, k * block,
                                 getChunkExtent(logical, n, k).size));
    return outputs;
  }
  case StepKind::AllReduce:
    outputs.assign(n, reduceAll(*step.reduce, inputs));
    return outputs;
  case StepKind::AllToAll: {
    // Member p pads dim i to the largest shard and every chunk of dim j to
    // one block, sends block k to member k; member k concatenates the blocks
    // along i and drops both paddings.
    int64_t from = *step.unshardDim, to = *step.shardDim;
    int64_t paddedFrom = step.paddedBefore[from];
    int64_t block = step.paddedAfter[to];
    int64_t logicalTo = inputs.front().shape[to];
    int64_t logicalFrom = 0;
    SmallVector<HostTensor> buffers;
    for (const HostTensor &input : inputs) {
      logicalFrom += input.shape[from];
      buffers.push_back(padChunks(
          padTo(input, withDim(input.shape, from, paddedFrom)), to, n, block));
    }
    for (int64_t k = 0; k < n; ++k) {
      SmallVector<HostTensor> received;
      for (const HostTensor &buffer : buffers)
        received.push_back(sliceDim(buffer, to, k * block,
                                    getChunkExtent(logicalTo, n, k).size));
      outputs.push_back(
          concatUnpadded(received, from, chunkSizes(logicalFrom, n)));
    }
    return outputs;
  }
  case StepKind::LocalChunk: {
    int64_t dim = *step.shardDim;
    for (auto [k, input] : llvm::enumerate(inputs)) {
      ChunkExtent extent = getChunkExtent(input.shape[dim], n, k);
      outputs.push_back(sliceDim(input, dim, extent.offset, extent.size));
    }
    return outputs;
  }
  case StepKind::Partition:
    for (auto [k, input] : llvm::enumerate(inputs)) {
      bool zeroed = *step.reduce == ReduceKind::Sum && k != 0;
      outputs.push_back(zeroed ? filled(input.shape, 0) : input);
    }
    return outputs;
  }
  llvm_unreachable("unknown StepKind");
}

llvm::Error mlir::titan::applyRedistributeStep(
    const DeviceMesh &mesh, ArrayRef<int64_t> globalShape,
    const RedistributeStep &step, std::vector<HostTensor> &locals) {
  if (step.meshAxis >= mesh.getNumAxes())
    return makeError("step " + step.str() + " runs on mesh axis " +
                     Twine(step.meshAxis) + " of a mesh with " +
                     Twine(mesh.getNumAxes()) + " axes");
  if (llvm::Error err =
          verifyPlacements(globalShape, mesh.getSizes(), step.before))
    return err;
  if (llvm::Error err =
          verifyLocalShapes(mesh, globalShape, locals, step.before))
    return err;
  std::vector<HostTensor> next(locals.size());
  for (int64_t rank = 0; rank < mesh.getNumRanks(); ++rank) {
    if (mesh.getCoordinate(rank)[step.meshAxis] != 0)
      continue;
    SmallVector<int64_t> group = mesh.getAxisGroup(rank, step.meshAxis);
    SmallVector<HostTensor> inputs;
    for (int64_t member : group)
      inputs.push_back(locals[member]);
    std::vector<HostTensor> outputs = runGroupStep(step, inputs);
    for (auto [member, output] : llvm::zip_equal(group, outputs))
      next[member] = std::move(output);
  }
  locals = std::move(next);
  return llvm::Error::success();
}

llvm::Expected<HostTensor> mlir::titan::assembleTensor(
    const DeviceMesh &mesh, ArrayRef<int64_t> globalShape,
    ArrayRef<HostTensor> locals, ArrayRef<Placement> placements) {
  if (llvm::Error err =
          verifyPlacements(globalShape, mesh.getSizes(), placements))
    return std::move(err);
  if (llvm::Error err =
          verifyLocalShapes(mesh, globalShape, locals, placements))
    return std::move(err);
  ReduceKind kind = getPartialKind(placements).value_or(ReduceKind::Sum);
  HostTensor global = filled(globalShape, reduceIdentity(kind));
  int64_t numPartial = 1;
  for (auto [p, size] : llvm::zip_equal(placements, mesh.getSizes()))
    if (p.isPartial())
      numPartial *= size;
  for (auto [rank, local] : llvm::enumerate(locals)) {
    // Ranks differing only on replicated axes must agree; the one at
    // coordinate 0 on every replicated axis contributes.
    SmallVector<int64_t> coordinate = mesh.getCoordinate(rank);
    SmallVector<int64_t> replicaCoordinate(coordinate);
    for (auto [axis, p] : llvm::enumerate(placements))
      if (p.isReplicate())
        replicaCoordinate[axis] = 0;
    int64_t replica = mesh.getRank(replicaCoordinate);
    if (replica != static_cast<int64_t>(rank)) {
      if (local.data != locals[replica].data)
        return makeError("rank " + Twine(rank) + " and rank " + Twine(replica) +
                         " are replicas under " + formatPlacements(placements) +
                         " but hold different values");
      continue;
    }
    LocalShard shard = llvm::cantFail(computeLocalShapeAndGlobalOffset(
        globalShape, mesh.getSizes(), placements, coordinate));
    SmallVector<int64_t> zero(globalShape.size(), 0);
    forEachIndex(shard.shape, [&](ArrayRef<int64_t> index) {
      double &acc = global.data[linearize(globalShape, index, shard.offset)];
      acc = combine(kind, acc, local.data[linearize(shard.shape, index, zero)]);
    });
  }
  if (kind == ReduceKind::Avg)
    for (double &value : global.data)
      value /= numPartial;
  return global;
}
