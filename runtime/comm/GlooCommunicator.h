//===- GlooCommunicator.h - collectives over Gloo's TCP transport -*- C++ -*-=//
//
// The CPU backend's communicator: one connected Gloo context per group.
// all_gather, all_reduce, all_to_all, broadcast and barrier are Gloo's;
// reduce_scatter is a ring over Gloo's unbound buffers (Gloo 2022 has no
// options-style reduce_scatter; docs/runtime-comm.md says why the ring and
// not ReduceScatterHalvingDoubling); send and recv are unbound-buffer
// transfers whose slot carries the tag.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_COMM_GLOOCOMMUNICATOR_H
#define TITAN_RUNTIME_COMM_GLOOCOMMUNICATOR_H

#include "comm/Communicator.h"
#include "comm/Progress.h"

#include <gloo/context.h>

#include <memory>
#include <string>
#include <vector>

namespace titan::rt {

class Watchdog;

/// Gloo's exception message without the "[file:line] " it starts with.
std::string stripSourceLocation(const std::string &message);

/// Collectives over a connected Gloo context of two or more ranks, used by
/// one thread at a time. Gloo's exceptions become
/// TITANRT_ERROR_COMMUNICATION Statuses naming the operation, the
/// communicator and, where one is known, the peer; a timeout also names the
/// members that did not arrive (Watchdog::explainTimeout). A failure (a
/// peer that died, a timeout) closes the context's connections, so every
/// later operation fails at once, naming the first failure.
class GlooCommunicator final : public Communicator {
public:
  /// `context` is connected and carries the collectives' timeout;
  /// `worldRanks` are the group's world ranks in group order;
  /// `description` names the communicator in errors
  /// (describeCommunicator); `watchdog` records this rank's progress on
  /// it as communicator `index`.
  GlooCommunicator(std::shared_ptr<gloo::Context> context,
                   std::vector<int64_t> worldRanks, std::string description,
                   std::shared_ptr<Watchdog> watchdog, size_t index);

  int64_t getRank() const override { return context->rank; }
  int64_t getSize() const override { return context->size; }
  Status allGather(const void *in, void *out, int64_t bytes) override;
  /// A ring: n - 1 steps, each sending one chunk to the next member and
  /// reducing the one received from the previous into `out`, with one chunk
  /// of scratch memory.
  Status reduceScatter(titanrt_dtype dtype, titanrt_reduce reduce,
                       const void *in, void *out, int64_t count) override;
  Status allReduce(titanrt_dtype dtype, titanrt_reduce reduce, const void *in,
                   void *out, int64_t count) override;
  Status allToAll(const void *in, void *out, int64_t bytesPerPeer) override;
  Status broadcast(int64_t root, const void *in, void *out,
                   int64_t bytes) override;
  /// Copies `in` and posts the transfer without waiting for the peer's
  /// recv (Gloo's transfers are rendezvous: waiting would deadlock two
  /// ranks that send to each other before receiving, as pipeline stages
  /// do); completeSends() or the next barrier waits for it. Sends of zero
  /// bytes are skipped, as are their recvs.
  Status send(int64_t peer, int64_t tag, const void *in,
              int64_t bytes) override;
  Status recv(int64_t peer, int64_t tag, void *out, int64_t bytes) override;
  Status completeSends() override;
  Status barrier() override;

private:
  /// "<operation> over <description>".
  std::string where(CollectiveKind kind) const {
    return std::string(getCollectiveName(kind)) + " over " + description;
  }
  /// "group rank 1 (world rank 3)".
  std::string describeMember(int64_t index) const;
  /// Runs `body`, which calls Gloo for operation `kind` (with member `peer`
  /// for send and recv), recording it in the rank's progress, and turns an
  /// exception into an error of `where`; refuses to run after an earlier
  /// failure.
  template <typename Body>
  Status run(CollectiveKind kind, int64_t peer, const std::string &where,
             Body &&body);

  /// The connected context; its timeout bounds every wait.
  std::shared_ptr<gloo::Context> context;
  /// The group's world ranks in group order.
  std::vector<int64_t> worldRanks;
  /// describeCommunicator's text.
  std::string description;
  /// The first failure's message; empty while the communicator works.
  std::string failure;
  /// reduce_scatter's receive buffer, kept between calls.
  std::vector<uint8_t> scratch;
  /// A posted send: the copy of its data, its transfer and its peer.
  struct PendingSend {
    std::vector<uint8_t> data;
    std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
    int64_t peer;
  };
  /// Sends not yet known to be received, oldest first.
  std::vector<PendingSend> pendingSends;
  /// Records the progress and explains timeouts.
  std::shared_ptr<Watchdog> watchdog;
  /// This communicator's index in the rank's progress.
  size_t index;
};

} // namespace titan::rt

#endif // TITAN_RUNTIME_COMM_GLOOCOMMUNICATOR_H
