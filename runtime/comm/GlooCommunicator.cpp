//===- GlooCommunicator.cpp - collectives over Gloo's TCP transport -------===//

#include "comm/GlooCommunicator.h"

#include "comm/CommChecks.h"
#include "comm/Watchdog.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

namespace titan::rt {

namespace {

/// Slot prefixes of titan's own transfers, above Gloo's (0x01 to 0x08).
constexpr uint8_t kReduceScatterSlotPrefix = 0x40;
constexpr uint8_t kSendRecvSlotPrefix = 0x41;

/// Waits up to `timeout` until the pending transfer of `buffer` to or from
/// `member` is done; a failure is rethrown naming the member.
void awaitTransfer(gloo::transport::UnboundBuffer &buffer, bool receiving,
                   const std::string &member,
                   std::chrono::milliseconds timeout) {
  try {
    if (receiving)
      buffer.waitRecv(timeout);
    else
      buffer.waitSend(timeout);
  } catch (const std::exception &error) {
    throw gloo::IoException((receiving ? "receiving from " : "sending to ") +
                            member + ": " + stripSourceLocation(error.what()));
  }
}

/// An element of `Size` bytes: Gloo's typed options only use its size.
template <size_t Size> struct Element { uint8_t bytes[Size]; };

/// Sets all_reduce's buffers for elements of `Size` bytes; without an
/// input Gloo reduces `out` in place.
template <size_t Size>
void setBuffers(gloo::AllreduceOptions &options, const void *in, void *out,
                size_t count) {
  using ElementType = Element<Size>;
  if (in != out)
    options.setInput(static_cast<ElementType *>(const_cast<void *>(in)), count);
  options.setOutput(static_cast<ElementType *>(out), count);
}

/// Gloo reads send buffers only; its API takes them non-const.
uint8_t *sendPointer(const void *in) {
  return static_cast<uint8_t *>(const_cast<void *>(in));
}

} // namespace

std::string stripSourceLocation(const std::string &message) {
  size_t end = message.find("] ");
  if (!message.empty() && message[0] == '[' && end != std::string::npos)
    return message.substr(end + 2);
  return message;
}

GlooCommunicator::GlooCommunicator(std::shared_ptr<gloo::Context> context,
                                   std::vector<int64_t> worldRanks,
                                   std::string description,
                                   std::shared_ptr<Watchdog> watchdog,
                                   size_t index)
    : context(std::move(context)), worldRanks(std::move(worldRanks)),
      description(std::move(description)), watchdog(std::move(watchdog)),
      index(index) {}

std::string GlooCommunicator::describeMember(int64_t index) const {
  return "group rank " + std::to_string(index) + " (world rank " +
         std::to_string(worldRanks[index]) + ")";
}

template <typename Body>
Status GlooCommunicator::run(CollectiveKind kind, int64_t peer,
                             const std::string &where, Body &&body) {
  if (!failure.empty())
    return Status::communication(where +
                                 ": the communicator is unusable after an "
                                 "earlier failure (" +
                                 failure + ")");
  RankProgress &progress = watchdog->getProgress();
  uint64_t sequence = progress.enter(index, kind);
  Clock::time_point start = Clock::now();
  try {
    body();
    progress.leave(index);
    return Status::success();
  } catch (const std::exception &error) {
    progress.leave(index);
    failure = stripSourceLocation(error.what());
    std::string message = where + ": " + failure;
    // Each wait gives up after the timeout: an operation that failed only
    // after that long was waiting for a member that did not come.
    if (Clock::now() - start >= context->getTimeout())
      message += watchdog->explainTimeout(
          kind, index, sequence,
          peer < 0 ? worldRanks : std::vector<int64_t>{worldRanks[peer]});
    return Status::communication(message);
  }
}

Status GlooCommunicator::allGather(const void *in, void *out, int64_t bytes) {
  const std::string at = where(CollectiveKind::AllGather);
  TITANRT_RETURN_IF_ERROR(checkSize(at, "bytes", bytes));
  if (bytes == 0)
    return Status::success();
  return run(CollectiveKind::AllGather, -1, at, [&] {
    gloo::AllgatherOptions options(context);
    options.setInput(sendPointer(in), static_cast<size_t>(bytes));
    options.setOutput(static_cast<uint8_t *>(out),
                      static_cast<size_t>(bytes * context->size));
    gloo::allgather(options);
  });
}

Status GlooCommunicator::reduceScatter(titanrt_dtype dtype,
                                       titanrt_reduce reduce, const void *in,
                                       void *out, int64_t count) {
  const std::string at = where(CollectiveKind::ReduceScatter);
  Reduction reduction;
  TITANRT_RETURN_IF_ERROR(checkReduction(at, dtype, reduce, reduction));
  TITANRT_RETURN_IF_ERROR(checkSize(at, "count", count));
  if (count == 0)
    return Status::success();
  return run(CollectiveKind::ReduceScatter, -1, at, [&] {
    const int size = context->size;
    const int rank = context->rank;
    const int next = (rank + 1) % size;
    const int previous = (rank + size - 1) % size;
    const size_t chunkBytes =
        static_cast<size_t>(count) * reduction.elementSize;
    const auto *input = static_cast<const uint8_t *>(in);
    scratch.resize(chunkBytes);
    auto inBuffer =
        context->createUnboundBuffer(sendPointer(in), chunkBytes * size);
    auto outBuffer = context->createUnboundBuffer(out, chunkBytes);
    auto received = context->createUnboundBuffer(scratch.data(), chunkBytes);
    const uint64_t slot = gloo::Slot::build(kReduceScatterSlotPrefix, 0);
    const std::string nextMember = describeMember(next);
    const std::string previousMember = describeMember(previous);
    // Step s sends the partial reduction of chunk (rank - s - 1) mod n (at
    // step 0 this rank's own input chunk, later `out`) and receives that of
    // chunk (rank - s - 2) mod n, which it reduces with its own input chunk
    // into `out`. After n - 1 steps `out` holds chunk `rank` reduced over
    // every member.
    for (int step = 0; step + 1 < size; ++step) {
      const size_t sendChunk = (rank - step - 1 + size) % size;
      const size_t receiveChunk = (rank - step - 2 + 2 * size) % size;
      received->recv(previous, slot);
      gloo::transport::UnboundBuffer &sending =
          step == 0 ? *inBuffer : *outBuffer;
      sending.send(next, slot, step == 0 ? sendChunk * chunkBytes : 0,
                   chunkBytes);
      awaitTransfer(*received, /*receiving=*/true, previousMember,
                    context->getTimeout());
      awaitTransfer(sending, /*receiving=*/false, nextMember,
                    context->getTimeout());
      reduction.combine(out, input + receiveChunk * chunkBytes, scratch.data(),
                        static_cast<size_t>(count));
    }
    if (reduction.divide)
      reduction.divide(out, static_cast<size_t>(count), size);
  });
}

Status GlooCommunicator::allReduce(titanrt_dtype dtype, titanrt_reduce reduce,
                                   const void *in, void *out, int64_t count) {
  const std::string at = where(CollectiveKind::AllReduce);
  Reduction reduction;
  TITANRT_RETURN_IF_ERROR(checkReduction(at, dtype, reduce, reduction));
  TITANRT_RETURN_IF_ERROR(checkSize(at, "count", count));
  if (count == 0)
    return Status::success();
  return run(CollectiveKind::AllReduce, -1, at, [&] {
    gloo::AllreduceOptions options(context);
    const auto elements = static_cast<size_t>(count);
    switch (reduction.elementSize) {
    case 2:
      setBuffers<2>(options, in, out, elements);
      break;
    case 4:
      setBuffers<4>(options, in, out, elements);
      break;
    default:
      setBuffers<8>(options, in, out, elements);
      break;
    }
    options.setReduceFunction(reduction.combine);
    gloo::allreduce(options);
    if (reduction.divide)
      reduction.divide(out, elements, context->size);
  });
}

Status GlooCommunicator::allToAll(const void *in, void *out,
                                  int64_t bytesPerPeer) {
  const std::string at = where(CollectiveKind::AllToAll);
  TITANRT_RETURN_IF_ERROR(checkSize(at, "bytes per peer", bytesPerPeer));
  if (bytesPerPeer == 0)
    return Status::success();
  return run(CollectiveKind::AllToAll, -1, at, [&] {
    const auto bytes = static_cast<size_t>(bytesPerPeer * context->size);
    gloo::AlltoallOptions options(context);
    options.setInput(sendPointer(in), bytes);
    options.setOutput(static_cast<uint8_t *>(out), bytes);
    gloo::alltoall(options);
  });
}

Status GlooCommunicator::broadcast(int64_t root, const void *in, void *out,
                                   int64_t bytes) {
  const std::string at = where(CollectiveKind::Broadcast);
  TITANRT_RETURN_IF_ERROR(checkRoot(at, root, context->size));
  TITANRT_RETURN_IF_ERROR(checkSize(at, "bytes", bytes));
  if (bytes == 0)
    return Status::success();
  return run(CollectiveKind::Broadcast, -1, at, [&] {
    gloo::BroadcastOptions options(context);
    options.setRoot(static_cast<int>(root));
    // Only the root has an input; without one it broadcasts `out`.
    if (root == context->rank && in != out)
      options.setInput(sendPointer(in), static_cast<size_t>(bytes));
    options.setOutput(static_cast<uint8_t *>(out), static_cast<size_t>(bytes));
    gloo::broadcast(options);
  });
}

Status GlooCommunicator::send(int64_t peer, int64_t tag, const void *in,
                              int64_t bytes) {
  const std::string at = where(CollectiveKind::Send);
  TITANRT_RETURN_IF_ERROR(
      checkPeer(at, peer, tag, context->rank, context->size));
  TITANRT_RETURN_IF_ERROR(checkSize(at, "bytes", bytes));
  if (bytes == 0)
    return Status::success();
  return run(CollectiveKind::Send, peer, at, [&] {
    PendingSend pending;
    const uint8_t *data = static_cast<const uint8_t *>(in);
    pending.data.assign(data, data + bytes);
    pending.buffer = context->createUnboundBuffer(pending.data.data(),
                                                  static_cast<size_t>(bytes));
    pending.buffer->send(
        static_cast<int>(peer),
        gloo::Slot::build(kSendRecvSlotPrefix, static_cast<uint32_t>(tag)));
    pending.peer = peer;
    pendingSends.push_back(std::move(pending));
  });
}

Status GlooCommunicator::completeSends() {
  while (!pendingSends.empty()) {
    PendingSend &pending = pendingSends.front();
    Status status = run(
        CollectiveKind::Send, pending.peer, where(CollectiveKind::Send), [&] {
          awaitTransfer(*pending.buffer, /*receiving=*/false,
                        describeMember(pending.peer), context->getTimeout());
        });
    if (!status.ok())
      return status;
    pendingSends.erase(pendingSends.begin());
  }
  return Status::success();
}

Status GlooCommunicator::recv(int64_t peer, int64_t tag, void *out,
                              int64_t bytes) {
  const std::string at = where(CollectiveKind::Recv);
  TITANRT_RETURN_IF_ERROR(
      checkPeer(at, peer, tag, context->rank, context->size));
  TITANRT_RETURN_IF_ERROR(checkSize(at, "bytes", bytes));
  if (bytes == 0)
    return Status::success();
  return run(CollectiveKind::Recv, peer, at, [&] {
    auto buffer = context->createUnboundBuffer(out, static_cast<size_t>(bytes));
    buffer->recv(
        static_cast<int>(peer),
        gloo::Slot::build(kSendRecvSlotPrefix, static_cast<uint32_t>(tag)));
    awaitTransfer(*buffer, /*receiving=*/true, describeMember(peer),
                  context->getTimeout());
  });
}

Status GlooCommunicator::barrier() {
  TITANRT_RETURN_IF_ERROR(completeSends());
  return run(CollectiveKind::Barrier, -1, where(CollectiveKind::Barrier), [&] {
    gloo::BarrierOptions options(context);
    gloo::barrier(options);
  });
}

} // namespace titan::rt
