//===- SelfCommunicator.h - the collectives of a group of one ---*- C++ -*-===//
//
// A group of one rank (a mesh axis of size 1, or a job of one rank) needs
// no peer: every collective is a copy, and send/recv have no one to talk to.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_COMM_SELFCOMMUNICATOR_H
#define TITAN_RUNTIME_COMM_SELFCOMMUNICATOR_H

#include "comm/Communicator.h"

#include <string>

namespace titan::rt {

/// The communicator of a group holding only this rank.
class SelfCommunicator final : public Communicator {
public:
  /// `description` names the communicator in errors (describeCommunicator).
  explicit SelfCommunicator(std::string description)
      : description(std::move(description)) {}

  int64_t getRank() const override { return 0; }
  int64_t getSize() const override { return 1; }
  Status allGather(const void *in, void *out, int64_t bytes) override;
  Status reduceScatter(titanrt_dtype dtype, titanrt_reduce reduce,
                       const void *in, void *out, int64_t count) override;
  Status allReduce(titanrt_dtype dtype, titanrt_reduce reduce, const void *in,
                   void *out, int64_t count) override;
  Status allToAll(const void *in, void *out, int64_t bytesPerPeer) override;
  Status broadcast(int64_t root, const void *in, void *out,
                   int64_t bytes) override;
  /// Always an error: a group of one has no peer.
  Status send(int64_t peer, int64_t tag, const void *in,
              int64_t bytes) override;
  /// Always an error: a group of one has no peer.
  Status recv(int64_t peer, int64_t tag, void *out, int64_t bytes) override;
  Status barrier() override { return Status::success(); }

private:
  /// "<operation> over <description>".
  std::string where(const char *operation) const {
    return std::string(operation) + " over " + description;
  }

  /// describeCommunicator's text.
  std::string description;
};

} // namespace titan::rt

#endif // TITAN_RUNTIME_COMM_SELFCOMMUNICATOR_H
