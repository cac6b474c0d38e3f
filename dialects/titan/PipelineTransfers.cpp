//===- PipelineTransfers.cpp - the pipeline ranks' messages ---------------===//
//
// See include/titan/Dialect/PipelineTransfers.h. TransferRun runs the
// ranks' transfers in turn as Gloo (and the interpreter) does: a rank goes
// on until a receive whose message its peer has not sent yet, and the
// messages sent and not yet received wait in one queue per (sender,
// receiver). NcclGroupRun runs their groups as NCCL does. When no rank can
// go on before all ended, the ranks wait for each other.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/PipelineTransfers.h"

#include "titan/Dialect/PipelineMesh.h"
#include "titan/Dialect/TitanDialect.h"

#include "llvm/ADT/STLExtras.h"

#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <tuple>

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
                           send.getInput().getType(), op->getLoc(), op});
    else if (auto recv = cast<RecvOp>(op))
      transfers.push_back({false, recv.getPeerAttr().getInt(),
                           recv.getTagAttr().getInt(), recv.getType(),
                           op->getLoc(), op});
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

namespace {

/// The ranks' transfers as NCCL runs them (docs/nccl.md): a rank's sends
/// wait until its next receive and go with it in one group (its last
/// sends in a group of their own at the step's end). The rank's stream
/// runs one group at a time, until all its transfers completed; a
/// transfer completes once the one it matches is in the group its peer
/// runs.
class NcclGroupRun {
public:
  /// `ranks` whose messages match (each rank receives a peer's messages in
  /// the order the peer sends them).
  explicit NcclGroupRun(ArrayRef<SmallVector<PipelineTransfer, 0>> ranks);

  /// Runs the groups until all ranks ended (true) or all wait.
  bool run();
  /// After run() returned false: emits the error naming what waits.
  LogicalResult reportWaiting() const;
  /// After run() returned false: a send of a waiting group whose receive
  /// comes in a later group of its peer, as (rank, index of the send, index
  /// of the group's receive), or none.
  std::optional<std::tuple<int64_t, size_t, size_t>> findWaitingSend() const;

private:
  /// Where a transfer is: its rank and index.
  using Site = std::pair<int64_t, size_t>;
  /// Whether `rank` ran all its groups.
  bool hasEnded(int64_t rank) const {
    return current[rank] == groups[rank].size();
  }

  ArrayRef<SmallVector<PipelineTransfer, 0>> ranks;
  /// Per rank, its groups (indices of its transfers) and the group of
  /// each transfer.
  SmallVector<SmallVector<SmallVector<size_t>>> groups;
  SmallVector<SmallVector<size_t>> groupOf;
  /// Per rank and transfer, the transfer it matches, and whether it
  /// completed.
  SmallVector<SmallVector<Site>> matches;
  SmallVector<SmallVector<bool>> completed;
  /// Per rank, the index of the group it runs now.
  SmallVector<size_t> current;
};

} // namespace

NcclGroupRun::NcclGroupRun(ArrayRef<SmallVector<PipelineTransfer, 0>> ranks)
    : ranks(ranks), groups(ranks.size()), groupOf(ranks.size()),
      matches(ranks.size()), completed(ranks.size()), current(ranks.size(), 0) {
  // The k-th message from s to r is r's k-th receive from s.
  std::map<std::pair<int64_t, int64_t>, SmallVector<size_t>> sends, receives;
  for (auto [rank, transfers] : llvm::enumerate(ranks)) {
    SmallVector<size_t> pending;
    matches[rank].resize(transfers.size());
    completed[rank].assign(transfers.size(), false);
    groupOf[rank].resize(transfers.size());
    for (auto [index, transfer] : llvm::enumerate(transfers)) {
      pending.push_back(index);
      if (transfer.isSend) {
        sends[{int64_t(rank), transfer.peer}].push_back(index);
        continue;
      }
      receives[{transfer.peer, int64_t(rank)}].push_back(index);
      groups[rank].push_back(std::move(pending));
      pending.clear();
    }
    if (!pending.empty())
      groups[rank].push_back(std::move(pending));
    for (auto [group, members] : llvm::enumerate(groups[rank]))
      for (size_t index : members)
        groupOf[rank][index] = group;
  }
  for (const auto &[pair, sent] : sends)
    for (auto [send, receive] : llvm::zip(sent, receives[pair])) {
      matches[pair.first][send] = {pair.second, receive};
      matches[pair.second][receive] = {pair.first, send};
    }
}

LogicalResult NcclGroupRun::reportWaiting() const {
  int64_t first = 0;
  while (hasEnded(first))
    ++first;
  InFlightDiagnostic diag =
      emitError(ranks[first][groups[first][current[first]].front()].loc)
      << "on NCCL the pipeline ranks wait for each other: a rank's sends "
         "wait for its next receive and run with it, and a send completes "
         "only together with its receive";
  for (auto [rank, transfers] : llvm::enumerate(ranks)) {
    if (hasEnded(rank))
      continue;
    for (size_t index : groups[rank][current[rank]]) {
      if (completed[rank][index])
        continue;
      auto [peer, match] = matches[rank][index];
      const PipelineTransfer &transfer = transfers[index];
      diag.attachNote(transfer.loc)
          << "pipeline rank " << rank << "'s "
          << (transfer.isSend ? "send" : "receive") << " of a " << transfer.type
          << " of tag " << transfer.tag << " waits for pipeline rank " << peer
          << ", which " << (transfer.isSend ? "receives" : "sends")
          << " it in a later NCCL group";
      break;
    }
  }
  return diag;
}

std::optional<std::tuple<int64_t, size_t, size_t>>
NcclGroupRun::findWaitingSend() const {
  for (int64_t rank : llvm::seq<int64_t>(ranks.size())) {
    if (hasEnded(rank))
      continue;
    const SmallVector<size_t> &group = groups[rank][current[rank]];
    if (ranks[rank][group.back()].isSend)
      continue; // The sends at the step's end: nothing to go past.
    for (size_t index : group)
      if (ranks[rank][index].isSend && !completed[rank][index])
        return std::make_tuple(rank, index, group.back());
  }
  return std::nullopt;
}

bool NcclGroupRun::run() {
  int64_t degree = ranks.size();
  while (true) {
    bool progressed = false;
    for (int64_t rank = 0; rank < degree; ++rank) {
      if (hasEnded(rank))
        continue;
      for (size_t index : groups[rank][current[rank]]) {
        auto [peer, match] = matches[rank][index];
        if (!completed[rank][index] && !hasEnded(peer) &&
            groupOf[peer][match] == current[peer]) {
          completed[rank][index] = completed[peer][match] = true;
          progressed = true;
        }
      }
    }
    for (int64_t rank = 0; rank < degree; ++rank)
      if (!hasEnded(rank) &&
          llvm::all_of(groups[rank][current[rank]],
                       [&](size_t index) { return completed[rank][index]; })) {
        ++current[rank];
        progressed = true;
      }
    if (llvm::all_of(llvm::seq<int64_t>(degree),
                     [&](int64_t rank) { return hasEnded(rank); }))
      return true;
    if (!progressed)
      return false;
  }
}

LogicalResult mlir::titan::verifyPipelineTransfers(
    ArrayRef<SmallVector<PipelineTransfer, 0>> ranks, bool nccl) {
  if (failed(TransferRun(ranks).run()))
    return failure();
  if (!nccl)
    return success();
  NcclGroupRun groups(ranks);
  if (groups.run())
    return success();
  return groups.reportWaiting();
}

/// Whether each rank of `ranks` receives each peer's messages in the order
/// the peer sends them, with the types sent.
static bool
receivesInSendOrder(ArrayRef<SmallVector<PipelineTransfer, 0>> ranks) {
  std::map<std::pair<int64_t, int64_t>, SmallVector<const PipelineTransfer *>>
      sent, received;
  for (auto [rank, transfers] : llvm::enumerate(ranks))
    for (const PipelineTransfer &transfer : transfers) {
      if (transfer.peer < 0 || transfer.peer >= int64_t(ranks.size()))
        return false;
      if (transfer.isSend)
        sent[{int64_t(rank), transfer.peer}].push_back(&transfer);
      else
        received[{transfer.peer, int64_t(rank)}].push_back(&transfer);
    }
  for (const auto &[pair, sends] : sent) {
    const SmallVector<const PipelineTransfer *> &receives = received[pair];
    if (sends.size() != receives.size())
      return false;
    for (auto [send, receive] : llvm::zip(sends, receives))
      if (send->tag != receive->tag || send->type != receive->type)
        return false;
  }
  return llvm::all_of(received, [&](const auto &entry) {
    return sent.count(entry.first) || entry.second.empty();
  });
}

/// Moves the receives of `step` (`transfers`, its transfers) up so that it
/// receives each peer's messages in the order the peer sends them
/// (`ranks[peer]`): a receive to right before the one of the next message
/// from its sender, where it came after it.
static void orderReceives(int64_t rank,
                          ArrayRef<SmallVector<PipelineTransfer, 0>> ranks) {
  for (auto [peer, peerTransfers] : llvm::enumerate(ranks)) {
    if (int64_t(peer) == rank)
      continue;
    // Per tag, the rank's receives of it from `peer`, in program order.
    DenseMap<int64_t, std::deque<Operation *>> receivesOf;
    size_t count = 0;
    for (const PipelineTransfer &transfer : ranks[rank])
      if (!transfer.isSend && transfer.peer == int64_t(peer)) {
        receivesOf[transfer.tag].push_back(transfer.op);
        ++count;
      }
    SmallVector<Operation *> inSendOrder;
    for (const PipelineTransfer &transfer : peerTransfers) {
      if (!transfer.isSend || transfer.peer != rank)
        continue;
      std::deque<Operation *> &receives = receivesOf[transfer.tag];
      if (receives.empty())
        return; // Not the messages sent: left for the check to report.
      inSendOrder.push_back(receives.front());
      receives.pop_front();
    }
    if (inSendOrder.size() != count)
      return;
    for (size_t k = inSendOrder.size(); k-- > 1;)
      if (inSendOrder[k]->isBeforeInBlock(inSendOrder[k - 1]))
        inSendOrder[k - 1]->moveBefore(inSendOrder[k]);
  }
}

void mlir::titan::orderPipelineTransfers(ArrayRef<func::FuncOp> steps) {
  SmallVector<SmallVector<PipelineTransfer, 0>> ranks;
  auto read = [&](int64_t rank) {
    FailureOr<SmallVector<PipelineTransfer, 0>> transfers =
        readPipelineTransfers(steps[rank]);
    if (failed(transfers))
      return false;
    ranks[rank] = std::move(*transfers);
    return true;
  };
  ranks.resize(steps.size());
  for (int64_t rank : llvm::seq<int64_t>(steps.size()))
    if (!read(rank))
      return;
  // Every rank's receives from the programs as built (their sends do not
  // move here), then the lists as they are now.
  for (int64_t rank : llvm::seq<int64_t>(steps.size()))
    orderReceives(rank, ranks);
  for (int64_t rank : llvm::seq<int64_t>(steps.size()))
    read(rank);
  if (!receivesInSendOrder(ranks))
    return;
  // NCCL's groups: a send waiting in a group for a peer's later group goes
  // past the group's receive (into the next group), with the group's later
  // sends to the same peer, which keeps the order of the messages to it.
  // Each move is recorded to be undone if the groups still wait in the end.
  SmallVector<std::pair<Operation *, Operation *>> undo;
  size_t limit = 0;
  for (const auto &transfers : ranks)
    limit += transfers.size() * transfers.size();
  for (size_t moves = 0; moves <= limit; ++moves) {
    NcclGroupRun groups(ranks);
    if (groups.run())
      return;
    std::optional<std::tuple<int64_t, size_t, size_t>> waiting =
        groups.findWaitingSend();
    if (!waiting)
      break;
    auto [rank, sendIndex, receiveIndex] = *waiting;
    SmallVector<PipelineTransfer, 0> &transfers = ranks[rank];
    int64_t peer = transfers[sendIndex].peer;
    SmallVector<PipelineTransfer, 0> moved, kept;
    for (size_t index = sendIndex; index < receiveIndex; ++index)
      (transfers[index].isSend && transfers[index].peer == peer ? moved : kept)
          .push_back(transfers[index]);
    Operation *after = transfers[receiveIndex].op;
    for (const PipelineTransfer &transfer : moved) {
      undo.push_back({transfer.op, transfer.op->getPrevNode()});
      transfer.op->moveAfter(after);
      after = transfer.op;
    }
    SmallVector<PipelineTransfer, 0> reordered(transfers.begin(),
                                               transfers.begin() + sendIndex);
    llvm::append_range(reordered, kept);
    reordered.push_back(transfers[receiveIndex]);
    llvm::append_range(reordered, moved);
    reordered.append(transfers.begin() + receiveIndex + 1, transfers.end());
    transfers = std::move(reordered);
  }
  // The groups still wait: the sends go back where they were (the
  // receives stay in their senders' order, which Gloo runs as well).
  for (auto [op, previous] : llvm::reverse(undo)) {
    if (previous)
      op->moveAfter(previous);
    else
      op->moveBefore(&op->getBlock()->front());
  }
}
