//===- NcclBootstrap.cpp - creating a rank's NCCL communicators -----------===//

#include "comm/nccl/NcclBootstrap.h"

#include "comm/CommChecks.h"
#include "comm/MeshGroups.h"
#include "comm/nccl/NcclGroups.h"
#include "comm/nccl/NcclStatus.h"
#include "comm/nccl/NcclUniqueId.h"

namespace titan::rt {

namespace {

/// The configuration of every communicator titan creates: nonblocking, so
/// that creating one can be waited for with a deadline and aborted.
ncclConfig_t getNonblockingConfig() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

/// Waits until the communicator `comm` that the call returning `result`
/// creates (or splits from `parent`, when not null) is ready, until
/// `deadline`; `what` names the step in errors.
Status awaitCreated(const std::string &what, ncclResult_t result,
                    ncclComm_t parent, ncclComm_t comm,
                    Clock::time_point deadline,
                    std::chrono::milliseconds timeout) {
  if (result == ncclSuccess || result == ncclInProgress) {
    result = parent ? waitWhileInProgress(parent, deadline) : ncclSuccess;
    if (result == ncclSuccess && comm)
      result = waitWhileInProgress(comm, deadline);
  }
  if (result == ncclSuccess)
    return Status::success();
  if (result == ncclInProgress)
    return Status::communication(formatNcclTimeout(
        what, timeout, "this rank aborted it",
        " (are all ranks running, each with a GPU of its own?)"));
  return makeNcclError(what, result, comm ? comm : parent);
}

/// The world communicator's unique id: created by rank 0, which publishes
/// it in `store` (none for a world of one rank), and read by the others.
Status shareWorldId(StoreClient *store, const LaunchEnvironment &env,
                    ncclUniqueId &id) {
  int version = 0;
  ncclResult_t result = ncclGetVersion(&version);
  if (result != ncclSuccess)
    return makeNcclError("asking NCCL for its version", result, nullptr);
  if (!store && env.worldSize > 1)
    return Status::invalidArgument(
        "a world of " + std::to_string(env.worldSize) +
        " ranks shares the NCCL unique id through a store: none was given");
  if (env.rank != 0)
    return fetchUniqueId(*store, kNcclWorldIdKey, version, id);
  result = ncclGetUniqueId(&id);
  if (result != ncclSuccess)
    return makeNcclError("creating the NCCL world communicator's unique id",
                         result, nullptr);
  return store ? publishUniqueId(*store, kNcclWorldIdKey, id, version)
               : Status::success();
}

/// Checks that NCCL placed this rank where the split asked.
Status checkSplit(const std::string &what, ncclComm_t comm,
                  const NcclSplit &split) {
  int count = 0;
  int userRank = 0;
  ncclResult_t result = ncclCommCount(comm, &count);
  if (result == ncclSuccess)
    result = ncclCommUserRank(comm, &userRank);
  if (result != ncclSuccess)
    return makeNcclError(what, result, comm);
  if (count != static_cast<int>(split.ranks.size()) || userRank != split.key)
    return Status::internal(
        what + ": NCCL made this rank " + std::to_string(userRank) + " of " +
        std::to_string(count) + ", not " + std::to_string(split.key) + " of " +
        std::to_string(split.ranks.size()));
  return Status::success();
}

/// A communicator split from the world's, before it is wrapped.
struct SplitComm {
  ncclComm_t comm;
  NcclSplit split;
  /// describeCommunicator's text.
  std::string description;
};

/// Joins the world communicator into `world` and splits it into `splits`
/// (raw: the caller aborts them after a failure).
Status createComms(StoreClient *store, const LaunchEnvironment &env,
                   const MeshShape &mesh,
                   const std::vector<std::vector<int>> &axisSets,
                   std::chrono::milliseconds timeout, ncclComm_t &world,
                   std::vector<SplitComm> &splits) {
  ncclUniqueId id;
  TITANRT_RETURN_IF_ERROR(shareWorldId(store, env, id));
  const Clock::time_point deadline = Clock::now() + timeout;
  ncclConfig_t config = getNonblockingConfig();
  ncclResult_t result =
      ncclCommInitRankConfig(&world, static_cast<int>(env.worldSize), id,
                             static_cast<int>(env.rank), &config);
  TITANRT_RETURN_IF_ERROR(
      awaitCreated("joining the NCCL world communicator of " +
                       std::to_string(env.worldSize) + " ranks",
                   result, nullptr, world, deadline, timeout));
  for (size_t index = 0; index < axisSets.size(); ++index) {
    SplitComm created{nullptr, getNcclSplit(mesh, axisSets[index], env.rank),
                      ""};
    created.description = describeCommunicator(
        describeAxes(mesh, axisSets[index]), created.split.ranks);
    const std::string what = "splitting NCCL communicator " +
                             std::to_string(index) + " over " +
                             created.description;
    config = getNonblockingConfig();
    result = ncclCommSplit(world, created.split.color, created.split.key,
                           &created.comm, &config);
    ncclComm_t comm = created.comm;
    if (comm)
      splits.push_back(created);
    TITANRT_RETURN_IF_ERROR(
        awaitCreated(what, result, world, comm, deadline, timeout));
    TITANRT_RETURN_IF_ERROR(checkSplit(what, comm, created.split));
  }
  return Status::success();
}

} // namespace

Status connectNcclCommunicators(
    StoreClient *store, const LaunchEnvironment &env, const MeshShape &mesh,
    const std::vector<std::vector<int>> &axisSets, int device,
    cudaStream_t stream, std::chrono::milliseconds timeout,
    const std::shared_ptr<Watchdog> &watchdog,
    std::vector<std::unique_ptr<NcclCommunicator>> &communicators) {
  const std::string rankPrefix = "rank " + std::to_string(env.rank) + " of " +
                                 std::to_string(env.worldSize) + ": ";
  Status status = checkMesh(mesh, env.worldSize, axisSets);
  if (status.ok())
    status = checkCudaAt("selecting CUDA device " + std::to_string(device),
                         "cudaSetDevice", cudaSetDevice(device));
  ncclComm_t world = nullptr;
  std::vector<SplitComm> splits;
  if (status.ok())
    status = createComms(store, env, mesh, axisSets, timeout, world, splits);
  if (!status.ok()) {
    for (const SplitComm &split : splits)
      ncclCommAbort(split.comm);
    if (world)
      ncclCommAbort(world);
    return Status(status.getCode(), rankPrefix + status.getMessage());
  }
  std::vector<std::unique_ptr<NcclCommunicator>> created;
  for (size_t index = 0; index < splits.size(); ++index) {
    SplitComm &split = splits[index];
    created.push_back(std::make_unique<NcclCommunicator>(
        split.comm, device, stream, std::move(split.split.ranks),
        split.split.key, std::move(split.description), env.collectiveTimeout,
        watchdog, index));
  }
  // The splits do not share the world communicator's resources: it goes.
  status = closeNcclComm(world, "releasing the NCCL world communicator",
                         Clock::now() + timeout);
  if (!status.ok())
    return Status(status.getCode(), rankPrefix + status.getMessage());
  communicators = std::move(created);
  return Status::success();
}

} // namespace titan::rt
