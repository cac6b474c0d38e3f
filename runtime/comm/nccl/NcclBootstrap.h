//===- NcclBootstrap.h - creating a rank's NCCL communicators ---*- C++ -*-===//
//
// The NCCL side of the rendezvous: rank 0 creates the world communicator's
// unique id and publishes it in titan's store (NcclUniqueId.h), every rank
// joins the world communicator, and each set of mesh axes the program
// communicates over becomes one ncclCommSplit of it (NcclGroups.h). The
// communicators are nonblocking, so every wait for the other ranks is
// bounded and what it created is aborted when a rank does not come.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_COMM_NCCL_NCCLBOOTSTRAP_H
#define TITAN_RUNTIME_COMM_NCCL_NCCLBOOTSTRAP_H

#include "comm/Connect.h"
#include "comm/nccl/NcclCommunicator.h"

#include <chrono>
#include <memory>
#include <vector>

namespace titan::rt {

class StoreClient;

/// Creates this rank's (env.rank of env.worldSize, which must equal the
/// mesh's size) NCCL communicators on CUDA device `device`, one per entry
/// of `axisSets` (indices of mesh axes), over the same groups as
/// connectCommunicators: rank 0 publishes the world communicator's unique
/// id in `store` (kNcclWorldIdKey; `store` is connected with the job's key
/// prefix; null for a world of one rank), every rank joins the world
/// communicator, splits it once per axis set, and releases it. Every operation
/// of the communicators is enqueued on `stream` and waits at most
/// env.collectiveTimeout; `watchdog` (may be null) records this rank's progress
/// on them. Fails, naming the step and aborting what it created, when the other
/// ranks do not join within `timeout`.
Status connectNcclCommunicators(
    StoreClient *store, const LaunchEnvironment &env, const MeshShape &mesh,
    const std::vector<std::vector<int>> &axisSets, int device,
    cudaStream_t stream, std::chrono::milliseconds timeout,
    const std::shared_ptr<Watchdog> &watchdog,
    std::vector<std::unique_ptr<NcclCommunicator>> &communicators);

} // namespace titan::rt

#endif // TITAN_RUNTIME_COMM_NCCL_NCCLBOOTSTRAP_H
