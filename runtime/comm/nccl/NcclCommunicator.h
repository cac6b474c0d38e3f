//===- NcclCommunicator.h - NCCL collectives on a CUDA stream ---*- C++ -*-===//
//
// The CUDA backend's communicator: one NCCL communicator per group, split
// from the world's (NcclBootstrap.h). all_gather, reduce_scatter,
// all_reduce and broadcast are NCCL's; all_to_all is one NCCL group of a
// send and a receive per peer (a local copy for this rank's own chunk);
// send and recv are NCCL's point-to-point transfers; barrier is an
// all_reduce of one element.
//
// Stream semantics, the difference from the Communicator contract: buffers
// are device memory, and an operation returns once it is enqueued on the
// communicator's CUDA stream, not once this rank's part is done. Work
// enqueued later on the same stream sees its result; the host, and other
// streams, must wait for it first (synchronize(), or an event recorded on
// the stream after it). `in` must not change and `out` must not be read
// until then. barrier(), completeSends() and synchronize() are the
// operations that block the host.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_COMM_NCCL_NCCLCOMMUNICATOR_H
#define TITAN_RUNTIME_COMM_NCCL_NCCLCOMMUNICATOR_H

#include "comm/Communicator.h"
#include "comm/Progress.h"
#include "comm/nccl/NcclVersion.h"

#include <cuda_runtime_api.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace titan::rt {

class Watchdog;

/// Collectives over an NCCL communicator of a group, enqueued on one CUDA
/// stream, used by one thread at a time. NCCL's and CUDA's failures become
/// Statuses naming the operation, the communicator and NCCL's error
/// (NcclStatus.h). A failure aborts the NCCL communicator
/// (ncclCommAbort, which also ends its kernels that wait for a peer), so
/// every later operation fails at once, naming the first failure.
///
/// A peer that died is found by polling: before every operation and while
/// synchronize() waits, the communicator asks NCCL for an asynchronous
/// error (ncclCommGetAsyncError: a peer that closed its connections, a
/// network failure); an operation not done after the timeout is a failure
/// too, naming the members that did not arrive (Watchdog::explainTimeout).
/// Nothing polls between operations: a hang is found by the next
/// synchronize(), barrier() or completeSends().
class NcclCommunicator final : public Communicator {
public:
  /// `comm` is this rank's NCCL communicator of the group, owned from now
  /// on, on CUDA device `device`, whose rank is this rank's index in the
  /// group; operations are enqueued on `stream`, which must outlive this
  /// object. `worldRanks` are the group's world ranks in group order and
  /// `rank` this rank's index in them; `description` names the
  /// communicator in errors (describeCommunicator). `timeout` bounds every
  /// wait: synchronize(), NCCL's own enqueueing and the destructor's.
  /// `watchdog` (may be null) records this rank's progress on it as
  /// communicator `index`. A null `comm` makes a communicator that is
  /// unusable from the start: it checks its arguments, then fails.
  NcclCommunicator(ncclComm_t comm, int device, cudaStream_t stream,
                   std::vector<int64_t> worldRanks, int64_t rank,
                   std::string description, std::chrono::milliseconds timeout,
                   std::shared_ptr<Watchdog> watchdog, size_t index);
  /// Releases the NCCL communicator once its work is done (closeNcclComm,
  /// within the timeout; aborted otherwise) and the device memory this
  /// object allocated. Sends never issued are dropped.
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator &) = delete;
  NcclCommunicator &operator=(const NcclCommunicator &) = delete;

  int64_t getRank() const override { return rank; }
  int64_t getSize() const override {
    return static_cast<int64_t>(worldRanks.size());
  }
  /// The stream every operation is enqueued on.
  cudaStream_t getStream() const { return stream; }

  Status allGather(const void *in, void *out, int64_t bytes) override;
  /// AVG is NCCL's ncclAvg: floating types scale each input by 1 / size
  /// before the sum (rounding differs from the CPU backend's sum then
  /// divide); MAX and MIN follow NCCL on NaNs.
  Status reduceScatter(titanrt_dtype dtype, titanrt_reduce reduce,
                       const void *in, void *out, int64_t count) override;
  Status allReduce(titanrt_dtype dtype, titanrt_reduce reduce, const void *in,
                   void *out, int64_t count) override;
  /// `in` and `out` must not overlap.
  Status allToAll(const void *in, void *out, int64_t bytesPerPeer) override;
  Status broadcast(int64_t root, const void *in, void *out,
                   int64_t bytes) override;
  /// Copies `in` (in stream order, into memory from the stream's pool) and
  /// returns without issuing the transfer. Pending sends are issued in one
  /// NCCL group with the next recv on this communicator, so two members
  /// that both send before they receive do not deadlock; before the next
  /// collective; or by completeSends(). NCCL has no tags: a peer's sends
  /// and recvs match in the order they are issued, and `tag` is only
  /// checked for range. Sends of zero bytes are skipped, as are their
  /// recvs.
  Status send(int64_t peer, int64_t tag, const void *in,
              int64_t bytes) override;
  /// Issues the pending sends and this receive in one NCCL group.
  Status recv(int64_t peer, int64_t tag, void *out, int64_t bytes) override;
  /// Issues the pending sends, then waits (synchronize()) until every send
  /// issued so far is done.
  Status completeSends() override;
  /// completeSends(), then an all_reduce of one element, then
  /// synchronize(): returns once every member reached it (and this rank's
  /// earlier operations on the communicator are done).
  Status barrier() override;

  /// Blocks the host until every operation enqueued so far on this
  /// communicator is done on the device (an event recorded after the last
  /// one), polling NCCL for asynchronous errors. A failure or the timeout
  /// aborts the communicator.
  Status synchronize();

private:
  /// "<operation> over <description>".
  std::string where(CollectiveKind kind) const {
    return std::string(getCollectiveName(kind)) + " over " + description;
  }
  /// Runs `body`, which enqueues operation `kind` (with member `peer` for
  /// send and recv, else -1) and returns its Status, recording it in the
  /// rank's progress and marking its end on the stream; refuses to run
  /// after an earlier failure, and fails (aborting) when `body` does.
  template <typename Body>
  Status run(CollectiveKind kind, int64_t peer, const std::string &where,
             Body &&body);
  /// The Status of NCCL's `result` for `where`; ncclInProgress (a
  /// nonblocking call still enqueueing) is waited for, within the timeout.
  Status settle(const std::string &where, ncclResult_t result);
  /// Runs `calls` between ncclGroupStart and ncclGroupEnd; `calls` returns
  /// the first failed result of the NCCL calls it made.
  template <typename Calls>
  Status group(const std::string &where, Calls &&calls);
  /// Issues the pending sends in one NCCL group, with a receive of `bytes`
  /// bytes from member `peer` into `out` when `peer` is not negative, and
  /// frees their copies in stream order.
  Status issueSends(const std::string &where, int64_t peer = -1,
                    void *out = nullptr, int64_t bytes = 0);
  /// The error of operation `where` after the first failure.
  Status unusable(const std::string &where) const;
  /// Records `status` as the first failure, aborts the NCCL communicator,
  /// and returns `status`.
  Status fail(Status status);

  /// The NCCL communicator; null after an abort.
  ncclComm_t comm;
  /// Its CUDA device.
  int device;
  /// Where every operation is enqueued.
  cudaStream_t stream;
  /// The group's world ranks in group order, and this rank's index.
  std::vector<int64_t> worldRanks;
  int64_t rank;
  /// describeCommunicator's text.
  std::string description;
  /// Bounds every wait.
  std::chrono::milliseconds timeout;
  /// Records the progress and explains timeouts; may be null.
  std::shared_ptr<Watchdog> watchdog;
  /// This communicator's index in the rank's progress.
  size_t index;
  /// The first failure's message; empty while the communicator works.
  std::string failure;
  /// A send not issued yet: its peer and the copy of its data.
  struct PendingSend {
    int64_t peer;
    void *copy;
    int64_t bytes;
  };
  std::vector<PendingSend> pendingSends;
  /// Whether sends were issued since the last synchronize().
  bool sendsInFlight = false;
  /// Recorded on the stream after every operation; null before the first.
  cudaEvent_t done = nullptr;
  /// The last operation, its sequence number and peer, to explain a
  /// timeout.
  CollectiveKind lastKind = CollectiveKind::Barrier;
  uint64_t lastSequence = 0;
  int64_t lastPeer = -1;
  /// barrier()'s element, allocated by the first barrier.
  void *barrierElement = nullptr;
};

} // namespace titan::rt

#endif // TITAN_RUNTIME_COMM_NCCL_NCCLCOMMUNICATOR_H
