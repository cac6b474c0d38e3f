//===- PipelineTransfers.cpp - do the pipeline ranks' messages match ------===//
//
// See include/titan/Report/PipelineTransfers.h. The check runs the ranks'
// transfers in turn, as the interpreter runs their programs: a rank goes
// on until a receive whose message its peer has not sent yet, and the
// messages sent and not yet received wait in one queue per (sender,
// receiver). When no rank can go on before all ended, the ranks wait for
// each other.
//
//===----------------------------------------------------------------------===//

#include "titan/Report/PipelineTransfers.h"

#include "titan/Dialect/PipelineMesh.h"
#include "titan/Dialect/TitanDialect.h"

#include "llvm/ADT/STLExtras.h"

#include <deque>
#include <limits>
#include <map>

using namespace mlir;
using namespace mlir::titan;

FailureOr<SmallVector<PipelineTransfer, 0>>
mlir::titan::readPipelineTransfers(func::FuncOp step) {
  SmallVector<PipelineTransfer, 0> transfers;
  WalkResult walked = step.walk([&](Operation *op) {
    if (!isPipelineTransfer(op))
      return WalkResult::advance();
    if (op->getParentOp() != step) {
      op->emitError("a transfer between pipeline stages inside a nested "
                    "region: the check that the pipeline ranks' messages "
                    "match needs them at the top of @")
          << step.getSymName();
      return WalkResult::interrupt();
    }
    if (auto send = dyn_cast<SendOp>(op))
      transfers.push_back({true, send.getPeerAttr().getInt(),
                           send.getTagAttr().getInt(),
                           send.getInput().getType(), op->getLoc()});
    else if (auto recv = cast<RecvOp>(op))
      transfers.push_back({false, recv.getPeerAttr().getInt(),
                           recv.getTagAttr().getInt(), recv.getType(),
                           op->getLoc()});
    return WalkResult::advance();
  });
  if (walked.wasInterrupted())
    return failure();
  return transfers;
}

namespace {

/// What the ranks of a pipeline do with their transfers, in turn.
class TransferRun {
public:
  explicit TransferRun(ArrayRef<SmallVector<PipelineTransfer, 0>> ranks)
      : ranks(ranks), next(ranks.size(), 0) {}

  LogicalResult run();

private:
  /// Checks the peers and tags of every transfer.
  LogicalResult checkOperands() const;
  /// Runs `rank`'s transfers until one waits or all ran; sets `progressed`
  /// when one ran.
  LogicalResult advance(int64_t rank, bool &progressed);
  /// Whether `rank` ran all its transfers.
  bool hasEnded(int64_t rank) const { return next[rank] == ranks[rank].size(); }
  /// Emits the error of ranks that all wait for a message.
  LogicalResult reportWaiting() const;
  /// After all ranks ended, emits the error of a message nobody received;
  /// succeeds when there is none.
  LogicalResult reportUnreceived() const;

  ArrayRef<SmallVector<PipelineTransfer, 0>> ranks;
  /// Per rank, the index of its next transfer.
  SmallVector<size_t> next;
  /// Per (sender, receiver), the sends not yet received, oldest first.
  std::map<std::pair<int64_t, int64_t>, std::deque<const PipelineTransfer *>>
      inFlight;
};

} // namespace

LogicalResult TransferRun::checkOperands() const {
  int64_t degree = ranks.size();
  for (auto [rank, transfers] : llvm::enumerate(ranks))
    for (const PipelineTransfer &transfer : transfers) {
      StringRef op = transfer.isSend ? "titan.send" : "titan.recv";
      if (transfer.peer < 0 || transfer.peer >= degree ||
          transfer.peer == int64_t(rank))
        return emitError(transfer.loc)
               << "pipeline rank " << rank << "'s " << op << " names peer "
               << transfer.peer << ", which is not another of the pipeline's "
               << degree << " ranks";
      if (transfer.tag < 0 ||
          transfer.tag > int64_t(std::numeric_limits<uint32_t>::max()))
        return emitError(transfer.loc)
               << "pipeline rank " << rank << "'s " << op << " has tag "
               << transfer.tag
               << ", outside the runtimes' tags (0 to 2^32 - 1)";
    }
  return success();
}

LogicalResult TransferRun::advance(int64_t rank, bool &progressed) {
  while (!hasEnded(rank)) {
    const PipelineTransfer &transfer = ranks[rank][next[rank]];
    if (transfer.isSend) {
      inFlight[{rank, transfer.peer}].push_back(&transfer);
    } else {
      std::deque<const PipelineTransfer *> &queue =
          inFlight[{transfer.peer, rank}];
      if (queue.empty())
        return success();
      const PipelineTransfer &sent = *queue.front();
      if (sent.tag != transfer.tag || sent.type != transfer.type) {
        InFlightDiagnostic diag =
            emitError(transfer.loc)
            << "pipeline rank " << rank << " receives a " << transfer.type
            << " of tag " << transfer.tag << " from pipeline rank "
            << transfer.peer << ", whose oldest message to it not received "
            << "yet is a " << sent.type << " of tag " << sent.tag
            << " (NCCL matches a receive with the sender's oldest message)";
        diag.attachNote(sent.loc) << "sent here";
        return diag;
      }
      queue.pop_front();
    }
    ++next[rank];
    progressed = true;
  }
  return success();
}

LogicalResult TransferRun::reportWaiting() const {
  int64_t first = 0;
  while (hasEnded(first))
    ++first;
  InFlightDiagnostic diag =
      emitError(ranks[first][next[first]].loc)
      << "the pipeline ranks' programs wait for messages no rank sends";
  for (auto [rank, transfers] : llvm::enumerate(ranks)) {
    if (hasEnded(rank))
      continue;
    const PipelineTransfer &waiting = transfers[next[rank]];
    Diagnostic &note = diag.attachNote(waiting.loc);
    note << "pipeline rank " << rank << " waits here for a " << waiting.type
         << " of tag " << waiting.tag << " from pipeline rank " << waiting.peer;
    if (hasEnded(waiting.peer))
      note << ", which has ended";
  }
  return diag;
}

LogicalResult TransferRun::reportUnreceived() const {
  for (const auto &[pair, queue] : inFlight) {
    if (queue.empty())
      continue;
    const PipelineTransfer &sent = *queue.front();
    InFlightDiagnostic diag = emitError(sent.loc)
                              << "pipeline rank " << pair.first << " sends a "
                              << sent.type << " of tag " << sent.tag
                              << " to pipeline rank " << pair.second
                              << ", which never receives it";
    if (queue.size() > 1)
      diag << " (nor the " << queue.size() - 1 << " messages sent after it)";
    return diag;
  }
  return success();
}

LogicalResult TransferRun::run() {
  if (failed(checkOperands()))
    return failure();
  while (true) {
    bool progressed = false;
    for (int64_t rank : llvm::seq<int64_t>(ranks.size()))
      if (failed(advance(rank, progressed)))
        return failure();
    if (llvm::all_of(llvm::seq<int64_t>(ranks.size()),
                     [&](int64_t rank) { return hasEnded(rank); }))
      return reportUnreceived();
    if (!progressed)
      return reportWaiting();
  }
}

LogicalResult mlir::titan::verifyPipelineTransfers(
    ArrayRef<SmallVector<PipelineTransfer, 0>> ranks) {
  return TransferRun(ranks).run();
}
