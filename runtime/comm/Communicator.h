//===- Communicator.h - collectives over one group of ranks -----*- C++ -*-===//
//
// The interface every communication backend implements (Gloo over TCP on
// the CPU, NCCL on CUDA): the collectives of titan's local programs on
// contiguous buffers, over one group of ranks (the ranks that differ from
// this one only on one set of mesh axes, ordered row-major over those axes).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_COMM_COMMUNICATOR_H
#define TITAN_RUNTIME_COMM_COMMUNICATOR_H

#include "core/Status.h"

#include <cstdint>

namespace titan::rt {

/// Collectives over one group of ranks. Buffers are host memory for the CPU
/// backend. Every call blocks until this rank's part is done; a peer that
/// died or a timeout is a TITANRT_ERROR_COMMUNICATION Status naming the
/// group and the operation.
class Communicator {
public:
  virtual ~Communicator() = default;

  /// This rank's index in the group.
  virtual int64_t getRank() const = 0;
  /// The number of ranks in the group.
  virtual int64_t getSize() const = 0;

  /// out = every member's `bytes` bytes of `in`, concatenated in group order.
  virtual Status allGather(const void *in, void *out, int64_t bytes) = 0;
  /// out (count elements) = chunk getRank() of the reduction of every
  /// member's `in` (getSize() * count elements).
  virtual Status reduceScatter(titanrt_dtype dtype, titanrt_reduce reduce,
                               const void *in, void *out, int64_t count) = 0;
  /// out = the reduction of every member's `in` (count elements); `in` may
  /// equal `out`.
  virtual Status allReduce(titanrt_dtype dtype, titanrt_reduce reduce,
                           const void *in, void *out, int64_t count) = 0;
  /// Chunk j (bytesPerPeer bytes) of `in` goes to member j; chunk j of `out`
  /// comes from member j.
  virtual Status allToAll(const void *in, void *out, int64_t bytesPerPeer) = 0;
  /// out = `in` of member `root`; `in` may equal `out`.
  virtual Status broadcast(int64_t root, const void *in, void *out,
                           int64_t bytes) = 0;
  /// Sends to member `peer`, matched by its recv with the same tag. May
  /// return before the peer received: `in` is copied first, and the
  /// transfer completes by the next completeSends().
  virtual Status send(int64_t peer, int64_t tag, const void *in,
                      int64_t bytes) = 0;
  /// Waits until every send so far was received (a failure is reported
  /// here). The trainer calls it after every step.
  virtual Status completeSends() { return Status::success(); }
  /// Receives from member `peer` what it sent with `tag`.
  virtual Status recv(int64_t peer, int64_t tag, void *out, int64_t bytes) = 0;
  /// Returns once every member called it.
  virtual Status barrier() = 0;
};

} // namespace titan::rt

#endif // TITAN_RUNTIME_COMM_COMMUNICATOR_H
