//===- Connect.h - finding the other ranks and building communicators -----===//
//
// A rank process learns who it is from torchrun's environment (titan-run,
// torchrun, or any launcher that sets the same variables), meets the other
// ranks through a TCP key-value store that speaks c10d's TCPStore protocol
// (so torchrun's own store works), and connects one communicator per set of
// mesh axes its program communicates over.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_COMM_CONNECT_H
#define TITAN_RUNTIME_COMM_CONNECT_H

#include "comm/Communicator.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace titan::rt {

/// torchrun's environment of one rank process.
struct LaunchEnvironment {
  /// RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE.
  int64_t rank = 0;
  int64_t worldSize = 1;
  int64_t localRank = 0;
  int64_t localWorldSize = 1;
  /// MASTER_ADDR, MASTER_PORT: where the store listens.
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
  /// TORCHELASTIC_USE_AGENT_STORE: the launcher hosts the store; otherwise
  /// rank 0 starts it.
  bool useAgentStore = false;
  /// TORCHELASTIC_RESTART_COUNT and TORCHELASTIC_RUN_ID: part of the key
  /// prefix, so that a restarted job never reads a stale key.
  int64_t restartCount = 0;
  std::string runId;
  /// TITAN_COMM_TIMEOUT (seconds): how long a collective waits for its
  /// peers before it fails.
  std::chrono::milliseconds collectiveTimeout = std::chrono::seconds(300);
  /// TITAN_COMM_ADDR: the address this rank's communicators listen on,
  /// which every peer must reach. Empty: 127.0.0.1 when MASTER_ADDR is a
  /// loopback address, otherwise this host's address on the route to
  /// MASTER_ADDR.
  std::string commAddr;
};

/// Reads the launch environment. Without RANK and WORLD_SIZE the process is
/// rank 0 of 1 (run directly, nothing to connect to); a variable that is set
/// but malformed or inconsistent (RANK >= WORLD_SIZE) is an error naming it.
/// An empty variable counts as unset. MASTER_ADDR and MASTER_PORT are
/// required when WORLD_SIZE > 1.
Status readLaunchEnvironment(LaunchEnvironment &env);

/// The device mesh of a program: axis names and sizes in DTensor order;
/// ranks are laid out row-major over the axes.
struct MeshShape {
  std::vector<std::string> axisNames;
  std::vector<int64_t> axisSizes;
};

class StoreClient;
class Watchdog;

/// Connects the communicators of some axis sets with a library other than
/// Gloo (the CUDA backend's NCCL) within connectCommunicators, once every
/// rank reached the store: `store` is the job's (its keys carry the job's
/// prefix; null when the world has one rank and nothing is met), `axisSets`
/// the sets to connect, in order, over `mesh`; communicator i of them is
/// communicator i of `watchdog`'s progress. Waits at most `timeout` for the
/// other ranks. Appends one communicator per set to `communicators`.
using CommunicatorConnector = std::function<Status(
    StoreClient *store, const LaunchEnvironment &env, const MeshShape &mesh,
    const std::vector<std::vector<int>> &axisSets,
    std::chrono::milliseconds timeout,
    const std::shared_ptr<Watchdog> &watchdog,
    std::vector<std::unique_ptr<Communicator>> &communicators)>;

/// The axis sets connectCommunicators leaves to another library: the first
/// `count`, which `connect` connects (before the Gloo ones, on every rank).
struct ExternalCommunicators {
  size_t count = 0;
  CommunicatorConnector connect;
};

/// Connects this rank (env.rank of env.worldSize, which must equal the
/// mesh's size) to the others and returns, for each entry of `axisSets`
/// (indices of mesh axes), its communicator over those axes: the ranks
/// whose coordinates differ from its own only on them, ordered row-major
/// over them. A group of one rank needs no peer. Fails, naming the rank or
/// address it waited for, when a peer does not show up within `timeout`.
///
/// Rank 0 hosts the store at MASTER_PORT unless env.useAgentStore; its keys
/// start with a prefix made of the run id and restart count. Every rank
/// returns only once all ranks are connected. The communicators wait
/// env.collectiveTimeout for their peers. `watchdog` records this rank's
/// progress and, when it has peers, publishes it as heartbeats to the
/// store, which it keeps up (hosting it on rank 0) until its finish(); the
/// communicators hold it too. Ignores SIGPIPE when it has its default
/// action (as Python does), so that writing to a peer that died is an
/// error, not the end of the process. The first `external.count` axis sets
/// are connected by `external.connect` instead of Gloo.
Status
connectCommunicators(const LaunchEnvironment &env, const MeshShape &mesh,
                     const std::vector<std::vector<int>> &axisSets,
                     std::chrono::milliseconds timeout,
                     std::vector<std::unique_ptr<Communicator>> &communicators,
                     std::shared_ptr<Watchdog> &watchdog,
                     const ExternalCommunicators &external = {});

/// connectCommunicators for a caller that leaves the watchdog to the
/// communicators: it finishes when the last of them is destroyed.
Status
connectCommunicators(const LaunchEnvironment &env, const MeshShape &mesh,
                     const std::vector<std::vector<int>> &axisSets,
                     std::chrono::milliseconds timeout,
                     std::vector<std::unique_ptr<Communicator>> &communicators);

} // namespace titan::rt

#endif // TITAN_RUNTIME_COMM_CONNECT_H
