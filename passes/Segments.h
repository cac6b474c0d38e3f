//===- Segments.h - the step as runs of one phase and block -----*- C++ -*-===//
//
// The scheduling passes (titan-bucket-collectives, titan-schedule-overlap)
// see `@train_step` as segments: runs of ops of one phase and transformer
// block, FSDP's unit of communication.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PASSES_SEGMENTS_H
#define TITAN_PASSES_SEGMENTS_H

#include "mlir/IR/Block.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::titan {

/// The ops of a block in order, and its segments: runs of ops of one phase
/// and transformer block. An op outside every block, or without a phase,
/// belongs to the segment it stands in unless its phase starts a new one.
class Segments {
public:
  explicit Segments(Block &body);

  int64_t getPosition(Operation *op) const { return position.lookup(op); }
  int64_t getSegment(int64_t at) const { return segmentOf[at]; }
  int64_t getNumSegments() const { return segmentStart.size(); }
  int64_t getNumOps() const { return ops.size(); }
  /// The first position of segment `segment` (clamped to the block).
  int64_t getStart(int64_t segment) const;
  Operation *getOp(int64_t at) const { return ops[at]; }

private:
  SmallVector<Operation *> ops;
  DenseMap<Operation *, int64_t> position;
  SmallVector<int64_t> segmentOf;
  SmallVector<int64_t> segmentStart;
};

/// The ops that compute `collective`'s operands at or after position
/// `issue` and can move with it to there (pure, not communicating, read by
/// nothing but the collective and each other), appended to `producers` in
/// program order. Returns the position after the last operand def at or
/// after `issue` that cannot move (0 when none): the collective can be
/// issued no earlier.
int64_t collectMovableProducers(Operation *collective, int64_t issue,
                                const Segments &segments,
                                SmallVectorImpl<Operation *> &producers);

} // namespace mlir::titan

#endif // TITAN_PASSES_SEGMENTS_H
