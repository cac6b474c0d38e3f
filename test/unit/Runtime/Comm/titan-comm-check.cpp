//===- titan-comm-check.cpp - every collective, run by rank processes -----===//
//
//   titan-comm-check MESH [--timeout SECONDS] [--kill-rank R]
//
// A rank process of the communication tests: reads torchrun's environment
// (from titan-run, torchrun or any launcher), connects one communicator per
// non-empty set of the axes of MESH (sizes joined by 'x', e.g. 2x2; the
// axes are named a0, a1, ...) and checks every collective on each
// (CollectiveChecks.h). Prints "rank R/N: C communicators, K checks passed"
// on stdout and exits 0, or prints the first error on stderr and exits 1.
// --kill-rank R makes rank R kill itself (SIGKILL) once connected, so that
// the others see a peer die.
//
//===----------------------------------------------------------------------===//

#include "CollectiveChecks.h"
#include "comm/Connect.h"
#include "comm/MeshGroups.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace titan::rt;

namespace {

/// Prints the usage error `message` and returns the exit code 2.
int usage(const std::string &message) {
  std::fprintf(stderr,
               "titan-comm-check: error: %s\n"
               "usage: titan-comm-check MESH [--timeout SECONDS] "
               "[--kill-rank R]\n",
               message.c_str());
  return 2;
}

/// Parses "2x2" into a mesh with axes a0, a1, ...; false if malformed.
bool parseMesh(const std::string &text, MeshShape &mesh) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('x', start);
    std::string size = text.substr(start, end - start);
    char *last = nullptr;
    long value = std::strtol(size.c_str(), &last, 10);
    if (size.empty() || *last != '\0' || value < 1)
      return false;
    mesh.axisNames.push_back("a" + std::to_string(mesh.axisSizes.size()));
    mesh.axisSizes.push_back(value);
    if (end == std::string::npos)
      return true;
    start = end + 1;
  }
  return false;
}

} // namespace

int main(int argc, char **argv) {
  MeshShape mesh;
  double timeoutSeconds = 60;
  long killRank = -1;
  for (int index = 1; index < argc; ++index) {
    std::string argument = argv[index];
    if (argument == "--timeout" && index + 1 < argc)
      timeoutSeconds = std::atof(argv[++index]);
    else if (argument == "--kill-rank" && index + 1 < argc)
      killRank = std::atol(argv[++index]);
    else if (mesh.axisSizes.empty() && parseMesh(argument, mesh))
      continue;
    else
      return usage("unexpected argument '" + argument + "'");
  }
  if (mesh.axisSizes.empty())
    return usage("expected a mesh such as 2x2");

  LaunchEnvironment env;
  Status status = readLaunchEnvironment(env);
  if (!status.ok()) {
    std::fprintf(stderr, "titan-comm-check: error: %s\n",
                 status.getMessage().c_str());
    return 1;
  }
  std::string who =
      "rank " + std::to_string(env.rank) + "/" + std::to_string(env.worldSize);
  std::vector<std::vector<int>> axisSets;
  for (unsigned subset = 1; subset < (1u << mesh.axisSizes.size()); ++subset) {
    axisSets.emplace_back();
    for (size_t axis = 0; axis < mesh.axisSizes.size(); ++axis)
      if (subset & (1u << axis))
        axisSets.back().push_back(static_cast<int>(axis));
  }
  std::vector<std::unique_ptr<Communicator>> communicators;
  status = connectCommunicators(
      env, mesh, axisSets,
      std::chrono::milliseconds(static_cast<int64_t>(timeoutSeconds * 1000)),
      communicators);
  if (status.ok() && env.rank == killRank)
    std::raise(SIGKILL);
  int64_t checks = 0;
  for (size_t set = 0; status.ok() && set < axisSets.size(); ++set)
    status = test::checkCollectives(
        *communicators[set], getGroupRanks(mesh, axisSets[set], env.rank),
        env.rank, checks);
  if (!status.ok()) {
    std::fprintf(stderr, "%s: error: %s\n", who.c_str(),
                 status.getMessage().c_str());
    return 1;
  }
  std::printf("%s: %zu communicators, %lld checks passed\n", who.c_str(),
              communicators.size(), static_cast<long long>(checks));
  return 0;
}
