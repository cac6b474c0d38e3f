//===- Main.cpp - the life of a rank process ------------------------------===//
//
// titanrt_main (titanrt.h): what every compiled executable runs.
//
//===----------------------------------------------------------------------===//

#include "comm/Connect.h"
#include "comm/Watchdog.h"
#include "core/Context.h"
#include "core/JobConfig.h"
#include "core/ProgramDescription.h"
#include "core/RankBackend.h"
#include "core/Trainer.h"

#include "titan/Config/CommandLine.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Parallel.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

using namespace titan::rt;

namespace {

/// The command line of a rank process.
constexpr const char *kUsage = R"(usage: %s [options] [--section.key VALUE ...]

A titan-compiled training program: one process per rank (start it with
titan-run, torchrun or any launcher that sets RANK, WORLD_SIZE, MASTER_ADDR
and MASTER_PORT; without them it runs as the only rank). It runs the job the
config it was compiled with says (config.toml beside its bin/ folder): the
data, the steps, the learning-rate schedule, checkpoints and metrics.

  --job.config_file F  run by this config instead (torchtitan's flag; or
                       --config F); keys compiled into the program must not
                       differ
  --section.key VALUE  override a config key, as torchtitan's command line
                       does (--training.steps 100, --checkpoint.enable,
                       --checkpoint.no-enable; or --set section.key=VALUE)
  --data DIR           train on tokens.npy and labels.npy instead of the
                       dataset: the global batch of each step ([batch,
                       seq], or [steps, batch, seq])
  --steps N            run N steps from the loaded state (default: until
                       the config's training.steps are done)
  --lr X               learning rate (default: the config's)
  --load DIR           start from this DCP checkpoint (default: the job's
                       newest checkpoint, its initial_load_path, or a seeded
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
  --metrics FILE       rank 0 appends one JSON line per step (besides
                       DUMP_FOLDER/metrics.jsonl)
  --dump-results DIR   every rank writes its results of the last step as
                       DIR/rank<R>/<name>.npy
  --timeout SECONDS    how long to wait for the other ranks: to connect, and
                       in each collective unless TITAN_COMM_TIMEOUT is set
                       (default 300)
  --help               this text

Exit status: 0 when the job is done, 1 on an error, 3 when the loss is not
finite, 4 when communication failed (a peer died or a collective timed
out), 128 + the signal when SIGINT or SIGTERM stopped it (after a step
every rank finished).
)";

/// The exit status of a run whose loss was not finite.
constexpr int kNonFiniteExitCode = 3;
/// The exit status of a run whose communication failed: mostly the
/// consequence of another rank's failure, which launchers name instead.
constexpr int kCommunicationExitCode = 4;

/// The command line: config overrides in torchtitan's syntax, and the
/// executable's own flags (applied over the config).
struct CommandLine {
  std::string configFile;
  std::vector<std::string> overrides;
  std::vector<std::pair<std::string, std::string>> flags;
  int timeoutSeconds = 300;
  bool help = false;
};

/// Splits the command line into `line` (the config arguments by
/// parseConfigCommandLine, in torchtitan's syntax or titan's); returns an
/// error message, or "".
std::string parseCommandLine(int argc, char **argv, CommandLine &line) {
  for (int i = 1; i < argc; ++i)
    if (llvm::StringRef(argv[i]) == "--help" ||
        llvm::StringRef(argv[i]) == "-h") {
      line.help = true;
      return "";
    }
  llvm::Expected<mlir::titan::ConfigCommandLine> config =
      mlir::titan::parseConfigCommandLine(
          llvm::ArrayRef<const char *>(const_cast<const char **>(argv), argc));
  if (!config)
    return llvm::toString(config.takeError());
  line.configFile = config->configFile;
  line.overrides = config->overrides;
  const std::vector<std::string> &rest = config->remaining;
  for (size_t i = 1; i < rest.size(); ++i) {
    std::string flag = rest[i], value;
    size_t equals = flag.find('=');
    if (equals != std::string::npos) {
      value = flag.substr(equals + 1);
      flag = flag.substr(0, equals);
    } else if (i + 1 < rest.size()) {
      value = rest[++i];
    } else {
      return "option '" + flag + "' needs a value";
    }
    line.flags.emplace_back(flag, value);
  }
  return "";
}

/// Applies the executable's own flags of `line` to `options`; returns an
/// error message, or "".
std::string applyFlags(CommandLine &line, RunOptions &options) {
  for (const auto &[flag, value] : line.flags) {
    try {
      if (flag == "--data")
        options.dataFolder = value;
      else if (flag == "--steps")
        options.runSteps = std::stoll(value);
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
        line.timeoutSeconds = std::stoi(value);
      else
        return "unknown option '" + flag + "' (see --help)";
    } catch (...) {
      return "option '" + flag + "': '" + value + "' is not a number";
    }
  }
  if (options.runSteps && *options.runSteps < 0)
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

/// Reads the metrics titan-compile recorded in OUT/manifest.json (model
/// FLOPs per token, the device's peak), if any.
void readManifestMetrics(const std::string &path, RunOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return;
  llvm::Expected<llvm::json::Value> manifest =
      llvm::json::parse((*buffer)->getBuffer());
  if (!manifest) {
    llvm::consumeError(manifest.takeError());
    return;
  }
  const llvm::json::Object *object = manifest->getAsObject();
  const llvm::json::Object *metrics =
      object ? object->getObject("metrics") : nullptr;
  if (!metrics)
    return;
  options.flopsPerToken =
      metrics->getNumber("model_flops_per_token").value_or(0);
  options.peakFlopsPerSecond =
      metrics->getNumber("peak_flops_per_second").value_or(0);
  options.deviceHardwareThreadsPerRank =
      metrics->getNumber("device_hardware_threads_per_rank").value_or(0);
}

/// Runs the program; returns the first error. `exitCode` says how a run
/// that stopped early ended; `watchdog` is the rank's once it connected,
/// for the caller to finish.
Status run(int argc, char **argv, const char *text, titanrt_step_function step,
           const char *validationText, titanrt_step_function validationStep,
           int64_t &rank, int &exitCode, std::shared_ptr<Watchdog> &watchdog) {
  ProgramDescription program;
  TITANRT_RETURN_IF_ERROR(parseProgramDescription(text, program));
  // The validation program linked beside the step ([validation] enable).
  ProgramDescription validationProgram;
  if (validationText && validationStep)
    if (Status parsed =
            parseProgramDescription(validationText, validationProgram);
        !parsed.ok())
      return Status(parsed.getCode(), "the validation program's description: " +
                                          parsed.getMessage());
  RunOptions options;
  options.steps = program.defaultSteps;
  options.learningRate = program.defaultLearningRate;
  options.lrSchedule = program.lrSchedule;
  options.seed = program.defaultSeed;
  options.buffersFolder = besideExecutable(argv[0], "buffers");
  options.checkpointPlanFile = besideExecutable(argv[0], "checkpoint-plan.txt");
  readManifestMetrics(besideExecutable(argv[0], "manifest.json"), options);
  // The config first, then the flags that override it.
  CommandLine line;
  std::string message = parseCommandLine(argc, argv, line);
  if (!message.empty())
    return Status::invalidArgument(message);
  if (line.help) {
    std::printf(kUsage, argv[0]);
    return Status::success();
  }
  mlir::titan::TrainConfig config;
  bool hasConfig = false;
  TITANRT_RETURN_IF_ERROR(
      loadJobConfig(besideExecutable(argv[0], "config.toml"), line.configFile,
                    line.overrides, config, hasConfig));
  if (hasConfig)
    applyJobConfig(config, options);
  message = applyFlags(line, options);
  if (!message.empty())
    return Status::invalidArgument(message);
  LaunchEnvironment environment;
  TITANRT_RETURN_IF_ERROR(readLaunchEnvironment(environment));
  if (!std::getenv("TITAN_COMM_TIMEOUT"))
    environment.collectiveTimeout = std::chrono::seconds(line.timeoutSeconds);
  rank = environment.rank;
  if (environment.worldSize != program.getWorldSize())
    return Status::invalidArgument("the program was compiled for " +
                                   std::to_string(program.getWorldSize()) +
                                   " ranks, but WORLD_SIZE is " +
                                   std::to_string(environment.worldSize) +
                                   " (start it with --nproc-per-node " +
                                   std::to_string(program.getWorldSize()) +
                                   ", or compile for this world size)");
  if (program.pipelineRank &&
      program.getPipelineCoordinate(rank) != *program.pipelineRank)
    return Status::invalidArgument(
        "this is the program of pipeline rank " +
        std::to_string(*program.pipelineRank) + ", but rank " +
        std::to_string(rank) + " is on pipeline rank " +
        std::to_string(program.getPipelineCoordinate(rank)) +
        ": start each rank with its program (titan-run OUT does; with "
        "torchrun or another launcher start OUT/bin/train, which picks it)");

  // The compute backend and step memory of the program's backend, before
  // connecting: a missing GPU or a bad TITAN_STEP_MEMORY (a test aid,
  // docs/runtime.md "The step's memory") fails at once.
  RankBackendOptions backendOptions;
  backendOptions.localRank = environment.localRank;
  backendOptions.threads = options.threads;
  if (backendOptions.threads <= 0)
    backendOptions.threads =
        std::max<int>(1, std::thread::hardware_concurrency() /
                             std::max<int64_t>(1, environment.localWorldSize));
  // The rank's threads also run its own parallel work (the parameters'
  // initialization) on LLVM's executor.
  llvm::parallel::strategy = llvm::hardware_concurrency(backendOptions.threads);
  // A CPU device's peak is that of the hardware threads a rank had when it
  // was measured; this rank's compute is that of its own threads, as many
  // as the machine's hardware threads shared by its ranks allow.
  if (program.backend == "cpu" && options.deviceHardwareThreadsPerRank > 0)
    options.peakFlopsPerSecond *=
        getHardwareThreadsOfRank(backendOptions.threads,
                                 environment.localWorldSize) /
        options.deviceHardwareThreadsPerRank;
  if (const char *stepMemory = std::getenv("TITAN_STEP_MEMORY"))
    backendOptions.stepMemory = stepMemory;
  if (const char *attention = std::getenv("TITAN_CUDA_ATTENTION"))
    backendOptions.cudaAttention = attention;
  RankBackend backend;
  TITANRT_RETURN_IF_ERROR(createRankBackend(program, backendOptions, backend));

  titanrt_context context;
  context.compute = std::move(backend.compute);
  // The program's communicators, then two over the whole world: the
  // training loop's (agreeing to stop, checkpoint barriers) and the
  // background saver's.
  std::vector<std::vector<int>> axisSets = program.communicators;
  std::vector<int> allAxes;
  for (size_t axis = 0; axis < program.mesh.axisSizes.size(); ++axis)
    allAxes.push_back(axis);
  axisSets.push_back(allAxes);
  axisSets.push_back(allAxes);
  // The backend may connect the program's own (NCCL on CUDA); the control
  // and saver communicators work on host memory, with Gloo.
  ExternalCommunicators external;
  if (backend.connectCommunicators)
    external = {program.communicators.size(), backend.connectCommunicators};
  if (backend.collectiveQueues)
    context.async.setQueueFactory(backend.collectiveQueues,
                                  /*queueEveryCall=*/true);
  TITANRT_RETURN_IF_ERROR(
      connectCommunicators(environment, program.mesh, axisSets,
                           std::chrono::seconds(line.timeoutSeconds),
                           context.communicators, watchdog, external));
  std::unique_ptr<Communicator> saver = std::move(context.communicators.back());
  context.communicators.pop_back();
  std::unique_ptr<Communicator> control =
      std::move(context.communicators.back());
  context.communicators.pop_back();

  installTrainingSignalHandlers();
  std::optional<Validator> validator;
  if (validationText && validationStep)
    validator.emplace(validationProgram, validationStep, rank);
  Trainer trainer(program, step, context, rank, *control, *saver,
                  watchdog->getProgress(), std::move(backend.memory),
                  validator ? &*validator : nullptr);
  TITANRT_RETURN_IF_ERROR(trainer.prepare(options));
  if (trainer.isComplete(options) && rank == 0)
    std::printf("the job's %lld steps are done\n",
                static_cast<long long>(options.steps));
  StopReason stopped;
  TITANRT_RETURN_IF_ERROR(trainer.train(options, stopped));
  if (stopped == StopReason::NonFinite) {
    exitCode = kNonFiniteExitCode;
    return Status::success();
  }
  if (stopped == StopReason::Interrupted) {
    exitCode = 128 + getStopSignal();
    if (!exitCode || exitCode == 128)
      exitCode = 128 + SIGTERM;
    return Status::success();
  }
  if (!options.dumpResults.empty())
    TITANRT_RETURN_IF_ERROR(trainer.dumpResults(options.dumpResults));
  if (!options.saveCheckpoint.empty())
    TITANRT_RETURN_IF_ERROR(trainer.save(options, options.saveCheckpoint));
  if (rank == 0)
    trainer.reportMemory();
  return Status::success();
}

} // namespace

extern "C" int32_t titanrt_main(int32_t argc, char **argv,
                                const char *description,
                                titanrt_step_function step,
                                const char *validationDescription,
                                titanrt_step_function validationStep) {
  // Launchers read ranks' output through pipes: a line as soon as it is
  // written.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // A rank that crashes prints where (then dies of its signal, as before).
  llvm::sys::PrintStackTraceOnErrorSignal(argc > 0 ? argv[0] : "train");
  int64_t rank = 0;
  int exitCode = 0;
  std::shared_ptr<Watchdog> watchdog;
  Status status = run(argc, argv, description, step, validationDescription,
                      validationStep, rank, exitCode, watchdog);
  if (!status.ok())
    std::fprintf(stderr, "titan: rank %lld: error: %s\n",
                 static_cast<long long>(rank), status.getMessage().c_str());
  // After the error is out: rank 0 may wait a little for the others before
  // it stops hosting the store.
  if (watchdog)
    watchdog->finish(!status.ok());
  if (status.ok())
    return exitCode;
  return status.getCode() == TITANRT_ERROR_COMMUNICATION
             ? kCommunicationExitCode
             : 1;
}
