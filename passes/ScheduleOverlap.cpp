//===- ScheduleOverlap.cpp - collectives behind computation ---------------===//
//
// Implements titan-schedule-overlap (see passes/Passes.td for the
// contract).
//
//===----------------------------------------------------------------------===//

#include "Computation.h"
#include "Segments.h"

#include "titan/Dialect/PipelineMesh.h"
#include "titan/Dialect/Provenance.h"
#include "titan/Dialect/TitanDialect.h"
#include "titan/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::titan {
#define GEN_PASS_DEF_SCHEDULEOVERLAPPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// Bytes of a value of static tensor type (0 for anything else).
int64_t bytesOf(Value value) { return getStaticByteSize(value.getType()); }

/// What the pass does to one collective.
struct Decision {
  Operation *collective = nullptr;
  /// The ops computing its operands that move with it (in program order).
  SmallVector<Operation *> producers;
  /// Where it is issued: before the op at this position.
  int64_t issue = 0;
  /// Where it is waited for: before the op at this position.
  int64_t wait = 0;
};

class ScheduleOverlapPass
    : public titan::impl::ScheduleOverlapPassBase<ScheduleOverlapPass> {
public:
  using ScheduleOverlapPassBase::ScheduleOverlapPassBase;

  void runOnOperation() override {
    auto function = getOperation().lookupSymbol<func::FuncOp>("train_step");
    if (!function || !function.getBody().hasOneBlock() || prefetchDepth <= 0)
      return;
    Block &body = function.getBody().front();
    deferChainedCollectives(body);
    Segments segments(body);
    SmallVector<Decision> decisions;
    // Extra bytes the schedule keeps alive at each position (the budget).
    SmallVector<int64_t> extra(body.getOperations().size(), 0);
    for (Operation &op : body) {
      std::optional<Decision> decision = decide(&op, segments);
      if (!decision || !fitsBudget(*decision, segments, extra))
        continue;
      decisions.push_back(std::move(*decision));
    }
    apply(decisions, segments);
  }

private:
  /// Moves a collective that reads another collective's result (HSDP's
  /// all-reduce over the replicas of a gradient the fsdp reduce-scatter
  /// produced), with the reshapes between them, down to where the first
  /// collective would be waited for at the latest (the start of the
  /// segment `prefetchDepth` + 1 after it), but before its own first
  /// reader, when something computes between there and that reader: the
  /// first one then runs behind the computation in between, and the second
  /// one from there.
  void deferChainedCollectives(Block &body);
  /// Where `op`, a collective, would best be issued and waited for, or none
  /// when nothing would compute in between.
  std::optional<Decision> decide(Operation *op, const Segments &segments);
  /// Whether `decision` keeps the extra bytes within the budget; if so,
  /// adds them to `extra`.
  bool fitsBudget(const Decision &decision, const Segments &segments,
                  SmallVectorImpl<int64_t> &extra);
  /// Moves and marks the collectives of `decisions`.
  void apply(ArrayRef<Decision> decisions, const Segments &segments);
};

/// Whether the scheduling moves `op`: a collective with a result that is
/// not a pipeline transfer and not already asynchronous.
static bool isSchedulable(Operation *op) {
  return isa<CollectiveOpInterface>(op) && op->getNumResults() == 1 &&
         !isa<SendOp, RecvOp>(op) && !isPipelineTransfer(op) &&
         !op->hasAttr(TitanDialect::kAsyncAttrName);
}

/// The collective that computes an operand of `op`, directly or through
/// reshapes read by nothing else (appended to `views`, if given, in
/// program order), if any.
static Operation *
getCollectiveOperand(Operation *op,
                     SmallVectorImpl<Operation *> *views = nullptr) {
  for (Value operand : op->getOperands()) {
    SmallVector<Operation *> chain;
    Operation *def = operand.getDefiningOp();
    while (isa_and_nonnull<ReshapeOp>(def) && def->getResult(0).hasOneUse()) {
      chain.push_back(def);
      def = def->getOperand(0).getDefiningOp();
    }
    if (!def || !isSchedulable(def) || !def->getResult(0).hasOneUse())
      continue;
    if (views)
      views->append(chain.rbegin(), chain.rend());
    return def;
  }
  return nullptr;
}

void ScheduleOverlapPass::deferChainedCollectives(Block &body) {
  Segments segments(body);
  struct Move {
    SmallVector<Operation *> ops;
    Operation *before;
  };
  SmallVector<Move> moves;
  for (Operation &op : body) {
    SmallVector<Operation *> views;
    Operation *first =
        isSchedulable(&op) ? getCollectiveOperand(&op, &views) : nullptr;
    if (!first)
      continue;
    int64_t firstUse = std::numeric_limits<int64_t>::max();
    for (Operation *user : op.getResult(0).getUsers())
      firstUse = std::min(firstUse, segments.getPosition(user));
    int64_t latest = segments.getStart(
        segments.getSegment(segments.getPosition(first)) + prefetchDepth + 1);
    int64_t to = std::min(firstUse, latest);
    if (to <= segments.getPosition(&op) + 1 || to >= segments.getNumOps())
      continue;
    // Only when it can run behind computation from there too; otherwise
    // it is better issued early, behind the first one.
    bool computesAfter = false;
    for (int64_t p = to; p < firstUse && !computesAfter; ++p)
      computesAfter = computes(segments.getOp(p));
    if (!computesAfter)
      continue;
    views.push_back(&op);
    moves.push_back({std::move(views), segments.getOp(to)});
  }
  for (const Move &move : moves)
    for (Operation *op : move.ops)
      op->moveBefore(move.before);
}

std::optional<Decision> ScheduleOverlapPass::decide(Operation *op,
                                                    const Segments &segments) {
  if (!isSchedulable(op))
    return std::nullopt;
  Value result = op->getResult(0);
  if (result.use_empty())
    return std::nullopt;
  int64_t at = segments.getPosition(op);
  int64_t firstUse = std::numeric_limits<int64_t>::max();
  for (Operation *user : result.getUsers())
    firstUse = std::min(firstUse, segments.getPosition(user));
  Decision decision;
  decision.collective = op;
  // Issued `prefetchDepth` segments before the one that first reads it
  // (FSDP's prefetch of the next block's parameters), once its operands
  // are there. An all-reduce the optimizer reads first (a gradient's under
  // DDP, which titan-sink-to-first-use moved down to the optimizer with
  // the ops that compute its operand, as it holds what it frees) is
  // issued, with those ops, as soon as the values they read are there, as
  // DDP reduces a bucket when its gradients are ready. (A reduce-scatter
  // frees more than it holds: it stays right after its operand.)
  bool issuedWhenReady = isa<AllReduceOp>(op) &&
                         getPhase(segments.getOp(firstUse)) == Phase::Optimizer;
  int64_t target =
      issuedWhenReady
          ? 0
          : segments.getStart(segments.getSegment(firstUse) - prefetchDepth);
  decision.issue = at;
  // Issued where it stands when it reads another collective's result
  // (deferChainedCollectives put it where that one completes).
  if (target < at && !getCollectiveOperand(op)) {
    decision.issue =
        std::max(target, collectMovableProducers(op, target, segments,
                                                 decision.producers));
    // After the collectives the segment starts with (they are needed
    // first, and a communicator runs its collectives in order): right
    // before its first computation.
    while (decision.issue < at &&
           (!computes(segments.getOp(decision.issue)) ||
            llvm::is_contained(decision.producers,
                               segments.getOp(decision.issue))))
      ++decision.issue;
    // An all-reduce whose operand is computed from another collective's
    // result (a gradient norm's, from the reduce-scatters) stays: moved up,
    // its producers would wait for those collectives right away.
    bool readsCollective =
        issuedWhenReady &&
        llvm::any_of(decision.producers, [](Operation *producer) {
          return llvm::any_of(producer->getOperands(), [](Value operand) {
            return isa_and_nonnull<CollectiveOpInterface>(
                operand.getDefiningOp());
          });
        });
    if (decision.issue >= at || readsCollective) {
      decision.issue = at;
      decision.producers.clear();
    }
  }
  // Waited for where it is first read, but no later than the start of the
  // segment `prefetchDepth` after the one it is issued in (such an
  // all-reduce) or stands in: a gradient's reduction completes behind the next
  // block's backward, and its operand is freed then, not at the optimizer.
  int64_t latest = segments.getStart(
      segments.getSegment(issuedWhenReady ? decision.issue : at) +
      prefetchDepth + 1);
  decision.wait = std::max(decision.issue + 1, std::min(firstUse, latest));
  bool overlaps = false;
  for (int64_t p = decision.issue; p < decision.wait && !overlaps; ++p)
    overlaps = computes(segments.getOp(p)) &&
               !llvm::is_contained(decision.producers, segments.getOp(p));
  if (!overlaps)
    return std::nullopt;
  return decision;
}

bool ScheduleOverlapPass::fitsBudget(const Decision &decision,
                                     const Segments &segments,
                                     SmallVectorImpl<int64_t> &extra) {
  Operation *op = decision.collective;
  int64_t at = segments.getPosition(op);
  // Issued early: its result (and what moved with it) lives from the issue
  // on. Waited late: the operands it reads last live to the wait.
  int64_t early = bytesOf(op->getResult(0));
  for (Operation *producer : decision.producers)
    for (Value result : producer->getResults())
      early += bytesOf(result);
  int64_t late = 0;
  for (Value operand : op->getOperands()) {
    if (isa<BlockArgument>(operand))
      continue;
    bool readLater = llvm::any_of(operand.getUsers(), [&](Operation *user) {
      return user != op && segments.getPosition(user) >= decision.wait;
    });
    if (!readLater)
      late += bytesOf(operand);
  }
  auto added = [&](int64_t p) {
    return (p < at ? early : 0) + (p > at ? late : 0);
  };
  if (memoryBudget >= 0)
    for (int64_t p = decision.issue; p < decision.wait; ++p)
      if (extra[p] + added(p) > memoryBudget)
        return false;
  for (int64_t p = decision.issue; p < decision.wait; ++p)
    extra[p] += added(p);
  return true;
}

void ScheduleOverlapPass::apply(ArrayRef<Decision> decisions,
                                const Segments &segments) {
  // Ops that move; an anchor is the first op at or after a position that
  // stays, so moves do not drag each other along. A collective read by an
  // op that moves earlier stays synchronous (its wait could not stand
  // before that reader).
  llvm::SmallPtrSet<Operation *, 16> moving;
  SmallVector<Decision> kept(decisions);
  for (bool changed = true; changed;) {
    moving.clear();
    for (const Decision &decision : kept)
      if (segments.getPosition(decision.collective) != decision.issue) {
        moving.insert(decision.collective);
        moving.insert(decision.producers.begin(), decision.producers.end());
      }
    size_t before = kept.size();
    llvm::erase_if(kept, [&](const Decision &decision) {
      return llvm::any_of(
          decision.collective->getUsers(),
          [&](Operation *user) { return moving.contains(user); });
    });
    changed = kept.size() != before;
  }
  decisions = kept;
  auto anchor = [&](int64_t at) {
    Operation *op = segments.getOp(at);
    while (moving.contains(op))
      op = op->getNextNode();
    return op;
  };
  SmallVector<std::pair<Operation *, Operation *>> issueBefore, waitBefore;
  for (const Decision &decision : decisions) {
    issueBefore.push_back({decision.collective, anchor(decision.issue)});
    waitBefore.push_back({decision.collective, anchor(decision.wait)});
  }
  for (auto [decision, place] : llvm::zip(decisions, issueBefore)) {
    Operation *before = place.second;
    if (segments.getPosition(decision.collective) == decision.issue)
      continue;
    for (Operation *producer : decision.producers)
      producer->moveBefore(before);
    decision.collective->moveBefore(before);
  }
  for (auto [collective, before] : waitBefore) {
    OpBuilder builder(before);
    Value result = collective->getResult(0);
    auto wait = WaitOp::create(builder, collective->getLoc(), result);
    result.replaceAllUsesExcept(wait.getResult(), wait);
    collective->setAttr(TitanDialect::kAsyncAttrName,
                        UnitAttr::get(collective->getContext()));
  }
}

} // namespace
