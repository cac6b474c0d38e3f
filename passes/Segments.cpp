//===- Segments.cpp - the step as runs of one phase and block -------------===//

#include "Segments.h"

#include "titan/Dialect/Provenance.h"
#include "titan/Dialect/TitanDialect.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::titan;

Segments::Segments(Block &body) {
  std::optional<Phase> phase;
  StringRef block;
  for (Operation &op : body) {
    std::optional<Phase> opPhase = getPhase(&op);
    std::optional<StringRef> path = getModulePath(op.getLoc());
    StringRef opBlock = path ? getTransformerBlock(*path) : "";
    bool starts = segmentStart.empty() || (opPhase && opPhase != phase) ||
                  (!opBlock.empty() && opBlock != block);
    if (starts) {
      segmentStart.push_back(ops.size());
      phase = opPhase ? opPhase : phase;
      block = opBlock;
    }
    position[&op] = ops.size();
    ops.push_back(&op);
    segmentOf.push_back(segmentStart.size() - 1);
  }
}

int64_t Segments::getStart(int64_t segment) const {
  if (segment < 0)
    return 0;
  if (segment >= getNumSegments())
    return ops.size() - 1;
  return segmentStart[segment];
}

int64_t
mlir::titan::collectMovableProducers(Operation *collective, int64_t issue,
                                     const Segments &segments,
                                     SmallVectorImpl<Operation *> &producers) {
  // The members of the group that moves: the collective and the producers
  // found so far; a producer must feed only them.
  llvm::SmallSetVector<Operation *, 8> group;
  group.insert(collective);
  int64_t earliest = 0;
  SmallVector<Operation *> worklist = {collective};
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || segments.getPosition(def) < issue)
        continue;
      bool movable = isPure(def) && !isa<CollectiveOpInterface>(def) &&
                     llvm::all_of(def->getUsers(), [&](Operation *user) {
                       return group.contains(user);
                     });
      if (!movable) {
        earliest = std::max(earliest, segments.getPosition(def) + 1);
        continue;
      }
      if (group.insert(def))
        worklist.push_back(def);
    }
  }
  size_t first = producers.size();
  for (Operation *member : group)
    if (member != collective)
      producers.push_back(member);
  std::sort(producers.begin() + first, producers.end(),
            [&](Operation *a, Operation *b) {
              return segments.getPosition(a) < segments.getPosition(b);
            });
  return earliest;
}
