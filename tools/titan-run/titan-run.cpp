//===- titan-run.cpp - start the ranks of a job ---------------------------===//
//
//   titan-run TARGET --nproc-per-node N [--nnodes M] [--node-rank R]
//             [--master-addr A] [--master-port P] [--run-id ID] [-- ARGS...]
//
// Starts this node's N ranks of a job of N x M ranks, as torchrun does.
// TARGET is a directory titan-compile wrote (its manifest.json says which
// program each rank runs) or an executable or command run for every rank
// (as `torchrun --no-python`); ARGS are passed to every rank. Each rank
// gets torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, GROUP_RANK, ROLE_*, MASTER_ADDR, MASTER_PORT,
// TORCHELASTIC_*, OMP_NUM_THREADS=1 unless set). Node rank 0 hosts the
// rendezvous store, a c10d TCPStore, at MASTER_PORT (0: a free port) as
// torchrun's agent does (TORCHELASTIC_USE_AGENT_STORE=True).
//
// Every line a rank writes goes to titan-run's stdout or stderr prefixed
// with "[rank R] ". When a rank fails, titan-run stops the others and
// names it; docs/runtime-comm.md has the details.
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"
#include "RankSupervisor.h"
#include "comm/StoreServer.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <csignal>
#include <unistd.h>

extern char **environ;

using namespace titan::run;
using llvm::Expected;
namespace cl = llvm::cl;

static cl::OptionCategory category("titan-run options");

static cl::list<std::string>
    positionals(cl::Positional, cl::OneOrMore,
                cl::desc("<titan-compile output directory or executable> "
                         "[-- <arguments of every rank>...]"),
                cl::cat(category));
static cl::opt<int> nprocPerNode("nproc-per-node", cl::Required,
                                 cl::desc("Ranks to start on this node"),
                                 cl::cat(category));
static cl::opt<int> nnodes("nnodes", cl::init(1),
                           cl::desc("Nodes of the job, one titan-run each "
                                    "(default 1)"),
                           cl::cat(category));
static cl::opt<int> nodeRank("node-rank", cl::init(0),
                             cl::desc("This node's index (default 0); node 0 "
                                      "hosts the rendezvous store"),
                             cl::cat(category));
static cl::opt<std::string>
    masterAddr("master-addr", cl::init("127.0.0.1"),
               cl::desc("Address of node 0, where the rendezvous store is "
                        "(default 127.0.0.1)"),
               cl::cat(category));
static cl::opt<int>
    masterPort("master-port", cl::init(0),
               cl::desc("Port of the rendezvous store (default 0: a free "
                        "port, with --nnodes 1 only)"),
               cl::cat(category));
static cl::opt<std::string>
    runId("run-id",
          cl::desc("TORCHELASTIC_RUN_ID of the ranks (default: a new id)"),
          cl::cat(category));

/// How long stopped ranks get between SIGTERM and SIGKILL.
static constexpr std::chrono::seconds kGracePeriod(5);

/// Prints `message` as titan-run's error; returns the exit code 1.
static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "titan-run") << message << "\n";
  return 1;
}

/// The GPUs this node offers: CUDA_VISIBLE_DEVICES' entries when it is
/// set, else the GPUs `nvidia-smi -L` lists (none without nvidia-smi).
static int64_t countNodeGpus() {
  if (const char *visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
    llvm::SmallVector<llvm::StringRef> entries;
    llvm::StringRef(visible).split(entries, ',', -1, /*KeepEmpty=*/false);
    return entries.size();
  }
  llvm::ErrorOr<std::string> smi = llvm::sys::findProgramByName("nvidia-smi");
  llvm::SmallString<128> listing;
  if (!smi ||
      llvm::sys::fs::createTemporaryFile("titan-run-gpus", "txt", listing))
    return 0;
  llvm::FileRemover remover(listing);
  std::optional<llvm::StringRef> redirects[] = {
      llvm::StringRef(""), llvm::StringRef(listing), llvm::StringRef("")};
  if (llvm::sys::ExecuteAndWait(*smi, {*smi, "-L"}, std::nullopt, redirects) !=
      0)
    return 0;
  auto text = llvm::MemoryBuffer::getFile(listing);
  if (!text)
    return 0;
  llvm::SmallVector<llvm::StringRef> lines;
  (*text)->getBuffer().split(lines, '\n');
  return llvm::count_if(
      lines, [](llvm::StringRef line) { return line.starts_with("GPU "); });
}

/// The executable of every rank of a job of `worldSize` ranks.
static Expected<std::vector<std::string>>
resolvePrograms(const std::string &target, int64_t worldSize) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  if (llvm::sys::fs::is_directory(target)) {
    llvm::SmallString<256> manifestPath(target);
    llvm::sys::path::append(manifestPath, "manifest.json");
    if (!llvm::sys::fs::exists(manifestPath))
      return error("'" + target +
                   "' is a directory without manifest.json: expected a "
                   "directory titan-compile wrote, or an executable");
    Expected<Manifest> manifest = readManifest(target);
    if (!manifest)
      return manifest.takeError();
    if (manifest->worldSize != worldSize)
      return error("--nproc-per-node " + llvm::Twine(nprocPerNode) +
                   " x --nnodes " + llvm::Twine(nnodes) + " make " +
                   llvm::Twine(worldSize) + " ranks, but '" + manifestPath +
                   "' is for world_size " + llvm::Twine(manifest->worldSize));
    // A CUDA job needs a GPU per rank of this node.
    if (manifest->backend == "cuda") {
      int64_t gpus = countNodeGpus();
      if (gpus < nprocPerNode)
        return error(
            "'" + target +
            "' was compiled for the CUDA backend (titan-compile "
            "--backend=cuda): each rank needs a GPU of its own, but this "
            "node has " +
            llvm::Twine(gpus) +
            " (CUDA_VISIBLE_DEVICES, else nvidia-smi -L) for "
            "--nproc-per-node " +
            llvm::Twine(nprocPerNode) +
            ": start at most that many ranks per node, on a node with GPUs");
    }
    return manifest->rankPrograms;
  }
  std::string program = target;
  if (target.find('/') == std::string::npos) {
    llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName(target);
    if (!found)
      return error("'" + target +
                   "' is neither a file nor a command on PATH: expected a "
                   "directory titan-compile wrote, or an executable");
    program = *found;
  } else if (!llvm::sys::fs::exists(target)) {
    return error("'" + target + "' does not exist");
  } else if (!llvm::sys::fs::can_execute(target)) {
    return error("'" + target + "' is not executable");
  }
  return std::vector<std::string>(worldSize, program);
}

/// The environment of rank `rank`: titan-run's own, with torchrun's
/// variables set.
static std::vector<std::string> makeEnvironment(int64_t rank, int64_t localRank,
                                                int64_t worldSize, int port,
                                                const std::string &id) {
  std::vector<std::pair<std::string, std::string>> variables = {
      {"RANK", std::to_string(rank)},
      {"WORLD_SIZE", std::to_string(worldSize)},
      {"LOCAL_RANK", std::to_string(localRank)},
      {"LOCAL_WORLD_SIZE", std::to_string(nprocPerNode)},
      {"GROUP_RANK", std::to_string(nodeRank)},
      {"GROUP_WORLD_SIZE", std::to_string(nnodes)},
      {"ROLE_RANK", std::to_string(rank)},
      {"ROLE_WORLD_SIZE", std::to_string(worldSize)},
      {"ROLE_NAME", "default"},
      {"MASTER_ADDR", masterAddr},
      {"MASTER_PORT", std::to_string(port)},
      {"TORCHELASTIC_USE_AGENT_STORE", "True"},
      {"TORCHELASTIC_RESTART_COUNT", "0"},
      {"TORCHELASTIC_MAX_RESTARTS", "0"},
      {"TORCHELASTIC_RUN_ID", id},
  };
  if (!std::getenv("OMP_NUM_THREADS"))
    variables.emplace_back("OMP_NUM_THREADS", "1");
  // The ranks write to pipes; titan-run's terminal still shows their
  // progress line (OutputRelay redraws it in place).
  if (!std::getenv("TITAN_PROGRESS") && ::isatty(STDOUT_FILENO))
    variables.emplace_back("TITAN_PROGRESS", "1");
  llvm::StringSet<> names;
  std::vector<std::string> environment;
  for (const auto &[name, value] : variables) {
    names.insert(name);
    environment.push_back(name + "=" + value);
  }
  for (char **entry = environ; *entry; ++entry) {
    llvm::StringRef text(*entry);
    if (!names.contains(text.split('=').first))
      environment.push_back(text.str());
  }
  return environment;
}

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "titan-run: starts the ranks of a job with torchrun's environment\n");
  // Before any thread starts (the store's), so that they inherit the mask.
  blockSupervisedSignals();
  std::signal(SIGPIPE, SIG_IGN);

  if (nprocPerNode < 1)
    return fail("--nproc-per-node is " + llvm::Twine(nprocPerNode) +
                ": start at least one rank");
  if (nnodes < 1)
    return fail("--nnodes is " + llvm::Twine(nnodes) + ": expected 1 or more");
  if (nodeRank < 0 || nodeRank >= nnodes)
    return fail("--node-rank " + llvm::Twine(nodeRank) +
                " is not a node of --nnodes " + llvm::Twine(nnodes) +
                " (expected 0 to " + llvm::Twine(nnodes - 1) + ")");
  if (masterPort < 0 || masterPort > 65535)
    return fail("--master-port " + llvm::Twine(masterPort) +
                " is not a port (0 to 65535)");
  if (masterPort == 0 && nnodes > 1)
    return fail("--master-port 0 (a free port) needs --nnodes 1: the other "
                "nodes must know the port; choose one");

  const int64_t worldSize = int64_t(nprocPerNode) * nnodes;
  Expected<std::vector<std::string>> programs =
      resolvePrograms(positionals.front(), worldSize);
  if (!programs)
    return fail(llvm::toString(programs.takeError()));

  // Node 0 hosts the store, as torchrun's agent does.
  std::unique_ptr<titan::rt::StoreServer> store;
  int port = masterPort;
  if (nodeRank == 0) {
    titan::rt::Status started = titan::rt::StoreServer::start(port, store);
    if (!started.ok())
      return fail("cannot host the rendezvous store: " + started.getMessage() +
                  " (choose another --master-port, or 0 for a free one)");
    port = store->getPort();
  }

  const std::string id =
      runId.empty()
          ? "titan-run-" + std::to_string(::getpid()) + "-" +
                std::to_string(
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count())
          : runId.getValue();
  std::vector<RankCommand> commands;
  for (int64_t localRank = 0; localRank < nprocPerNode; ++localRank) {
    RankCommand command;
    command.rank = int64_t(nodeRank) * nprocPerNode + localRank;
    command.program = (*programs)[command.rank];
    command.arguments.push_back(command.program);
    command.arguments.insert(command.arguments.end(),
                             std::next(positionals.begin()), positionals.end());
    command.environment =
        makeEnvironment(command.rank, localRank, worldSize, port, id);
    commands.push_back(std::move(command));
  }
  return superviseRanks(commands, kGracePeriod);
}
