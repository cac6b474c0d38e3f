//===- NcclCommunicator.cpp - collectives over NCCL on a CUDA stream ------===//

#include "comm/nccl/NcclCommunicator.h"

#include "comm/CommChecks.h"
#include "comm/Watchdog.h"
#include "comm/nccl/NcclStatus.h"
#include "comm/nccl/NcclTypes.h"

namespace titan::rt {

namespace {

/// Ends the message of an operation that timed out.
constexpr const char *kTimeoutHint =
    " (TITAN_COMM_TIMEOUT sets how long an operation may take)";

/// Keeps in `first` the result of the first NCCL call of a group that
/// failed.
void keepFirstFailure(ncclResult_t &first, ncclResult_t result) {
  if ((first == ncclSuccess || first == ncclInProgress) &&
      result != ncclSuccess)
    first = result;
}

/// getNcclReduction, with errors naming `where`.
Status checkNcclReduction(const std::string &where, int32_t dtype,
                          int32_t reduce, NcclReduction &reduction) {
  Status status = getNcclReduction(dtype, reduce, reduction);
  if (!status.ok())
    return Status(status.getCode(), where + ": " + status.getMessage());
  return status;
}

/// `base` + `offset` bytes: a chunk of a device buffer.
const void *offsetBy(const void *base, int64_t offset) {
  return static_cast<const char *>(base) + offset;
}
void *offsetBy(void *base, int64_t offset) {
  return static_cast<char *>(base) + offset;
}

} // namespace

NcclCommunicator::NcclCommunicator(ncclComm_t comm, int device,
                                   cudaStream_t stream,
                                   std::vector<int64_t> worldRanks,
                                   int64_t rank, std::string description,
                                   std::chrono::milliseconds timeout,
                                   std::shared_ptr<Watchdog> watchdog,
                                   size_t index)
    : comm(comm), device(device), stream(stream),
      worldRanks(std::move(worldRanks)), rank(rank),
      description(std::move(description)), timeout(timeout),
      watchdog(std::move(watchdog)), index(index) {
  if (!comm)
    failure = "it has no NCCL communicator";
}

NcclCommunicator::~NcclCommunicator() {
  if (!comm && !done && !barrierElement && pendingSends.empty())
    return;
  cudaSetDevice(device);
  for (const PendingSend &pending : pendingSends)
    cudaFreeAsync(pending.copy, stream);
  if (comm)
    (void)closeNcclComm(comm, description, Clock::now() + timeout);
  if (barrierElement)
    cudaFree(barrierElement);
  if (done)
    cudaEventDestroy(done);
}

Status NcclCommunicator::unusable(const std::string &where) const {
  return Status::communication(
      where + ": the communicator is unusable after an earlier failure (" +
      failure + ")");
}

Status NcclCommunicator::fail(Status status) {
  failure = status.getMessage();
  if (comm) {
    ncclCommAbort(comm);
    comm = nullptr;
  }
  return status;
}

Status NcclCommunicator::settle(const std::string &where, ncclResult_t result) {
  if (result == ncclInProgress)
    result = waitWhileInProgress(comm, Clock::now() + timeout);
  if (result == ncclSuccess)
    return Status::success();
  if (result == ncclInProgress)
    return Status::communication(formatNcclTimeout(
        where, timeout, "NCCL was still enqueueing it", kTimeoutHint));
  return makeNcclError(where, result, comm);
}

template <typename Calls>
Status NcclCommunicator::group(const std::string &where, Calls &&calls) {
  TITANRT_RETURN_IF_ERROR(settle(where, ncclGroupStart()));
  ncclResult_t first = calls();
  // The group is closed even after a failed call.
  ncclResult_t ended = ncclGroupEnd();
  if (first != ncclSuccess && first != ncclInProgress)
    return settle(where, first);
  return settle(where, ended);
}

template <typename Body>
Status NcclCommunicator::run(CollectiveKind kind, int64_t peer,
                             const std::string &where, Body &&body) {
  if (!failure.empty())
    return unusable(where);
  Status status = checkCudaAt(where, "cudaSetDevice", cudaSetDevice(device));
  // An asynchronous error of an earlier operation (a peer that died) fails
  // this one before it enqueues anything.
  if (status.ok())
    status = settle(where, getNcclAsyncState(comm));
  if (!status.ok())
    return fail(status);
  uint64_t sequence = 0;
  if (watchdog)
    sequence = watchdog->getProgress().enter(index, kind);
  status = body();
  if (watchdog)
    watchdog->getProgress().leave(index);
  if (status.ok() && !done)
    status =
        checkCudaAt(where, "cudaEventCreateWithFlags",
                    cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  if (status.ok())
    status =
        checkCudaAt(where, "cudaEventRecord", cudaEventRecord(done, stream));
  if (!status.ok())
    return fail(status);
  lastKind = kind;
  lastSequence = sequence;
  lastPeer = peer;
  return status;
}

Status NcclCommunicator::issueSends(const std::string &where, int64_t peer,
                                    void *out, int64_t bytes) {
  if (pendingSends.empty() && peer < 0)
    return Status::success();
  Status status = group(where, [&] {
    ncclResult_t first = ncclSuccess;
    for (const PendingSend &pending : pendingSends)
      keepFirstFailure(first,
                       ncclSend(pending.copy,
                                static_cast<size_t>(pending.bytes), ncclUint8,
                                static_cast<int>(pending.peer), comm, stream));
    if (peer >= 0)
      keepFirstFailure(first,
                       ncclRecv(out, static_cast<size_t>(bytes), ncclUint8,
                                static_cast<int>(peer), comm, stream));
    return first;
  });
  // The copies are freed in stream order, once the sends read them.
  for (const PendingSend &pending : pendingSends) {
    Status freed = checkCudaAt(where, "cudaFreeAsync",
                               cudaFreeAsync(pending.copy, stream));
    if (status.ok())
      status = freed;
  }
  sendsInFlight = sendsInFlight || !pendingSends.empty();
  pendingSends.clear();
  return status;
}

Status NcclCommunicator::allGather(const void *in, void *out, int64_t bytes) {
  const std::string at = where(CollectiveKind::AllGather);
  TITANRT_RETURN_IF_ERROR(checkSize(at, "bytes", bytes));
  if (bytes == 0)
    return Status::success();
  return run(CollectiveKind::AllGather, -1, at, [&] {
    TITANRT_RETURN_IF_ERROR(issueSends(at));
    return settle(at, ncclAllGather(in, out, static_cast<size_t>(bytes),
                                    ncclUint8, comm, stream));
  });
}

Status NcclCommunicator::reduceScatter(titanrt_dtype dtype,
                                       titanrt_reduce reduce, const void *in,
                                       void *out, int64_t count) {
  const std::string at = where(CollectiveKind::ReduceScatter);
  NcclReduction reduction;
  TITANRT_RETURN_IF_ERROR(checkNcclReduction(at, dtype, reduce, reduction));
  TITANRT_RETURN_IF_ERROR(checkSize(at, "count", count));
  if (count == 0)
    return Status::success();
  return run(CollectiveKind::ReduceScatter, -1, at, [&] {
    TITANRT_RETURN_IF_ERROR(issueSends(at));
    return settle(at, ncclReduceScatter(in, out, static_cast<size_t>(count),
                                        reduction.dataType, reduction.op, comm,
                                        stream));
  });
}

Status NcclCommunicator::allReduce(titanrt_dtype dtype, titanrt_reduce reduce,
                                   const void *in, void *out, int64_t count) {
  const std::string at = where(CollectiveKind::AllReduce);
  NcclReduction reduction;
  TITANRT_RETURN_IF_ERROR(checkNcclReduction(at, dtype, reduce, reduction));
  TITANRT_RETURN_IF_ERROR(checkSize(at, "count", count));
  if (count == 0)
    return Status::success();
  return run(CollectiveKind::AllReduce, -1, at, [&] {
    TITANRT_RETURN_IF_ERROR(issueSends(at));
    return settle(at, ncclAllReduce(in, out, static_cast<size_t>(count),
                                    reduction.dataType, reduction.op, comm,
                                    stream));
  });
}

Status NcclCommunicator::allToAll(const void *in, void *out,
                                  int64_t bytesPerPeer) {
  const std::string at = where(CollectiveKind::AllToAll);
  TITANRT_RETURN_IF_ERROR(checkSize(at, "bytes per peer", bytesPerPeer));
  if (bytesPerPeer == 0)
    return Status::success();
  if (in == out)
    return Status::invalidArgument(
        at + ": the input and the output are the same buffer (NCCL's "
             "all_to_all needs two)");
  return run(CollectiveKind::AllToAll, -1, at, [&] {
    TITANRT_RETURN_IF_ERROR(issueSends(at));
    const auto chunk = static_cast<size_t>(bytesPerPeer);
    TITANRT_RETURN_IF_ERROR(
        checkCudaAt(at, "cudaMemcpyAsync",
                    cudaMemcpyAsync(offsetBy(out, rank * bytesPerPeer),
                                    offsetBy(in, rank * bytesPerPeer), chunk,
                                    cudaMemcpyDefault, stream)));
    return group(at, [&] {
      ncclResult_t first = ncclSuccess;
      for (int64_t peer = 0; peer < getSize(); ++peer) {
        if (peer == rank)
          continue;
        keepFirstFailure(first, ncclSend(offsetBy(in, peer * bytesPerPeer),
                                         chunk, ncclUint8,
                                         static_cast<int>(peer), comm, stream));
        keepFirstFailure(first, ncclRecv(offsetBy(out, peer * bytesPerPeer),
                                         chunk, ncclUint8,
                                         static_cast<int>(peer), comm, stream));
      }
      return first;
    });
  });
}

Status NcclCommunicator::broadcast(int64_t root, const void *in, void *out,
                                   int64_t bytes) {
  const std::string at = where(CollectiveKind::Broadcast);
  TITANRT_RETURN_IF_ERROR(checkRoot(at, root, getSize()));
  TITANRT_RETURN_IF_ERROR(checkSize(at, "bytes", bytes));
  if (bytes == 0)
    return Status::success();
  return run(CollectiveKind::Broadcast, -1, at, [&] {
    TITANRT_RETURN_IF_ERROR(issueSends(at));
    // Only the root's input is read.
    return settle(at,
                  ncclBroadcast(in, out, static_cast<size_t>(bytes), ncclUint8,
                                static_cast<int>(root), comm, stream));
  });
}

Status NcclCommunicator::send(int64_t peer, int64_t tag, const void *in,
                              int64_t bytes) {
  const std::string at = where(CollectiveKind::Send);
  TITANRT_RETURN_IF_ERROR(checkPeer(at, peer, tag, rank, getSize()));
  TITANRT_RETURN_IF_ERROR(checkSize(at, "bytes", bytes));
  if (bytes == 0)
    return Status::success();
  return run(CollectiveKind::Send, peer, at, [&] {
    PendingSend pending{peer, nullptr, bytes};
    const auto size = static_cast<size_t>(bytes);
    TITANRT_RETURN_IF_ERROR(checkCudaAt(
        at, "cudaMallocAsync", cudaMallocAsync(&pending.copy, size, stream)));
    cudaError_t copied =
        cudaMemcpyAsync(pending.copy, in, size, cudaMemcpyDefault, stream);
    if (copied != cudaSuccess) {
      cudaFreeAsync(pending.copy, stream);
      return checkCudaAt(at, "cudaMemcpyAsync", copied);
    }
    pendingSends.push_back(pending);
    return Status::success();
  });
}

Status NcclCommunicator::recv(int64_t peer, int64_t tag, void *out,
                              int64_t bytes) {
  const std::string at = where(CollectiveKind::Recv);
  TITANRT_RETURN_IF_ERROR(checkPeer(at, peer, tag, rank, getSize()));
  TITANRT_RETURN_IF_ERROR(checkSize(at, "bytes", bytes));
  if (bytes == 0)
    return Status::success();
  return run(CollectiveKind::Recv, peer, at,
             [&] { return issueSends(at, peer, out, bytes); });
}

Status NcclCommunicator::completeSends() {
  if (!pendingSends.empty()) {
    const std::string at = where(CollectiveKind::Send);
    TITANRT_RETURN_IF_ERROR(run(CollectiveKind::Send, pendingSends.back().peer,
                                at, [&] { return issueSends(at); }));
  }
  if (!sendsInFlight)
    return Status::success();
  return synchronize();
}

Status NcclCommunicator::barrier() {
  TITANRT_RETURN_IF_ERROR(completeSends());
  const std::string at = where(CollectiveKind::Barrier);
  TITANRT_RETURN_IF_ERROR(run(CollectiveKind::Barrier, -1, at, [&] {
    if (!barrierElement)
      TITANRT_RETURN_IF_ERROR(checkCudaAt(
          at, "cudaMalloc", cudaMalloc(&barrierElement, sizeof(int32_t))));
    return settle(at, ncclAllReduce(barrierElement, barrierElement, 1,
                                    ncclInt32, ncclSum, comm, stream));
  }));
  return synchronize();
}

Status NcclCommunicator::synchronize() {
  const std::string at = where(lastKind);
  if (!failure.empty())
    return unusable(at);
  if (!done)
    return Status::success();
  TITANRT_RETURN_IF_ERROR(
      checkCudaAt(at, "cudaSetDevice", cudaSetDevice(device)));
  const Clock::time_point deadline = Clock::now() + timeout;
  std::chrono::microseconds pause = kFirstPause;
  while (true) {
    cudaError_t queried = cudaEventQuery(done);
    if (queried == cudaSuccess) {
      sendsInFlight = false;
      return Status::success();
    }
    if (queried != cudaErrorNotReady)
      return fail(checkCudaAt(at, "cudaEventQuery", queried));
    ncclResult_t state = getNcclAsyncState(comm);
    if (state != ncclSuccess && state != ncclInProgress)
      return fail(makeNcclError(at, state, comm));
    if (Clock::now() >= deadline) {
      std::string explanation;
      if (watchdog)
        explanation = watchdog->explainTimeout(
            lastKind, index, lastSequence,
            lastPeer < 0 ? worldRanks
                         : std::vector<int64_t>{worldRanks[lastPeer]});
      return fail(Status::communication(
          formatNcclTimeout(at, timeout, "this rank aborted the communicator",
                            explanation + kTimeoutHint)));
    }
    pauseAndBackOff(pause);
  }
}

} // namespace titan::rt
