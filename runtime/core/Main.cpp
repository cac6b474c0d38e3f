//===- Main.cpp - the life of a rank process ------------------------------===//
//
// titanrt_main (titanrt.h): what every compiled executable runs.
//
//===----------------------------------------------------------------------===//

#include "comm/Connect.h"
#include "core/Context.h"
#include "core/ProgramDescription.h"
#include "core/Trainer.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

using namespace titan::rt;

namespace {

/// The command line of a rank process.
constexpr const char *kUsage = R"(usage: %s [options]

A titan-compiled training program: one process per rank (start it with
titan-run, torchrun or any launcher that sets RANK, WORLD_SIZE, MASTER_ADDR
and MASTER_PORT; without them it runs as the only rank).

  --data DIR           tokens.npy and labels.npy: the global batch of each
                       step ([batch, seq], or [steps, batch, seq])
  --steps N            training steps to run (default: the config's)
  --lr X               learning rate (default: the config's)
  --load DIR           start from this DCP checkpoint (default: a seeded
                       initialization that does not depend on the layout)
  --seed N             seed of that initialization (default: the config's)
  --save DIR           save the state as a DCP checkpoint at the end
  --checkpoint-format  torch2 (default) or torch1.13 module paths in
                       .metadata
  --buffers DIR        the model's buffers as .npy (default: the buffers/
                       folder next to bin/)
  --checkpoint-plan F  which box of each tensor every rank holds (default:
                       the checkpoint-plan.txt next to bin/)
  --threads N          threads per rank (default: the cores / local ranks)
  --metrics FILE       rank 0 appends one JSON line per step
  --dump-results DIR   every rank writes its results of the last step as
                       DIR/rank<R>/<name>.npy
  --timeout SECONDS    how long to wait for the other ranks (default 300)
  --help               this text
)";

/// Parses the command line into `options`; returns an error message, or ""
/// (with `help` set for --help).
std::string parseCommandLine(int argc, char **argv, RunOptions &options,
                             int &timeoutSeconds, bool &help) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    if (flag == "--help" || flag == "-h") {
      help = true;
      return "";
    }
    size_t equals = flag.find('=');
    if (equals != std::string::npos) {
      value = flag.substr(equals + 1);
      flag = flag.substr(0, equals);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return "option '" + flag + "' needs a value";
    }
    try {
      if (flag == "--data")
        options.dataFolder = value;
      else if (flag == "--steps")
        options.steps = std::stoll(value);
      else if (flag == "--lr")
        options.learningRate = std::stod(value);
      else if (flag == "--load")
        options.loadCheckpoint = value;
      else if (flag == "--seed")
        options.seed = std::stoull(value);
      else if (flag == "--save")
        options.saveCheckpoint = value;
      else if (flag == "--checkpoint-format") {
        if (value != "torch2" && value != "torch1.13")
          return "--checkpoint-format must be torch2 or torch1.13, not '" +
                 value + "'";
        options.checkpointFlavor = value;
      } else if (flag == "--buffers")
        options.buffersFolder = value;
      else if (flag == "--checkpoint-plan")
        options.checkpointPlanFile = value;
      else if (flag == "--threads")
        options.threads = std::stoi(value);
      else if (flag == "--metrics")
        options.metricsFile = value;
      else if (flag == "--dump-results")
        options.dumpResults = value;
      else if (flag == "--timeout")
        timeoutSeconds = std::stoi(value);
      else
        return "unknown option '" + flag + "' (see --help)";
    } catch (...) {
      return "option '" + flag + "': '" + value + "' is not a number";
    }
  }
  if (options.steps < 0)
    return "--steps must be at least 0";
  return "";
}

/// `name` in the titan-compile output folder this executable is in (OUT/
/// for OUT/bin/train).
std::string besideExecutable(const char *argv0, llvm::StringRef name) {
  std::string executable = llvm::sys::fs::getMainExecutable(
      argv0, reinterpret_cast<void *>(&titanrt_main));
  llvm::SmallString<256> path(
      llvm::sys::path::parent_path(llvm::sys::path::parent_path(executable)));
  llvm::sys::path::append(path, name);
  return std::string(path);
}

/// Runs the program; returns the first error.
Status run(int argc, char **argv, const char *text, titanrt_step_function step,
           int64_t &rank) {
  ProgramDescription program;
  TITANRT_RETURN_IF_ERROR(parseProgramDescription(text, program));
  RunOptions options;
  options.steps = program.defaultSteps;
  options.learningRate = program.defaultLearningRate;
  options.lrSchedule = program.lrSchedule;
  options.seed = program.defaultSeed;
  options.buffersFolder = besideExecutable(argv[0], "buffers");
  options.checkpointPlanFile = besideExecutable(argv[0], "checkpoint-plan.txt");
  int timeoutSeconds = 300;
  bool help = false;
  std::string message =
      parseCommandLine(argc, argv, options, timeoutSeconds, help);
  if (!message.empty())
    return Status::invalidArgument(message);
  if (help) {
    std::printf(kUsage, argv[0]);
    return Status::success();
  }

  LaunchEnvironment environment;
  TITANRT_RETURN_IF_ERROR(readLaunchEnvironment(environment));
  rank = environment.rank;
  if (environment.worldSize != program.getWorldSize())
    return Status::invalidArgument("the program was compiled for " +
                                   std::to_string(program.getWorldSize()) +
                                   " ranks, but WORLD_SIZE is " +
                                   std::to_string(environment.worldSize) +
                                   " (start it with --nproc-per-node " +
                                   std::to_string(program.getWorldSize()) +
                                   ", or compile for this world size)");

  titanrt_context context;
  // The program's communicators, then one over the whole world for the
  // checkpoint's barrier.
  std::vector<std::vector<int>> axisSets = program.communicators;
  std::vector<int> allAxes;
  for (size_t axis = 0; axis < program.mesh.axisSizes.size(); ++axis)
    allAxes.push_back(axis);
  axisSets.push_back(allAxes);
  TITANRT_RETURN_IF_ERROR(connectCommunicators(
      environment, program.mesh, axisSets, std::chrono::seconds(timeoutSeconds),
      context.communicators));
  std::unique_ptr<Communicator> world = std::move(context.communicators.back());
  context.communicators.pop_back();

  int threads = options.threads;
  if (threads <= 0)
    threads =
        std::max<int>(1, std::thread::hardware_concurrency() /
                             std::max<int64_t>(1, environment.localWorldSize));
  context.threads = std::make_unique<ThreadPool>(threads);

  Trainer trainer(program, step, context, rank);
  TITANRT_RETURN_IF_ERROR(trainer.prepare(options));
  TITANRT_RETURN_IF_ERROR(trainer.train(options));
  if (!options.dumpResults.empty())
    TITANRT_RETURN_IF_ERROR(trainer.dumpResults(options.dumpResults));
  if (!options.saveCheckpoint.empty())
    TITANRT_RETURN_IF_ERROR(trainer.save(options, *world));
  if (rank == 0)
    trainer.reportMemory();
  return Status::success();
}

} // namespace

extern "C" int32_t titanrt_main(int32_t argc, char **argv,
                                const char *description,
                                titanrt_step_function step) {
  // Launchers read ranks' output through pipes: a line as soon as it is
  // written.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int64_t rank = 0;
  Status status = run(argc, argv, description, step, rank);
  if (status.ok())
    return 0;
  std::fprintf(stderr, "titan: rank %lld: error: %s\n",
               static_cast<long long>(rank), status.getMessage().c_str());
  return 1;
}
