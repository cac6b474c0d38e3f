//===- NormalizeCollectives.h - collectives on contiguous chunks -*- C++
//-*-===//
//
// The rewrite of titan-normalize-collectives, for passes that create
// collectives after it ran.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PASSES_NORMALIZECOLLECTIVES_H
#define TITAN_PASSES_NORMALIZECOLLECTIVES_H

#include "titan/Dialect/TitanDialect.h"

#include <optional>

namespace mlir::titan {

/// `shape` with dim `dim` of size `size`.
SmallVector<int64_t> getShapeWithDim(ArrayRef<int64_t> shape, int64_t dim,
                                     int64_t size);

/// Whether the chunks of `shape` along `dim` are contiguous: every dim
/// before it has size 1 (the runtime's collectives move such chunks).
bool chunksAreContiguous(ArrayRef<int64_t> shape, int64_t dim);

/// `shape` with dim `dim` split into [parts, shape[dim] / parts].
SmallVector<int64_t> getSplitShape(ArrayRef<int64_t> shape, int64_t dim,
                                   int64_t parts);

/// The permutation of `rank` dims that moves dim `from` to position `to`,
/// keeping the others in order.
SmallVector<int64_t> getMoveDimPermutation(int64_t rank, int64_t from,
                                           int64_t to);

/// A collective as the program means it: on dim `dim` of its logical
/// operand, whether or not normalizeCollective rewrote it onto contiguous
/// chunks.
struct LogicalCollective {
  Operation *collective = nullptr;
  /// all_gather: the local shard and the gathered tensor; reduce_scatter:
  /// the full operand and the rank's part of the reduction.
  Value input, output;
  int64_t dim = 0;
};

/// What `gather` means: itself, or, when it is normalizeCollective's
/// rewrite of an all_gather along another dim (a reshape, the gather on
/// dim 0, a transpose and a reshape, each read only by the next), the
/// gather it stands for. None for a normalized form some other op reads
/// in between.
std::optional<LogicalCollective> getLogicalCollective(AllGatherOp gather);
/// The same for a reduce_scatter.
std::optional<LogicalCollective> getLogicalCollective(ReduceScatterOp scatter);

/// Rewrites collective `op` (all_gather, reduce_scatter or all_to_all) into
/// the same collective on contiguous chunks (dim 0) of a reshaped operand,
/// with the transposes that move the chunks into place; erases `op`. An
/// asynchronous collective stays asynchronous, and what places its chunks
/// follows its wait. A collective already on contiguous chunks, or of
/// another kind, is left as it is.
void normalizeCollective(Operation *op);

} // namespace mlir::titan

#endif // TITAN_PASSES_NORMALIZECOLLECTIVES_H
