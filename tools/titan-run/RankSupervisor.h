//===- RankSupervisor.h - starting and watching rank processes --*- C++ -*-===//
//
// titan-run's process management: starts one process per local rank, each
// in its own process group, relays their output (OutputRelay), and stops
// all of them when one fails or titan-run is told to stop.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TOOLS_TITAN_RUN_RANKSUPERVISOR_H
#define TITAN_TOOLS_TITAN_RUN_RANKSUPERVISOR_H

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace titan::run {

/// One rank process to start.
struct RankCommand {
  /// The global rank.
  int64_t rank = 0;
  /// The executable's path.
  std::string program;
  /// argv, argv[0] included.
  std::vector<std::string> arguments;
  /// The whole environment, as NAME=value.
  std::vector<std::string> environment;
};

/// Blocks SIGCHLD, SIGINT, SIGTERM and SIGHUP in the calling thread, which
/// every thread started later inherits, so that only superviseRanks
/// receives them. Call it first in main.
void blockSupervisedSignals();

/// Starts every rank of `commands` (stdin from /dev/null), relays their
/// output with "[rank R] " before every line, and waits for all of them.
/// When a rank exits non-zero or dies by a signal, stops the others
/// (SIGTERM to their process groups, SIGKILL after `gracePeriod`) and
/// prints one line naming the rank, its pid, its exit status or signal and
/// its last line on stderr. SIGINT, SIGTERM and SIGHUP sent to titan-run
/// are forwarded to every rank (a second one kills them). Returns
/// titan-run's exit code: 0 when every rank exited 0, 1 after a failure,
/// 128 + the signal when stopped by one.
int superviseRanks(const std::vector<RankCommand> &commands,
                   std::chrono::milliseconds gracePeriod);

} // namespace titan::run

#endif // TITAN_TOOLS_TITAN_RUN_RANKSUPERVISOR_H
