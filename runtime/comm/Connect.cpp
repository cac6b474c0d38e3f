//===- Connect.cpp - finding the other ranks and building communicators ---===//
//
// The rendezvous of one job: every rank reaches the store, connects one
// Gloo context per group it belongs to (the contexts exchange their
// addresses through the store, each group under its own key prefix), and
// waits until every rank is connected; then its watchdog publishes
// heartbeats to the store for the rest of the job.
//
//===----------------------------------------------------------------------===//

#include "comm/Connect.h"

#include "comm/CommChecks.h"
#include "comm/GlooCommunicator.h"
#include "comm/GlooStore.h"
#include "comm/MeshGroups.h"
#include "comm/SelfCommunicator.h"
#include "comm/StoreClient.h"
#include "comm/StoreServer.h"
#include "comm/Watchdog.h"

#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <csignal>

namespace titan::rt {

namespace {

/// The group of one communicator of this rank.
struct Group {
  /// World ranks in group order.
  std::vector<int64_t> ranks;
  /// describeCommunicator's text.
  std::string description;
};

/// What every key of the job starts with: a restarted job (a new restart
/// count) or another run on the same store never reads a stale key.
std::string getKeyPrefix(const LaunchEnvironment &env) {
  return "titan/" + (env.runId.empty() ? std::string("run") : env.runId) +
         "/attempt_" + std::to_string(env.restartCount) + "/";
}

/// "rank 3", "ranks 2, 3", "ranks 0, 1, ... and 90 more".
std::string describeRanks(const std::vector<int64_t> &ranks) {
  constexpr size_t kShown = 8;
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t index = 0; index < std::min(ranks.size(), kShown); ++index)
    text += (index ? ", " : "") + std::to_string(ranks[index]);
  if (ranks.size() > kShown)
    text += " and " + std::to_string(ranks.size() - kShown) + " more";
  return text;
}

/// Sets `phase`/<rank> and waits until every rank of the job has: the
/// ranks meet at the store. A timeout names the ranks that did not
/// `arrive` ("reach", "finish connecting").
Status meetAll(StoreClient &store, const std::string &phase,
               const LaunchEnvironment &env, std::chrono::milliseconds timeout,
               const std::string &arrive) {
  auto key = [&](int64_t rank) { return phase + "/" + std::to_string(rank); };
  TITANRT_RETURN_IF_ERROR(store.set(key(env.rank), {1}));
  std::vector<std::string> keys;
  for (int64_t rank = 0; rank < env.worldSize; ++rank)
    keys.push_back(key(rank));
  Status waited = store.wait(keys, timeout);
  if (waited.ok())
    return waited;
  std::vector<int64_t> missing;
  for (int64_t rank = 0; rank < env.worldSize; ++rank) {
    bool ready = false;
    if (!store.check({keys[rank]}, ready).ok()) {
      if (env.useAgentStore)
        return waited;
      return Status::communication(waited.getMessage() +
                                   " (rank 0 hosts the store: did it stop?)");
    }
    if (!ready)
      missing.push_back(rank);
  }
  if (missing.empty())
    return waited;
  return Status::communication(
      describeRanks(missing) + " of " + std::to_string(env.worldSize) +
      " did not " + arrive + " the rendezvous store at " + store.getAddress() +
      " within " + formatDuration(timeout) +
      " (are they running, with the same MASTER_ADDR, MASTER_PORT and "
      "TORCHELASTIC_RUN_ID?)");
}

/// Writing to a peer that died must fail, not end the process: Gloo writes
/// to its sockets without MSG_NOSIGNAL.
void ignoreBrokenPipes() {
  struct sigaction current = {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 &&
      current.sa_handler == SIG_DFL)
    std::signal(SIGPIPE, SIG_IGN);
}

/// Connects the Gloo context of every group from `firstIndex` on of more
/// than one rank, and a SelfCommunicator for the others.
Status connectGroups(StoreClient &store, const LaunchEnvironment &env,
                     const std::vector<Group> &groups, size_t firstIndex,
                     std::chrono::milliseconds timeout,
                     const std::shared_ptr<Watchdog> &watchdog,
                     std::vector<std::unique_ptr<Communicator>> &connected) {
  std::string address = env.commAddr;
  if (address.empty()) {
    Status found =
        findLocalAddressToward(env.masterAddr, env.masterPort, address);
    if (!found.ok())
      return Status::communication(
          "cannot find this host's address for its peers: " +
          found.getMessage() + " (set TITAN_COMM_ADDR to it)");
  }
  std::string connecting = "opening a Gloo TCP device on " + address;
  try {
    gloo::transport::tcp::attr attributes;
    attributes.hostname = address;
    std::shared_ptr<gloo::transport::Device> device =
        gloo::transport::tcp::CreateDevice(attributes);
    GlooStore glooStore(store);
    for (size_t index = firstIndex; index < groups.size(); ++index) {
      const Group &group = groups[index];
      if (group.ranks.size() == 1) {
        connected.push_back(
            std::make_unique<SelfCommunicator>(group.description));
        continue;
      }
      connecting = "connecting communicator " + std::to_string(index) +
                   " over " + group.description;
      auto groupRank =
          std::find(group.ranks.begin(), group.ranks.end(), env.rank) -
          group.ranks.begin();
      auto context = std::make_shared<gloo::rendezvous::Context>(
          static_cast<int>(groupRank), static_cast<int>(group.ranks.size()));
      context->setTimeout(timeout);
      // The group is named by its communicator and first member: each has
      // its own keys.
      gloo::rendezvous::PrefixStore groupStore(
          "comm" + std::to_string(index) + "/group" +
              std::to_string(group.ranks.front()),
          glooStore);
      context->connectFullMesh(groupStore, device);
      context->setTimeout(env.collectiveTimeout);
      connected.push_back(std::make_unique<GlooCommunicator>(
          std::move(context), group.ranks, group.description, watchdog, index));
    }
  } catch (const std::exception &error) {
    return Status::communication(connecting + ": " +
                                 stripSourceLocation(error.what()));
  }
  return Status::success();
}

/// Connects this rank's communicators; connectCommunicators adds the rank to
/// the error.
Status connect(const LaunchEnvironment &env, const MeshShape &mesh,
               const std::vector<std::vector<int>> &axisSets,
               std::chrono::milliseconds timeout,
               std::vector<std::unique_ptr<Communicator>> &communicators,
               std::shared_ptr<Watchdog> &watchdog,
               const ExternalCommunicators &external) {
  TITANRT_RETURN_IF_ERROR(checkMesh(mesh, env.worldSize, axisSets));
  if (external.count > axisSets.size() || (external.count && !external.connect))
    return Status::invalidArgument(
        "cannot leave " + std::to_string(external.count) + " of " +
        std::to_string(axisSets.size()) + " communicators to another library" +
        (external.connect ? "" : " without its connector"));
  std::vector<std::vector<int>> externalSets(axisSets.begin(),
                                             axisSets.begin() + external.count);
  std::vector<Group> groups;
  std::vector<std::string> axesNames;
  bool needsPeers = false;
  for (const std::vector<int> &axes : axisSets) {
    Group group;
    group.ranks = getGroupRanks(mesh, axes, env.rank);
    axesNames.push_back(describeAxes(mesh, axes));
    group.description = describeCommunicator(axesNames.back(), group.ranks);
    needsPeers = needsPeers || group.ranks.size() > 1;
    groups.push_back(std::move(group));
  }

  auto recorder = std::make_shared<Watchdog>(env, std::move(axesNames));
  std::vector<std::unique_ptr<Communicator>> connected;
  if (!needsPeers) {
    // Group sizes depend only on the axes: no rank needs a peer either.
    if (external.count)
      TITANRT_RETURN_IF_ERROR(external.connect(nullptr, env, mesh, externalSets,
                                               timeout, recorder, connected));
    for (size_t index = external.count; index < groups.size(); ++index)
      connected.push_back(
          std::make_unique<SelfCommunicator>(groups[index].description));
    communicators = std::move(connected);
    watchdog = std::move(recorder);
    return Status::success();
  }

  ignoreBrokenPipes();
  std::unique_ptr<StoreServer> server;
  if (!env.useAgentStore && env.rank == 0) {
    Status started = StoreServer::start(env.masterPort, server);
    if (!started.ok())
      return Status::communication(
          "cannot host the rendezvous store: " + started.getMessage() +
          " (set MASTER_PORT to a free port, or launch with titan-run or "
          "torchrun, whose agent hosts the store)");
  }
  std::unique_ptr<StoreClient> store;
  TITANRT_RETURN_IF_ERROR(StoreClient::connect(
      env.masterAddr, env.masterPort, getKeyPrefix(env), timeout, store));
  TITANRT_RETURN_IF_ERROR(meetAll(*store, "arrived", env, timeout, "reach"));
  if (external.count)
    TITANRT_RETURN_IF_ERROR(external.connect(
        store.get(), env, mesh, externalSets, timeout, recorder, connected));
  TITANRT_RETURN_IF_ERROR(connectGroups(*store, env, groups, external.count,
                                        timeout, recorder, connected));
  TITANRT_RETURN_IF_ERROR(
      meetAll(*store, "connected", env, timeout, "finish connecting at"));
  // Rank 0's store stays up with the watchdog, for the heartbeats.
  TITANRT_RETURN_IF_ERROR(
      recorder->start(getKeyPrefix(env), std::move(server)));
  communicators = std::move(connected);
  watchdog = std::move(recorder);
  return Status::success();
}

} // namespace

Status
connectCommunicators(const LaunchEnvironment &env, const MeshShape &mesh,
                     const std::vector<std::vector<int>> &axisSets,
                     std::chrono::milliseconds timeout,
                     std::vector<std::unique_ptr<Communicator>> &communicators,
                     std::shared_ptr<Watchdog> &watchdog,
                     const ExternalCommunicators &external) {
  Status status =
      connect(env, mesh, axisSets, timeout, communicators, watchdog, external);
  if (status.ok())
    return status;
  return Status(status.getCode(), "rank " + std::to_string(env.rank) + " of " +
                                      std::to_string(env.worldSize) + ": " +
                                      status.getMessage());
}

Status connectCommunicators(
    const LaunchEnvironment &env, const MeshShape &mesh,
    const std::vector<std::vector<int>> &axisSets,
    std::chrono::milliseconds timeout,
    std::vector<std::unique_ptr<Communicator>> &communicators) {
  std::shared_ptr<Watchdog> watchdog;
  return connectCommunicators(env, mesh, axisSets, timeout, communicators,
                              watchdog);
}

} // namespace titan::rt
