//===- titan-compile.cpp - titan's compiler driver ------------------------===//
//
// titan-compile MODEL.pt --config CFG.toml [--set k=v] -o OUT/
// titan-compile MODEL.pt --job.config_file CFG.toml [--section.key VALUE]
//     -o OUT/   (torchtitan's command line, docs/config.md)
//
// Imports a TorchScript model into the titan dialect, builds its training
// step, partitions it for the ranks of the config's parallelism and
// compiles the per-rank program into OUT/bin/train (with OUT/manifest.json,
// OUT/checkpoint-plan.txt and OUT/buffers/). --emit stops at an earlier
// stage and prints the IR instead.
//
//===----------------------------------------------------------------------===//

#include "FitRecompute.h"

#include "titan/Checkpoint/Layout.h"
#include "titan/Checkpoint/Safetensors.h"
#include "titan/Codegen/Executable.h"
#include "titan/Codegen/ProgramDescription.h"
#include "titan/Codegen/ValidationProgram.h"
#include "titan/Config/CommandLine.h"
#include "titan/Config/DeviceFile.h"
#include "titan/Config/PipelineSplit.h"
#include "titan/Dialect/ElementTypes.h"
#include "titan/Dialect/PipelineMesh.h"
#include "titan/Dialect/PipelineTransfers.h"
#include "titan/Dialect/Provenance.h"
#include "titan/Import/TorchScriptImporter.h"
#include "titan/InitAll.h"
#include "titan/Pipeline.h"
#include "titan/Report/OverlapTimeline.h"
#include "titan/Report/PipelineReport.h"
#include "titan/Report/PlanReport.h"
#include "titan/Support/ForkServer.h"
#include "titan/Support/Npy.h"
#include "titan/Tools/ParseInput.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
using namespace mlir::titan;
namespace cl = llvm::cl;

/// The options this tool defines: --help lists only them (the options of
/// the LLVM libraries linked in are still accepted, not listed).
static cl::OptionCategory compileOptions("titan-compile options");

static cl::opt<std::string>
    inputFile(cl::Positional,
              cl::desc("<model.pt | graph.ir (TorchScript textual IR) | "
                       "program.mlir (a partitioned program)>"),
              cl::Required, cl::cat(compileOptions));
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(compileOptions));

static cl::opt<PipelineStage>
    emit("emit", cl::desc("What to produce"), cl::init(PipelineStage::Forward),
         cl::values(clEnumValN(PipelineStage::Forward, "titan",
                               "the imported forward program (titan dialect)"),
                    clEnumValN(PipelineStage::TrainStep, "train-step",
                               "+ @train_step: loss, gradients, AdamW (needs "
                               "--config)"),
                    clEnumValN(PipelineStage::Spmd, "spmd",
                               "+ the parallel plan, placements and the "
                               "per-rank program (needs --config)"),
                    clEnumValN(PipelineStage::MemoryPlan, "memory-plan",
                               "+ the rank's kernels and memory plan, no "
                               "native code: the plan report's memory "
                               "section and --summary-json's memory in a "
                               "fraction of an executable's time"),
                    clEnumValN(PipelineStage::Executable, "executable",
                               "+ kernels, memory plan and the linked "
                               "executable in the -o folder (the default "
                               "with --config)")),
         cl::cat(compileOptions));
static cl::opt<int64_t> worldSize(
    "world-size",
    cl::desc("Number of ranks to compile for (default: the product of the "
             "config's parallelism degrees)"),
    cl::init(1), cl::cat(compileOptions));
static cl::opt<std::string> targetCpu(
    "target-cpu",
    cl::desc("CPU the executable may assume (an LLVM CPU name; default "
             "x86-64-v3: AVX2 and FMA; 'native' for this machine's)"),
    cl::init("x86-64-v3"), cl::cat(compileOptions));
static cl::opt<std::string> backend(
    "backend",
    cl::desc("Where the executable computes: cpu (default) or cuda (one "
             "GPU per rank: cuBLASLt, titan's CUDA kernels, the compiler's "
             "kernels through NVVM; links libtitanrt_cuda.so)"),
    cl::init("cpu"), cl::cat(compileOptions));
static cl::list<std::string> runtimeOps(
    "runtime-ops", cl::CommaSeparated,
    cl::desc("Ops the runtime executes with its own kernels instead of "
             "compiled ones: rms_norm, cross_entropy, adamw, squared_norm, "
             "or none (default: all four for --backend=cuda, none for cpu)"),
    cl::value_desc("op,..."), cl::cat(compileOptions));
static cl::opt<std::string>
    configFile("config",
               cl::desc("Training config (torchtitan-style TOML; "
                        "torchtitan's --job.config_file too)"),
               cl::value_desc("file.toml"), cl::cat(compileOptions));
static cl::list<std::string>
    configOverrides("set",
                    cl::desc("Override a config value, e.g. "
                             "--set training.seq_len=64 (or torchtitan's "
                             "--training.seq_len 64, docs/config.md)"),
                    cl::value_desc("section.key=value"),
                    cl::cat(compileOptions));
static cl::opt<bool>
    emitGrads("emit-grads",
              cl::desc("With --emit=train-step, also return grad.<fqn>"),
              cl::cat(compileOptions));

static cl::opt<std::string>
    exportWeights("export-weights",
                  cl::desc("Write every parameter and buffer as "
                           "DIR/<name>.npy"),
                  cl::value_desc("DIR"), cl::cat(compileOptions));
static cl::list<std::string>
    inputShapes("input-shape",
                cl::desc("Shape of a model input, e.g. tokens=2x64xi64 "
                         "(a saved module does not keep its inputs' shapes; "
                         "with --config the token ids take the batch's)"),
                cl::value_desc("name=shape"), cl::cat(compileOptions));
static cl::opt<std::string>
    planReport("plan-report",
               cl::desc("With --emit=spmd, write the plan report (mesh, "
                        "placements, collectives; under pipeline "
                        "parallelism the stages and the simulated "
                        "schedules, and without -o or --pipeline-rank no "
                        "program is written) to this file ('-': stdout)"),
               cl::value_desc("file"), cl::cat(compileOptions));
static cl::opt<std::string> pipelineTrace(
    "pipeline-trace",
    cl::desc("With pipeline_parallel_degree > 1 and --emit=spmd, write the "
             "simulated step of the configured schedule as a Chrome trace "
             "(Perfetto, chrome://tracing)"),
    cl::value_desc("file.json"), cl::cat(compileOptions));
static cl::opt<std::string> overlapTrace(
    "overlap-trace",
    cl::desc("With --emit=spmd or an executable, write one rank's step as "
             "the cost model predicts it after titan-schedule-overlap "
             "(compute, and each communicator's collectives) as a Chrome "
             "trace (Perfetto, chrome://tracing); under pipeline "
             "parallelism one process per pipeline rank"),
    cl::value_desc("file.json"), cl::cat(compileOptions));
static cl::opt<std::string> pipelineScheduleOut(
    "pipeline-schedule",
    cl::desc("With pipeline_parallel_degree > 1 and --emit=spmd, write the "
             "schedule the pipeline ranks run, in the CSV form of torch's "
             "_PipelineScheduleRuntime (loadable as "
             "pipeline_parallel_schedule_csv)"),
    cl::value_desc("file.csv"), cl::cat(compileOptions));
static cl::opt<int64_t> pipelineRank(
    "pipeline-rank",
    cl::desc("With pipeline_parallel_degree > 1 and --emit=spmd, build only "
             "this pipeline rank's program (-o X.mlir writes X.ppR.mlir, "
             "-o - prints it)"),
    cl::value_desc("R"), cl::init(-1), cl::cat(compileOptions));
static cl::opt<std::string> summaryJson(
    "summary-json",
    cl::desc("With --emit=spmd, --emit=memory-plan or an executable, write "
             "the predictions (and with the memory plan the memory of a "
             "rank) as JSON (what titan-tune reads)"),
    cl::value_desc("file.json"), cl::cat(compileOptions));
static cl::opt<std::string>
    memoryPlot("memory-plot",
               cl::desc("With the memory plan (an executable or "
                        "--emit=memory-plan), draw the memory of one rank over "
                        "the training step (by kind: state, saved "
                        "activations, gradients, collective buffers, ...) "
                        "into this SVG file"),
               cl::value_desc("file.svg"), cl::cat(compileOptions));
static cl::opt<std::string> checkpointLayout(
    "checkpoint-layout",
    cl::desc("With --emit=spmd, write the checkpoint plan (keys, global "
             "shapes, dtypes, the box each rank writes) to this file"),
    cl::value_desc("file"), cl::cat(compileOptions));
static cl::opt<bool>
    printSummary("summary", cl::desc("Print parameter and op counts to stderr"),
                 cl::cat(compileOptions));

/// Writes one imported tensor as DIR/<name>.npy.
static llvm::Error writeWeight(llvm::StringRef dir,
                               const ImportedTensor &weight) {
  if (weight.data.empty())
    return llvm::createStringError(
        "'" + weight.name +
        "' has no data in the model (a shape-only export); "
        "--export-weights needs a model saved with its weights");
  NpyArray array;
  array.dtype = getNpyStorageType(weight.elementType);
  array.shape.assign(weight.shape.begin(), weight.shape.end());
  array.data = weight.data;
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, weight.name + ".npy");
  return writeNpy(path, array);
}

/// Weights are written into a staging directory inside --export-weights and
/// moved into place only when the whole import succeeded, so a failed run
/// leaves no partial set of files.
class WeightExport {
public:
  /// Creates the staging directory inside `folder`.
  llvm::Error begin(llvm::StringRef folder) {
    destination = folder.str();
    if (std::error_code error = llvm::sys::fs::create_directories(destination))
      return llvm::createStringError("cannot create '" + destination +
                                     "': " + error.message());
    staging = destination;
    llvm::sys::path::append(staging, ".titan-compile-partial");
    llvm::sys::fs::remove_directories(staging);
    if (std::error_code error = llvm::sys::fs::create_directory(staging))
      return llvm::createStringError("cannot create '" + staging +
                                     "': " + error.message());
    return llvm::Error::success();
  }
  llvm::Error write(const ImportedTensor &weight) {
    names.push_back(weight.name + ".npy");
    shapes[weight.name] = weight.shape;
    return writeWeight(staging, weight);
  }
  /// The global shape of an exported tensor, or nullptr.
  const std::vector<int64_t> *shapeOf(llvm::StringRef name) const {
    auto it = shapes.find(name);
    return it == shapes.end() ? nullptr : &it->second;
  }
  /// Writes a tensor of `shape` and float `type` filled with `value`
  /// (optimizer state, scalars of the training state).
  llvm::Error writeFilled(const std::string &name,
                          llvm::ArrayRef<int64_t> shape, float value,
                          ElementType type) {
    int64_t count = 1;
    for (int64_t d : shape)
      count *= d;
    // A float `type` holds `value` rounded to it; anything else float32.
    if (!isFloatElementType(type))
      type = ElementType::F32;
    std::vector<float> values(count, value);
    std::vector<char> bytes(count * getElementTypeSize(type));
    convertElements(ElementType::F32, values.data(), type, bytes.data(), count);
    return write(
        ImportedTensor{name, std::vector<int64_t>(shape.begin(), shape.end()),
                       type, std::move(bytes)});
  }
  /// Moves the staged files into the export directory.
  llvm::Error commit() {
    for (const std::string &name : names) {
      llvm::SmallString<256> from(staging), to(destination);
      llvm::sys::path::append(from, name);
      llvm::sys::path::append(to, name);
      if (std::error_code error = llvm::sys::fs::rename(from, to))
        return llvm::createStringError("cannot move '" + from + "' to '" + to +
                                       "': " + error.message());
    }
    llvm::sys::fs::remove_directories(staging);
    return llvm::Error::success();
  }
  ~WeightExport() {
    if (!staging.empty())
      llvm::sys::fs::remove_directories(staging);
  }

private:
  std::string destination;
  llvm::SmallString<256> staging;
  std::vector<std::string> names;
  llvm::StringMap<std::vector<int64_t>> shapes;
};

/// Prints parameter and op counts of the imported module.
/// Prints the ops the importer evaluated at import time: what the compiled
/// program assumes static.
static void summarizeFolded(llvm::ArrayRef<FoldedOp> folded) {
  if (folded.empty())
    return;
  llvm::errs() << "titan-compile: evaluated at import time (assumed static):\n";
  for (const FoldedOp &op : folded) {
    llvm::errs() << "  " << op.kind << " x" << op.count;
    if (!op.firstSource.empty())
      llvm::errs() << " (first at " << op.firstSource << ")";
    llvm::errs() << "\n";
  }
}

static void summarize(ModuleOp module) {
  int64_t parameters = 0, parameterTensors = 0, ops = 0;
  module.walk([&](func::FuncOp function) {
    for (unsigned i = 0; i < function.getNumArguments(); ++i) {
      if (getArgRole(function, i) != ArgRole::Param)
        continue;
      ++parameterTensors;
      parameters += cast<RankedTensorType>(function.getArgument(i).getType())
                        .getNumElements();
    }
    function.walk([&](Operation *) { ++ops; });
  });
  llvm::errs() << "titan-compile: " << parameterTensors
               << " parameter tensors, " << parameters << " parameters, " << ops
               << " ops\n";
}

/// What the executable's ranks report about their steps besides the loss:
/// torchtitan's model FLOPs per token and the device's peak, for TFLOP/s
/// and MFU.
struct JobMetrics {
  double flopsPerToken = 0;
  double peakFlopsPerSecond = 0;
  std::string device;
  /// The threads per rank the device's peak was measured with (0: not a
  /// CPU device), and the hardware threads they had: the runtime scales the
  /// peak by its rank's own share of its machine over the latter.
  int64_t deviceThreadsPerRank = 0;
  double deviceHardwareThreadsPerRank = 0;
};

/// The job metrics of `device` for `flopsPerToken` and `peak`.
static JobMetrics getJobMetrics(double flopsPerToken, double peak,
                                const DeviceDescription &device) {
  return {flopsPerToken, peak, device.name, device.threadsPerRank,
          device.hardwareThreadsPerRank > 0 ? device.hardwareThreadsPerRank
                                            : double(device.threadsPerRank)};
}

/// `path` with ".pp<rank>" before its extension ("step.mlir" ->
/// "step.pp0.mlir"; "-" stays "-").
static std::string withPipelineRank(llvm::StringRef path, int64_t rank) {
  if (path == "-")
    return "-";
  llvm::StringRef extension = llvm::sys::path::extension(path);
  return (path.drop_back(extension.size()) + ".pp" + llvm::Twine(rank) +
          extension)
      .str();
}

/// The file pipeline rank `rank`'s program goes to when -o is `output`:
/// "X.mlir" and "X" -> "X.ppR.mlir" ("-" stays "-").
static std::string getPipelineProgramPath(llvm::StringRef output,
                                          int64_t rank) {
  return withPipelineRank(output.ends_with(".mlir") || output == "-"
                              ? output.str()
                              : (output + ".mlir").str(),
                          rank);
}

/// Prints `program` to `path` ('-': stdout), through a temporary file
/// renamed only once written whole, so a failed run leaves no partial one.
static llvm::Error writeProgram(Operation *program, llvm::StringRef path) {
  std::string message;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &message);
  if (!file)
    return llvm::createStringError(message);
  program->print(file->os());
  file->os() << "\n";
  file->keep();
  return llvm::Error::success();
}

/// The name of pipeline rank `rank`'s program of a job of `degree`
/// pipeline ranks (its executable is OUT/bin/<name>): "train" without
/// pipeline parallelism.
static std::string getProgramName(int64_t degree, int64_t rank) {
  return degree == 1 ? "train" : "train-pp" + std::to_string(rank);
}

/// Writes OUT/manifest.json for the programs `programs` (one, or one per
/// pipeline rank in order): what titan-run needs to start the ranks, and
/// what the ranks need for their metrics (`metrics`, when known).
static llvm::Error writeManifest(ArrayRef<ModuleOp> programs,
                                 llvm::StringRef path,
                                 const JobMetrics *metrics,
                                 llvm::StringRef backend) {
  FailureOr<ProgramRanks> ranks = getProgramRanks(programs.front());
  if (failed(ranks))
    return llvm::createStringError("the program's mesh is invalid");
  FailureOr<DeviceMesh> mesh = ranks->getJobMesh();
  if (failed(mesh))
    return llvm::createStringError("the program's mesh is invalid");
  int64_t degree = programs.size(), stageSize = ranks->getStageSize();
  llvm::json::Array axes, sizes, rankList, programList;
  for (unsigned axis = 0; axis < mesh->getNumAxes(); ++axis) {
    axes.push_back(mesh->getAxisName(axis).str());
    sizes.push_back(mesh->getSize(axis));
  }
  for (int64_t rank = 0; rank < degree; ++rank)
    programList.push_back(
        llvm::json::Object{{"name", getProgramName(degree, rank)},
                           {"path", "bin/" + getProgramName(degree, rank)}});
  for (int64_t rank = 0; rank < mesh->getNumRanks(); ++rank) {
    llvm::json::Array coords;
    for (int64_t coordinate : mesh->getCoordinate(rank))
      coords.push_back(coordinate);
    rankList.push_back(llvm::json::Object{
        {"rank", rank},
        {"program", getProgramName(degree, rank / stageSize)},
        {"coords", std::move(coords)}});
  }
  llvm::json::Object manifest{
      {"format", "titan-manifest"},
      {"version", 1},
      {"world_size", mesh->getNumRanks()},
      {"backend", backend},
      {"mesh", llvm::json::Object{{"axes", std::move(axes)},
                                  {"sizes", std::move(sizes)}}},
      {"programs", std::move(programList)},
      {"ranks", std::move(rankList)}};
  if (metrics) {
    llvm::json::Object object{
        {"model_flops_per_token", metrics->flopsPerToken},
        {"peak_flops_per_second", metrics->peakFlopsPerSecond},
        {"device", metrics->device}};
    if (metrics->deviceThreadsPerRank > 0) {
      object["device_threads_per_rank"] = metrics->deviceThreadsPerRank;
      object["device_hardware_threads_per_rank"] =
          metrics->deviceHardwareThreadsPerRank;
    }
    manifest["metrics"] = std::move(object);
  }
  std::error_code error;
  llvm::raw_fd_ostream os(path, error);
  if (error)
    return llvm::createStringError("cannot write '" + path +
                                   "': " + error.message());
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest))) << "\n";
  return llvm::Error::success();
}

/// The checkpoint plan of the job whose programs are `programs` (one, or
/// one per pipeline rank in order): a pipeline's plans merged over the
/// job's ranks.
static llvm::Expected<CheckpointPlan>
computeJobCheckpointPlan(ArrayRef<ModuleOp> programs) {
  SmallVector<CheckpointPlan> plans;
  for (ModuleOp program : programs) {
    FailureOr<CheckpointPlan> plan = computeCheckpointLayout(program);
    if (failed(plan))
      return llvm::createStringError("cannot compute the checkpoint layout");
    plans.push_back(std::move(*plan));
  }
  if (plans.size() == 1)
    return std::move(plans.front());
  return mergePipelineCheckpointPlans(plans);
}

/// Writes OUT/bin/train of a pipeline of `degree` ranks with `stageSize`
/// ranks each: a launcher that starts the program of the rank's pipeline
/// coordinate (RANK / stageSize) in its place, for torchrun and other
/// launchers that start one command on every rank.
static llvm::Error writePipelineLauncher(llvm::StringRef path, int64_t degree,
                                         int64_t stageSize) {
  std::error_code error;
  {
    llvm::raw_fd_ostream os(path, error);
    if (error)
      return llvm::createStringError("cannot write '" + path +
                                     "': " + error.message());
    os << "#!/bin/sh\n"
       << "# Written by titan-compile: rank R (of " << degree * stageSize
       << ") runs bin/train-pp<R / " << stageSize
       << ">, the program of its pipeline rank.\n"
       << "rank=${RANK:-0}\n"
       << "case $rank in ''|*[!0-9]*) echo \"$0: RANK='$rank' is not a rank\" "
          ">&2; exit 1;; esac\n"
       << "exec \"$(dirname \"$0\")/train-pp$((rank / " << stageSize
       << "))\" \"$@\"\n";
  }
  if ((error = llvm::sys::fs::setPermissions(
           path, llvm::sys::fs::all_read | llvm::sys::fs::all_exe |
                     llvm::sys::fs::owner_write)))
    return llvm::createStringError("cannot make '" + path +
                                   "' executable: " + error.message());
  return llvm::Error::success();
}

/// Times `what` of pipeline rank `rank` (of `degree`) under `timing`.
static TimingScope nestRankTiming(TimingScope &timing, llvm::StringRef what,
                                  int64_t rank, int64_t degree) {
  return timing.nest(
      degree == 1
          ? what.str()
          : (what + " (pipeline rank " + llvm::Twine(rank) + ")").str());
}

/// The pipeline options of the validation program of a job compiled with
/// `pipeline`: titan-build-train-step's `evaluate` step under the same
/// parallel plan, without what only a training step has (activation
/// checkpointing, microbatches, resharding for a backward, gradient
/// reductions, buckets and overlap of collectives, async tensor
/// parallelism's chunks, optimizer steps in the backward).
static TitanPipelineOptions
getValidationPipeline(const TitanPipelineOptions &pipeline) {
  TitanPipelineOptions validating = pipeline;
  validating.trainStep.evaluate = true;
  validating.recompute.mode = "none";
  validating.recompute.keptBytes = -1;
  validating.reshard.policy = "never";
  validating.gradientReduce.reset();
  validating.pipeline.reset();
  validating.overlap.reset();
  validating.buckets.reset();
  validating.asyncTensorParallel.reset();
  validating.stepInBackward = false;
  return validating;
}

/// Plans the memory of the partitioned programs `programs` (one, or one per
/// pipeline rank in order): their schedules, kernels and memory plans
/// (buildPlanningPipeline), each one's section appended to `report` when
/// given (against `device`'s memory when given) and drawn into
/// --memory-plot; then the `validation` programs, when given
/// (buildValidationPrograms: one per program), read the parameter copies
/// of theirs (readParameterCopies), are planned likewise and joined to its
/// regions (joinValidationProgram), each with its report section. The
/// breakdown added to `summary` when given: that of the program needing
/// the most (its validation's arena included), with each one's total under
/// pipeline parallelism.
/// Runs the planning pipeline of `pipeline` (buildPlanningPipeline) on
/// `program`, timed as `what` of pipeline rank `rank` of `degree`.
static llvm::Error runPlanningPipeline(ModuleOp program,
                                       const TitanPipelineOptions &pipeline,
                                       TimingScope &timing,
                                       llvm::StringRef what, int64_t rank,
                                       int64_t degree) {
  PassManager pm(program.getContext());
  TimingScope passTiming = nestRankTiming(timing, what, rank, degree);
  pm.enableTiming(passTiming);
  buildPlanningPipeline(pm, pipeline);
  if (failed(pm.run(program)))
    return llvm::createStringError("compilation failed (see the errors "
                                   "above)");
  return llvm::Error::success();
}

static llvm::Error
planJobMemory(ArrayRef<ModuleOp> programs, ArrayRef<ModuleOp> validation,
              const TitanPipelineOptions &pipeline, llvm::raw_ostream *report,
              const DeviceDescription *device, llvm::json::Object *summary,
              TimingScope &timing) {
  int64_t degree = programs.size();
  for (int64_t rank = 0; rank < degree; ++rank) {
    ModuleOp program = programs[rank];
    if (llvm::Error error = runPlanningPipeline(
            program, pipeline, timing, "kernels and memory plan", rank, degree))
      return error;
    if (report) {
      if (degree > 1)
        *report << "\n== Pipeline rank " << rank << ": bin/"
                << getProgramName(degree, rank) << " ==\n";
      if (failed(writeMemoryReport(program, device, *report)) ||
          failed(writeLaunchReport(program, device, *report)))
        return llvm::createStringError("cannot write the memory report");
    }
    if (!memoryPlot.empty()) {
      std::string message;
      std::unique_ptr<llvm::ToolOutputFile> plot =
          openOutputFile(degree == 1 ? memoryPlot.getValue()
                                     : withPipelineRank(memoryPlot, rank),
                         &message);
      if (!plot)
        return llvm::createStringError(message);
      if (failed(writeMemoryPlot(program, plot->os())))
        return llvm::createStringError("cannot draw the memory plot");
      plot->keep();
    }
  }
  TitanPipelineOptions validating = getValidationPipeline(pipeline);
  for (auto [rank, validationProgram] : llvm::enumerate(validation)) {
    ModuleOp program = validationProgram;
    ModuleOp training = programs[rank];
    auto trainingStep = training.lookupSymbol<func::FuncOp>("train_step");
    readParameterCopies(trainingStep,
                        program.lookupSymbol<func::FuncOp>("train_step"));
    if (llvm::Error error = runPlanningPipeline(
            program, validating, timing, "validation: kernels and memory plan",
            rank, degree))
      return error;
    if (report) {
      *report << "\n== Validation program (linked into bin/"
              << getProgramName(degree, rank)
              << ": it reads the step's state and computes in its arena) ==\n";
      if (failed(writeMemoryReport(program, device, *report)))
        return llvm::createStringError("cannot write the memory report");
    }
    if (llvm::Error error = joinValidationProgram(
            trainingStep, program.lookupSymbol<func::FuncOp>("train_step")))
      return error;
    // The regions the rank allocates for both programs.
    if (report) {
      auto plan = trainingStep->getAttrOfType<DictionaryAttr>(
          TitanDialect::kMemoryPlanAttrName);
      *report << "  the rank allocates for both programs: ";
      for (auto [key, region] : {std::pair{"arena_bytes", "arena"},
                                 std::pair{"state_bytes", "state"},
                                 std::pair{"input_bytes", "inputs"}})
        *report << region << " " << plan.getAs<IntegerAttr>(key).getInt()
                << " B" << (StringRef(region) == "inputs" ? "\n" : ", ");
    }
  }
  if (summary) {
    // Under pipeline parallelism: the rank that needs the most, and each
    // rank's total.
    std::optional<MemoryBreakdown> memory;
    int64_t peakRank = 0;
    llvm::json::Array rankTotals;
    for (auto [rank, program] : llvm::enumerate(programs)) {
      FailureOr<MemoryBreakdown> rankMemory = computeMemoryBreakdown(program);
      if (failed(rankMemory))
        return llvm::createStringError("cannot read the memory plan");
      rankTotals.push_back(rankMemory->getTotalBytes());
      if (!memory || rankMemory->getTotalBytes() > memory->getTotalBytes()) {
        memory = std::move(*rankMemory);
        peakRank = rank;
      }
    }
    llvm::json::Object atPeak;
    for (const auto &[what, bytes, region] : memory->atPeak)
      atPeak[what] = bytes;
    (*summary)["memory"] =
        llvm::json::Object{{"arena_bytes", memory->arenaBytes},
                           {"state_bytes", memory->stateBytes},
                           {"input_bytes", memory->inputBytes},
                           {"total_bytes", memory->getTotalBytes()},
                           {"peak_op", memory->peakPosition},
                           {"peak_place", memory->peakPlace},
                           {"at_peak", std::move(atPeak)}};
    if (degree > 1) {
      llvm::json::Object &object = *(*summary)["memory"].getAsObject();
      object["pipeline_rank"] = peakRank;
      object["pipeline_rank_total_bytes"] = std::move(rankTotals);
    }
  }
  return llvm::Error::success();
}

/// Compiles the partitioned programs `programs` (one, or one per pipeline
/// rank in order) into the folder `out`: the memory plan of each
/// (planJobMemory, with `report`, `device` and `summary`), the LLVM
/// dialect modules, bin/train (under
/// pipeline parallelism bin/train-pp<R> and a bin/train that starts the
/// rank's), manifest.json and checkpoint-plan.txt, and config.toml
/// (`config`, when given: the config the ranks run the job by). The
/// `validation` programs, when given (buildValidationPrograms: one per
/// program), are planned, joined to their program's regions
/// (joinValidationProgram) and linked into its executable. Each phase is
/// timed under `timing` (--mlir-timing).
static llvm::Error
writeExecutable(ArrayRef<ModuleOp> programs, ArrayRef<ModuleOp> validation,
                TitanPipelineOptions pipeline, llvm::StringRef out,
                llvm::raw_ostream *report, const DeviceDescription *device,
                llvm::json::Object *summary, const TrainConfig *config,
                const JobMetrics *metrics, TimingScope &timing) {
  int64_t degree = programs.size();
  // Read before the lowering replaces the meshes.
  FailureOr<ProgramRanks> ranks = getProgramRanks(programs.front());
  if (failed(ranks))
    return llvm::createStringError("the program's mesh is invalid");
  int64_t stageSize = ranks->getStageSize();
  TimingScope planTiming = timing.nest("checkpoint plan");
  llvm::Expected<CheckpointPlan> plan = computeJobCheckpointPlan(programs);
  if (!plan)
    return plan.takeError();
  llvm::SmallString<256> planPath(out), binDir(out), manifest(out),
      configPath(out);
  llvm::sys::path::append(planPath, "checkpoint-plan.txt");
  llvm::sys::path::append(configPath, "config.toml");
  llvm::sys::path::append(binDir, "bin");
  llvm::sys::path::append(manifest, "manifest.json");
  // The plan and the manifest of an earlier build in `out` are replaced only
  // once the executables are linked: a failed compile leaves them as they
  // were.
  std::string planPartial = (planPath + ".partial").str(),
              manifestPartial = (manifest + ".partial").str(),
              configPartial = (configPath + ".partial").str();
  llvm::scope_exit discardPartials([&] {
    llvm::sys::fs::remove(planPartial);
    llvm::sys::fs::remove(manifestPartial);
    llvm::sys::fs::remove(configPartial);
  });
  if (std::error_code error = llvm::sys::fs::create_directories(binDir))
    return llvm::createStringError("cannot create '" + binDir +
                                   "': " + error.message());
  {
    std::error_code error;
    llvm::raw_fd_ostream os(planPartial, error);
    if (error)
      return llvm::createStringError("cannot write '" + planPartial +
                                     "': " + error.message());
    printCheckpointPlan(*plan, os);
  }
  // Without a config (a partitioned .mlir input), the ranks run on the
  // defaults compiled into the program; an older config.toml would lie.
  llvm::sys::fs::remove(configPath);
  if (config) {
    std::error_code error;
    llvm::raw_fd_ostream os(configPartial, error);
    if (error)
      return llvm::createStringError("cannot write '" + configPartial +
                                     "': " + error.message());
    os << "# The config this executable was compiled with (titan-compile "
          "writes it;\n# the ranks run the job by it, with the command "
          "line's overrides).\n\n"
       << printTrainConfig(*config);
  }
  planTiming.stop();

  // The communicators the pipeline ranks share get one numbering.
  CommunicatorTable communicators;
  if (llvm::Error error = planJobMemory(programs, validation, pipeline, report,
                                        device, summary, timing))
    return error;
  TitanPipelineOptions validating = getValidationPipeline(pipeline);
  SmallVector<ModuleOp> linked(programs);
  linked.append(validation.begin(), validation.end());
  for (ModuleOp program : linked)
    communicators.addCommunicatorsOf(
        program.lookupSymbol<func::FuncOp>("train_step"));
  if (llvm::Error error = writeManifest(programs, manifestPartial, metrics,
                                        pipeline.runtime.target))
    return error;
  // One numbering of the communicators for the programs that share them:
  // a pipeline's ranks, a step and its validation.
  if (degree > 1 || !validation.empty())
    for (const std::vector<std::string> &axes : communicators.getAxes())
      pipeline.runtime.communicators.push_back(llvm::join(axes, "+"));
  validating.runtime = pipeline.runtime;
  validating.runtime.validation = "program";
  if (!validation.empty())
    pipeline.runtime.validation = "linked";
  for (int64_t rank = 0; rank < degree; ++rank) {
    ModuleOp program = programs[rank];
    std::string name = getProgramName(degree, rank);
    llvm::SmallString<256> kernelsObject(out), hostObject(out),
        executable(binDir);
    llvm::sys::path::append(kernelsObject, name + ".kernels.o");
    llvm::sys::path::append(hostObject, name + ".step.o");
    llvm::sys::path::append(executable, name);
    // The program, and with it its validation program.
    SmallVector<std::pair<ModuleOp, const LowerToRuntimePassOptions *>, 2>
        lowered = {{program, &pipeline.runtime}};
    if (!validation.empty())
      lowered.push_back({validation[rank], &validating.runtime});
    for (auto [module, options] : lowered) {
      PassManager pm(module.getContext());
      TimingScope passTiming =
          nestRankTiming(timing, "lowering to LLVM", rank, degree);
      pm.enableTiming(passTiming);
      pm.addPass(createLowerToRuntimePass(*options));
      if (failed(pm.run(module)))
        return llvm::createStringError("compilation failed (see the errors "
                                       "above)");
    }
    TimingScope emitTiming =
        nestRankTiming(timing, "native code", rank, degree);
    std::vector<std::string> objects;
    llvm::Error emitted = llvm::Error::success();
    for (auto [index, entry] : llvm::enumerate(lowered)) {
      std::string suffix = index ? ".validation" : "";
      objects.push_back((kernelsObject + suffix).str());
      objects.push_back((hostObject + suffix).str());
      if (llvm::Error error =
              emitObjectFiles(entry.first, objects[objects.size() - 2],
                              objects.back(), CodegenTarget{"", targetCpu})) {
        emitted = llvm::joinErrors(std::move(emitted), std::move(error));
        break;
      }
    }
    emitTiming.stop();
    TimingScope linkTiming = nestRankTiming(timing, "link", rank, degree);
    llvm::Error linked =
        emitted ? std::move(emitted)
                : linkExecutable(objects, executable, pipeline.runtime.target);
    for (const std::string &object : objects)
      llvm::sys::fs::remove(object);
    if (linked)
      return linked;
  }
  if (degree > 1) {
    llvm::SmallString<256> launcher(binDir);
    llvm::sys::path::append(launcher, "train");
    if (llvm::Error error = writePipelineLauncher(launcher, degree, stageSize))
      return error;
  }
  for (auto [partial, target] : {std::make_pair(&planPartial, &planPath),
                                 std::make_pair(&manifestPartial, &manifest),
                                 std::make_pair(&configPartial, &configPath)})
    if (config || target != &configPath)
      if (std::error_code error = llvm::sys::fs::rename(*partial, *target))
        return llvm::createStringError("cannot write '" + *target +
                                       "': " + error.message());
  return llvm::Error::success();
}

/// The module paths of a training step's forward: its transformer blocks
/// in order, and the modules outside them before the first block and after
/// the last.
struct ModelModules {
  std::vector<std::string> blocks, leading, trailing;
};

/// Lists the modules of @train_step's forward in `module`.
static ModelModules listModelModules(ModuleOp module) {
  ModelModules modules;
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  std::vector<std::string> outside;
  for (Operation &op : step.getBody().front()) {
    if (getPhase(&op) != Phase::Forward)
      continue;
    std::optional<StringRef> path = getModulePath(op.getLoc());
    if (!path)
      continue;
    StringRef block = getTransformerBlock(*path);
    if (block.empty()) {
      if (!llvm::is_contained(outside, *path) &&
          !llvm::is_contained(modules.leading, *path))
        (modules.blocks.empty() ? modules.leading : outside)
            .push_back(path->str());
    } else if (modules.blocks.empty() || modules.blocks.back() != block) {
      if (!llvm::is_contained(modules.blocks, block))
        modules.blocks.push_back(block.str());
      outside.clear();
    }
  }
  modules.trailing = std::move(outside);
  return modules;
}

/// Cuts the model of `module` (@train_step for one microbatch) into the
/// stages of `pipeline`'s pipeline: torchtitan's split keys of `config`,
/// else (none given) titan-partition-pipeline balances the blocks by the
/// cost model.
static LogicalResult configurePipelineStages(ModuleOp module,
                                             TitanPipelineOptions &pipeline,
                                             const TrainConfig &config) {
  ModelModules modules = listModelModules(module);
  const PipelineScheduleInfo *schedule =
      lookupPipelineSchedule(config.parallelism.pipelineParallelSchedule);
  llvm::Expected<PipelineSplit> split = splitPipelineStages(
      config.parallelism, modules.blocks,
      schedule ? schedule->placement : PipelineStagePlacement::Single,
      modules.leading, modules.trailing);
  if (!split)
    return emitError(module.getLoc()) << llvm::toString(split.takeError());
  pipeline.pipeline->stages = split->numStages;
  pipeline.pipeline->stageBlocks = split->blocksPerStage;
  return success();
}

/// Builds the programs of pipeline ranks `ranks` from `module` (@train_step
/// for one microbatch, placed: `pipeline` resumes after PipelineStage::Placed,
/// its stages configured; left as it is) through `pipeline`, and writes
/// each to `output` with ".pp<rank>" before its extension ("step.mlir" ->
/// "step.pp0.mlir"; "-": stdout; none: not written), and into `built` when
/// given. When `ranks` are all the pipeline's, checks that their programs'
/// messages match (titan/Dialect/PipelineTransfers.h), on NCCL too with
/// `nccl` (the CUDA backend). With `announce`, says what the pipeline is
/// (or the gradient accumulation). Returns what the report reads of each,
/// in `ranks`' order.
static FailureOr<SmallVector<PipelineRankProgram, 0>>
writePipelinePrograms(ModuleOp module, TitanPipelineOptions pipeline,
                      ArrayRef<int64_t> ranks,
                      std::optional<llvm::StringRef> output,
                      SmallVectorImpl<OwningOpRef<ModuleOp>> *built, bool nccl,
                      TimingScope &timing, bool announce = true) {
  MLIRContext *context = module.getContext();
  SmallVector<PipelineRankProgram, 0> programs;
  SmallVector<SmallVector<PipelineTransfer, 0>> transfers;
  for (int64_t rank : ranks) {
    OwningOpRef<ModuleOp> program = module.clone();
    pipeline.pipeline->rank = rank;
    PassManager pm(context);
    TimingScope passTiming =
        timing.nest(("pipeline rank " + llvm::Twine(rank)).str());
    pm.enableTiming(passTiming);
    buildTitanPipeline(pm, pipeline);
    if (failed(pm.run(*program)))
      return failure();
    llvm::Expected<PipelineRankProgram> read =
        readPipelineRankProgram(*program);
    if (!read)
      return emitError(module.getLoc()) << llvm::toString(read.takeError());
    if (!announce) {
    } else if (programs.empty() && read->plan.degree == 1) {
      llvm::errs() << "titan-compile: "
                   << describeGradientAccumulation(read->plan.microbatches)
                   << "\n";
    } else if (programs.empty()) {
      const PipelinePlan &plan = read->plan;
      llvm::errs() << "titan-compile: pipeline: " << plan.schedule << ", "
                   << plan.getNumStages() << " stages on " << plan.degree
                   << " ranks, " << plan.microbatches
                   << " microbatches; blocks per stage ["
                   << llvm::join(llvm::map_range(plan.stageBlocks,
                                                 [](int64_t n) {
                                                   return std::to_string(n);
                                                 }),
                                 ", ")
                   << "], predicted ms per microbatch (forward + backward) ["
                   << llvm::join(
                          llvm::map_range(
                              plan.stageSeconds,
                              [](double t) {
                                return llvm::formatv("{0:F3}", t * 1e3).str();
                              }),
                          ", ")
                   << "]"
                   << (pipeline.pipeline->stageBlocks.empty()
                           ? " (balanced by the cost model)"
                           : "")
                   << "\n";
    }
    FailureOr<SmallVector<PipelineTransfer, 0>> rankTransfers =
        readPipelineTransfers(
            program->lookupSymbol<func::FuncOp>("train_step"));
    if (failed(rankTransfers))
      return failure();
    transfers.push_back(std::move(*rankTransfers));
    programs.push_back(std::move(*read));
    if (output)
      if (llvm::Error error =
              writeProgram(*program, getPipelineProgramPath(*output, rank)))
        return emitError(module.getLoc()) << llvm::toString(std::move(error));
    if (built)
      built->push_back(std::move(program));
  }
  if (int64_t(ranks.size()) != programs.front().plan.degree)
    return programs;
  if (failed(verifyPipelineTransfers(transfers, /*nccl=*/false)))
    return emitError(module.getLoc())
           << "the pipeline ranks' programs do not exchange matching "
              "messages (a bug in titan-compile: please report it with the "
              "model and the configuration)";
  if (nccl && failed(verifyPipelineTransfers(transfers, /*nccl=*/true)))
    return emitError(module.getLoc())
           << "the CUDA backend's NCCL point-to-point transfers would leave "
              "these pipeline ranks waiting for each other (docs/nccl.md); "
              "choose another pipeline_parallel_schedule or number of "
              "microbatches, or compile for the CPU backend";
  return programs;
}

/// Checks the pipeline options for a pipeline of `degree` ranks (1: none):
/// --pipeline-rank and --pipeline-trace need one, the rank is one of its
/// ranks, and the programs of every rank need -o (a report alone does not).
/// Imports the model (`contents`, from --input) again as it runs under
/// model.eval(), for the validation batch of `config`
/// (validation.local_batch_size rows per data-parallel rank of `mesh`, of
/// validation.seq_len tokens), and builds its validation step up to the
/// per-rank programs under `pipeline`'s parallel plan
/// (getValidationPipeline): one program, or under pipeline parallelism one
/// per pipeline rank, cut into the training step's stages (`training`, the
/// plan of its programs) and run as forwards of
/// validation.local_batch_size / pipeline_parallel_microbatch_size
/// microbatches.
static llvm::Expected<SmallVector<OwningOpRef<ModuleOp>>>
buildValidationPrograms(MLIRContext &context, llvm::StringRef contents,
                        TorchScriptImportOptions options,
                        const TrainConfig &config, const ResolvedMesh &mesh,
                        const TitanPipelineOptions &pipeline,
                        const PipelinePlan *training, bool nccl,
                        TimingScope &timing) {
  TimingScope importTiming = timing.nest("validation: import");
  const ValidationConfig &validation = config.validation;
  int64_t rows = validation.localBatchSize;
  if (training)
    rows = config.parallelism.pipelineParallelMicrobatchSize;
  options.inputs.clear();
  options.onWeight = nullptr;
  options.foldedOps = nullptr;
  options.evaluation = true;
  options.defaultInput = InputSpec{
      {rows * mesh.getDataParallelDegree(), validation.seqLen}, "i64"};
  llvm::Expected<OwningOpRef<ModuleOp>> module =
      contents.ltrim().starts_with("graph(")
          ? importTorchScriptIR(context, contents, options)
          : importTorchScriptFile(context, inputFile, options);
  if (!module)
    return module.takeError();
  importTiming.stop();
  TitanPipelineOptions validating = getValidationPipeline(pipeline);
  validating.resumeAfter.reset();
  validating.stage = PipelineStage::Spmd;
  if (training) {
    // The training step's stages, their blocks and their placement on the
    // pipeline ranks: each rank's validation reads the parameters its
    // step holds.
    PartitionPipelinePassOptions stages = *pipeline.pipeline;
    stages.microbatches = validation.localBatchSize / rows;
    stages.stages = training->getNumStages();
    stages.stageBlocks.assign(training->stageBlocks.begin(),
                              training->stageBlocks.end());
    stages.fsdpPerMicrobatch = false;
    validating.pipeline = stages;
    validating.stage = PipelineStage::Placed;
  }
  PassManager pm(&context);
  TimingScope passTiming = timing.nest("validation: step and partitioning");
  pm.enableTiming(passTiming);
  buildTitanPipeline(pm, validating);
  auto failedCompile = [] {
    return llvm::createStringError(
        "compilation of the validation program failed (see the errors "
        "above)");
  };
  if (failed(pm.run(**module)))
    return failedCompile();
  passTiming.stop();
  SmallVector<OwningOpRef<ModuleOp>> programs;
  if (!training) {
    programs.push_back(std::move(*module));
    return std::move(programs);
  }
  validating.stage = PipelineStage::Spmd;
  validating.resumeAfter = PipelineStage::Placed;
  if (failed(writePipelinePrograms(
          **module, validating,
          llvm::to_vector(llvm::seq<int64_t>(mesh.getPipelineDegree())),
          std::nullopt, &programs, nccl, timing, /*announce=*/false)))
    return failedCompile();
  return std::move(programs);
}

static llvm::Error checkPipelineOutput(int64_t degree) {
  bool oneRank = pipelineRank.getNumOccurrences();
  if (degree <= 1) {
    if (oneRank || !pipelineTrace.empty() || !pipelineScheduleOut.empty())
      return llvm::createStringError(
          "--pipeline-trace, --pipeline-schedule and --pipeline-rank need "
          "pipeline_parallel_degree > 1");
    return llvm::Error::success();
  }
  if (oneRank && (pipelineRank < 0 || pipelineRank >= degree))
    return llvm::createStringError(
        llvm::formatv("--pipeline-rank {0}: the pipeline has {1} ranks, 0 to "
                      "{2}",
                      pipelineRank.getValue(), degree, degree - 1));
  if (oneRank && !checkpointLayout.empty())
    return llvm::createStringError(
        "--checkpoint-layout of a pipeline covers every pipeline rank's "
        "program: drop --pipeline-rank");
  if (!oneRank && outputFile == "-" && planReport.empty() &&
      pipelineTrace.empty() && pipelineScheduleOut.empty() &&
      checkpointLayout.empty())
    return llvm::createStringError(
        "pipeline_parallel_degree > 1: titan-compile writes one program per "
        "pipeline rank: give -o X.mlir (it writes X.pp0.mlir, X.pp1.mlir, "
        "...), or --pipeline-rank R to print one");
  return llvm::Error::success();
}

/// The schedule the programs of `plan` run: the CSV file `csv` when given
/// (pipeline_parallel_schedule_csv), else the one `plan` names.
static llvm::Expected<PipelineSchedule>
loadPlanSchedule(const PipelinePlan &plan, llvm::StringRef csv) {
  if (csv.empty())
    return generatePlanSchedule(plan);
  return readPipelineScheduleCsvFile(csv, plan.degree, plan.microbatches);
}

/// Writes the plan report of a pipeline to `report` (when given), and
/// --pipeline-schedule and --pipeline-trace, from the programs
/// built (`programs`: the plan, and the state of each rank built) and the
/// schedule they run (`csv`: pipeline_parallel_schedule_csv, if any), on
/// `device` with `ranksPerNode` ranks per node, the stages of `mesh`, and
/// tokens/s and MFU by `model` when given. Returns the report.
static llvm::Expected<PipelineReport>
writePipelineReports(llvm::ArrayRef<PipelineRankProgram> programs,
                     llvm::StringRef csv, const DeviceDescription &device,
                     int64_t ranksPerNode, const ResolvedMesh &mesh,
                     const ModelFlops *model, llvm::raw_ostream *report) {
  const PipelinePlan &plan = programs.front().plan;
  PipelineTarget target;
  target.device = device;
  target.ranksPerNode = ranksPerNode;
  target.stageSize = mesh.getStageSize();
  if (model) {
    target.flopsPerToken = model->getFlopsPerToken();
    target.tokensPerMicrobatch = double(model->tokensPerStep);
  }
  target.matmulType = programs.front().matmulType;
  target.stateBytesPerRank.resize(plan.degree);
  for (const PipelineRankProgram &program : programs)
    target.stateBytesPerRank[program.plan.rank] = program.stateBytes;
  llvm::Expected<PipelineSchedule> schedule = loadPlanSchedule(plan, csv);
  if (!schedule)
    return schedule.takeError();
  llvm::Expected<PipelineReport> built =
      buildPipelineReport(plan, target, *schedule,
                          csv.empty() ? llvm::StringRef(plan.schedule)
                                      : llvm::sys::path::filename(csv));
  if (!built)
    return built.takeError();
  if (report)
    writePipelineReport(*built, *report);
  auto write =
      [](llvm::StringRef path,
         llvm::function_ref<void(llvm::raw_ostream &)> body) -> llvm::Error {
    if (path.empty())
      return llvm::Error::success();
    std::string message;
    std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &message);
    if (!file)
      return llvm::createStringError(message);
    body(file->os());
    file->keep();
    return llvm::Error::success();
  };
  if (llvm::Error error =
          write(pipelineScheduleOut, [&](llvm::raw_ostream &os) {
            os << printPipelineScheduleCsv(*schedule);
          }))
    return std::move(error);
  if (llvm::Error error = write(pipelineTrace, [&](llvm::raw_ostream &os) {
        writeChromeTrace(built->getConfigured().simulation, os);
      }))
    return std::move(error);
  return built;
}

/// The summary's "predicted" section (--summary-json) of a pipeline: the
/// configured schedule's simulated step of `report`, the model's FLOPs
/// `model`, and the recomputation of the busiest pipeline rank, among the
/// programs `programs` on `device` (every microbatch's, as for compute).
static FailureOr<llvm::json::Object>
summarizePipelinePrediction(const PipelineReport &report,
                            ArrayRef<OwningOpRef<ModuleOp>> programs,
                            const DeviceDescription &device,
                            int64_t ranksPerNode, const ModelFlops &model) {
  const PipelinePrediction &configured = report.getConfigured();
  double busiest = 0, recompute = 0;
  for (const RankTimeline &rank : configured.simulation.ranks)
    busiest = std::max(busiest, rank.busySeconds);
  for (const OwningOpRef<ModuleOp> &program : programs) {
    FailureOr<StepTimePrediction> predicted =
        predictStepTime(*program, device, ranksPerNode, model);
    if (failed(predicted))
      return failure();
    recompute = std::max(recompute, predicted->step.recompute);
  }
  return llvm::json::Object{
      {"step_seconds", configured.simulation.stepSeconds},
      {"compute_seconds", busiest},
      {"bubble_fraction", configured.simulation.averageBubbleFraction},
      {"schedule", configured.name},
      {"recompute_seconds", recompute},
      {"tokens_per_second_per_rank", configured.tokensPerSecond},
      {"model_flops_per_token", model.getFlopsPerToken()},
      {"attention_layers", model.attentionLayers},
      {"mfu", configured.mfu}};
}

/// One program's step simulated under two scheduling pipelines.
struct StepComparison {
  double withSeconds = 0, withoutSeconds = 0;

  /// Whether the first pipeline's step is the faster.
  bool isFaster() const { return withSeconds < withoutSeconds; }
};

/// Simulates `module`'s step as the executable runs it after the scheduling
/// pipeline of `with` and after that of `without`.
static FailureOr<StepComparison>
compareSteps(ModuleOp module, const TitanPipelineOptions &with,
             const TitanPipelineOptions &without,
             const DeviceDescription &device, int64_t ranksPerNode) {
  FailureOr<OverlapTimeline> first =
      simulateScheduled(module, with, device, ranksPerNode);
  FailureOr<OverlapTimeline> second =
      simulateScheduled(module, without, device, ranksPerNode);
  if (failed(first) || failed(second))
    return failure();
  return StepComparison{first->stepSeconds, second->stepSeconds};
}

/// parallelism.bucket_collectives unset: titan-bucket-collectives keeps the
/// buckets its cost model predicts faster than their members, and `module`'s
/// step simulated on `device` decides whether the program as a whole gains
/// (a bucket's first member waits for its last, each member is copied in
/// and out). Under pipeline parallelism, whose stages the schedule
/// simulates rather than one rank's step, there are none unless the config
/// asks for them (dropUnaskedBuckets).
static LogicalResult chooseBuckets(ModuleOp module,
                                   TitanPipelineOptions &pipeline,
                                   const TrainConfig &config,
                                   const DeviceDescription &device,
                                   int64_t ranksPerNode) {
  if (config.parallelism.bucketCollectives || !pipeline.buckets)
    return success();
  // Nothing to bucket: one rank's program, or one not partitioned yet.
  if (!module
           .walk([](CollectiveOpInterface) { return WalkResult::interrupt(); })
           .wasInterrupted())
    return success();
  TitanPipelineOptions unbucketed = pipeline;
  unbucketed.buckets.reset();
  FailureOr<StepComparison> steps =
      compareSteps(module, pipeline, unbucketed, device, ranksPerNode);
  if (failed(steps))
    return failure();
  if (!steps->isFaster())
    pipeline.buckets.reset();
  return success();
}

/// Drops the buckets `config` does not ask for (the key unset) from
/// `pipeline`: under pipeline parallelism.
static void dropUnaskedBuckets(TitanPipelineOptions &pipeline,
                               const TrainConfig &config) {
  if (!config.parallelism.bucketCollectives)
    pipeline.buckets.reset();
}

/// Prints what the config asks for that titan does not apply.
static void warnAbout(const TrainConfig &config) {
  for (const std::string &warning : config.warnings)
    llvm::WithColor::warning(llvm::errs(), "titan-compile") << warning << "\n";
}

/// Checks what `config` asks of the executable's backend (`backend`).
static llvm::Error checkBackendSettings(const TrainConfig &config,
                                        llvm::StringRef backend) {
  if (config.training.enableCpuOffload && backend != "cpu")
    return llvm::createStringError(
        llvm::Twine("training.enable_cpu_offload = true is not supported with "
                    "--backend=") +
        backend +
        ": the CUDA backend keeps parameters, gradients and optimizer state "
        "in device memory, and its memory plan has no CPU offload (on the CPU "
        "backend, a rank keeps them in host memory already); set it to false "
        "or compile for the CPU backend");
  return llvm::Error::success();
}

/// titan-compile itself (main runs it, or the fork server's children).
static int compileMain(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerDefaultTimingManagerCLOptions();
  registerAsmPrinterCLOptions();
  cl::HideUnrelatedOptions(compileOptions);
  // The config arguments, titan's (--config, --set) and torchtitan's
  // (--job.config_file, --section.key VALUE, bare boolean flags), are taken
  // out first; LLVM's parser gets the rest.
  llvm::Expected<ConfigCommandLine> configArguments =
      parseConfigCommandLine(llvm::ArrayRef<const char *>(argv, argc));
  if (!configArguments) {
    llvm::WithColor::error(llvm::errs(), "titan-compile")
        << llvm::toString(configArguments.takeError()) << "\n";
    return 1;
  }
  std::vector<const char *> remainingArguments;
  for (const std::string &argument : configArguments->remaining)
    remainingArguments.push_back(argument.c_str());
  cl::ParseCommandLineOptions(
      remainingArguments.size(), remainingArguments.data(),
      "titan compiler driver\n\n"
      "  --mlir-timing prints the time of each phase and pass.\n"
      "  --mlir-print-debuginfo prints locations: the source line, the\n"
      "  module path and the phase of each op.\n");
  if (!configArguments->configFile.empty())
    configFile.setValue(configArguments->configFile);
  for (const std::string &assignment : configArguments->overrides)
    configOverrides.push_back(assignment);
  // --mlir-timing: wall time of every phase and pass, printed at exit.
  DefaultTimingManager timingManager;
  applyDefaultTimingManagerCLOptions(timingManager);
  TimingScope timing = timingManager.getRootScope();
  auto fail = [](const llvm::Twine &message) {
    llvm::WithColor::error(llvm::errs(), "titan-compile") << message << "\n";
    return 1;
  };

  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  // Errors name the op and the fix; the IR around them is for titan-opt.
  context.printOpOnDiagnostic(false);
  // Warnings and remarks of the passes (what they chose instead of failing)
  // reach the user as the config's warnings do; errors keep MLIR's printing,
  // followed by their notes (which MLIR's default printing drops).
  ScopedDiagnosticHandler notes(&context, [](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error) {
      auto print = [](Location loc, StringRef severity, const Diagnostic &d) {
        if (!isa<UnknownLoc>(loc))
          llvm::errs() << loc << ": ";
        llvm::errs() << severity << ": " << d << "\n";
      };
      print(diag.getLocation(), "error", diag);
      for (const Diagnostic &note : diag.getNotes())
        print(note.getLocation(), "note", note);
      return success();
    }
    auto &os = diag.getSeverity() == DiagnosticSeverity::Warning
                   ? llvm::WithColor::warning(llvm::errs(), "titan-compile")
                   : llvm::WithColor::remark(llvm::errs(), "titan-compile");
    os << diag << "\n";
    return success();
  });

  // With a config, titan-compile builds the executable unless --emit stops
  // earlier.
  bool partitionedInput = llvm::StringRef(inputFile).ends_with(".mlir");
  PipelineStage stage = emit.getNumOccurrences() ? emit.getValue()
                        : configFile.empty() && !partitionedInput
                            ? PipelineStage::Forward
                            : PipelineStage::Executable;
  if (!planReport.empty() && stage < PipelineStage::Spmd)
    return fail("--plan-report needs --emit=spmd or an executable");
  if (!checkpointLayout.empty() && stage < PipelineStage::Spmd)
    return fail("--checkpoint-layout needs --emit=spmd");
  if (!summaryJson.empty() && stage < PipelineStage::Spmd)
    return fail("--summary-json needs --emit=spmd, --emit=memory-plan or an "
                "executable");
  if (!overlapTrace.empty() && stage < PipelineStage::Spmd)
    return fail("--overlap-trace needs --emit=spmd or an executable");
  if ((!pipelineTrace.empty() || !pipelineScheduleOut.empty() ||
       pipelineRank.getNumOccurrences()) &&
      stage != PipelineStage::Spmd)
    return fail("--pipeline-trace, --pipeline-schedule and --pipeline-rank "
                "need --emit=spmd and pipeline_parallel_degree > 1");
  if (!memoryPlot.empty() && stage < PipelineStage::MemoryPlan)
    return fail("--memory-plot needs the memory plan: --emit=memory-plan, or "
                "drop --emit (an executable)");
  if (stage == PipelineStage::Executable && outputFile == "-")
    return fail("building an executable needs -o OUT (a folder for bin/, "
                "manifest.json and the checkpoint plan); --emit=spmd prints "
                "the per-rank program instead");
  if (stage == PipelineStage::Executable)
    if (llvm::Error error = checkCodegenTarget(CodegenTarget{"", targetCpu}))
      return fail(llvm::toString(std::move(error)));
  if (backend != "cpu" && backend != "cuda")
    return fail("--backend '" + backend + "': choose cpu or cuda");
  if (backend != "cpu" && stage < PipelineStage::MemoryPlan)
    return fail("--backend chooses where an executable computes: drop --emit, "
                "or --emit=memory-plan for its memory plan");
  for (const std::string &name : runtimeOps)
    if (!llvm::is_contained(kRuntimeOpNames, name) &&
        !(name == "none" && runtimeOps.size() == 1))
      return fail("--runtime-ops: unknown op '" + name + "' (choose from " +
                  llvm::join(llvm::ArrayRef(kRuntimeOpNames), ", ") +
                  ", or none alone)");
  if (!runtimeOps.empty() && stage < PipelineStage::MemoryPlan)
    return fail("--runtime-ops chooses how an executable computes: drop "
                "--emit, or --emit=memory-plan for its memory plan");
  // The backend's choices in the pipeline, then --runtime-ops.
  auto setBackend = [&](TitanPipelineOptions &pipeline) {
    setPipelineBackend(pipeline, backend);
    if (runtimeOps.empty())
      return;
    pipeline.fuseKernels.runtimeOps.clear();
    for (const std::string &name : runtimeOps)
      if (name != "none")
        pipeline.fuseKernels.runtimeOps.push_back(name);
  };

  TorchScriptImportOptions options;
  std::vector<FoldedOp> folded;
  options.foldedOps = &folded;
  for (const std::string &spec : inputShapes) {
    auto [name, shape] = llvm::StringRef(spec).split('=');
    llvm::Expected<InputSpec> parsed = parseInputSpec(shape);
    if (name.empty() || shape.empty())
      return fail("--input-shape '" + spec + "': expected name=shape");
    if (!parsed)
      return fail(llvm::toString(parsed.takeError()));
    options.inputs[name] = *parsed;
  }
  // --export-weights gets every parameter and buffer; an executable's
  // OUT/buffers/ the buffers (RoPE tables) its ranks read.
  WeightExport weights, buffers;
  if (!exportWeights.empty())
    if (llvm::Error error = weights.begin(exportWeights))
      return fail(llvm::toString(std::move(error)));
  if (stage == PipelineStage::Executable) {
    llvm::SmallString<256> folder(outputFile);
    llvm::sys::path::append(folder, "buffers");
    if (llvm::Error error = buffers.begin(folder))
      return fail(llvm::toString(std::move(error)));
  }
  options.onWeight = [&](const ImportedTensor &weight) -> llvm::Error {
    if (!exportWeights.empty())
      if (llvm::Error error = weights.write(weight))
        return error;
    if (stage == PipelineStage::Executable && weight.role == ArgRole::Buffer)
      return buffers.write(weight);
    return llvm::Error::success();
  };

  // A partitioned program in MLIR (titan-compile --emit=spmd, or written by
  // hand) is compiled into an executable directly.
  if (partitionedInput) {
    if (stage != PipelineStage::Executable)
      return fail("a .mlir input is a partitioned program (titan-compile "
                  "--emit=spmd): only an executable is built from it");
    if (!overlapTrace.empty())
      return fail("--overlap-trace needs the model (it is written with "
                  "the plan report), not a partitioned .mlir program");
    llvm::SourceMgr sourceMgr;
    OwningOpRef<ModuleOp> program =
        parseInputFile(inputFile, sourceMgr, &context);
    if (!program)
      return fail("cannot parse '" + inputFile + "'");
    TitanPipelineOptions pipeline;
    std::optional<TrainConfig> config;
    if (!configFile.empty()) {
      llvm::Expected<TrainConfig> loaded =
          loadTrainConfig(configFile, configOverrides);
      if (!loaded)
        return fail(llvm::toString(loaded.takeError()));
      warnAbout(*loaded);
      if (llvm::Error error = checkBackendSettings(*loaded, backend))
        return fail(llvm::toString(std::move(error)));
      config = *loaded;
      pipeline = pipelineOptionsFrom(*loaded, stage, emitGrads);
      llvm::Expected<DeviceDescription> device =
          loadDevice(config->hardware.device);
      if (!device)
        return fail("[hardware] device: " + llvm::toString(device.takeError()));
      int64_t ranksPerNode = config->hardware.ranksPerNode
                                 ? config->hardware.ranksPerNode
                                 : device->ranksPerNode;
      if (SymbolTable::lookupSymbolIn(*program, kPipelineMeshName))
        dropUnaskedBuckets(pipeline, *config);
      else if (failed(chooseBuckets(*program, pipeline, *config, *device,
                                    ranksPerNode)))
        return fail("cannot simulate the communication overlap");
    }
    setBackend(pipeline);
    if (config && config->validation.enable)
      return fail("validation.enable: a partitioned .mlir program holds no "
                  "model to build the validation program from; compile the "
                  "model (MODEL.pt) instead, or set validation.enable = "
                  "false");
    if (llvm::Error error = writeExecutable(
            {*program}, {}, pipeline, outputFile, nullptr, nullptr, nullptr,
            config ? &*config : nullptr, nullptr, timing))
      return fail(llvm::toString(std::move(error)));
    llvm::errs() << "titan-compile: wrote " << outputFile << "/bin/train\n";
    return 0;
  }

  // A file in TorchScript's textual graph IR ("graph(%x : ...):") is
  // imported as a bare graph; anything else is loaded as a saved module.
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(inputFile);
  if (!buffer)
    return fail("cannot read '" + inputFile +
                "': " + buffer.getError().message());
  llvm::StringRef contents = (*buffer)->getBuffer();
  std::optional<TrainConfig> config;
  // The device of the report's predictions ([hardware] device).
  std::optional<DeviceDescription> device;
  // The mesh the program is partitioned over: one rank before Spmd.
  ResolvedMesh mesh;
  if (!configFile.empty()) {
    llvm::Expected<TrainConfig> loaded =
        loadTrainConfig(configFile, configOverrides);
    if (!loaded)
      return fail(llvm::toString(loaded.takeError()));
    warnAbout(*loaded);
    if (llvm::Error error = checkBackendSettings(*loaded, backend))
      return fail(llvm::toString(std::move(error)));
    config = *loaded;
    llvm::Expected<DeviceDescription> loadedDevice =
        loadDevice(config->hardware.device);
    if (!loadedDevice)
      return fail("[hardware] device: " +
                  llvm::toString(loadedDevice.takeError()));
    device = *loadedDevice;
    if (stage >= PipelineStage::Spmd) {
      llvm::Expected<ResolvedMesh> resolved =
          resolveMesh(config->parallelism,
                      worldSize.getNumOccurrences()
                          ? worldSize
                          : getConfiguredWorldSize(config->parallelism));
      if (!resolved)
        return fail(llvm::toString(resolved.takeError()));
      mesh = *resolved;
      if (llvm::Error error =
              config->checkDataParallelDegree(mesh.getDataParallelDegree()))
        return fail(configFile + ": " + llvm::toString(std::move(error)));
    }
    if (llvm::Error error = checkPipelineOutput(mesh.getPipelineDegree()))
      return fail(llvm::toString(std::move(error)));
    // The model input (tokens) is [global batch, seq_len] unless given; as
    // in torchtitan, local_batch_size is per data-parallel rank, so the
    // global batch multiplies it by the data-parallel degrees of the mesh.
    // Under pipeline parallelism and gradient accumulation the step is
    // built for one microbatch and titan-partition-pipeline runs it on
    // every microbatch.
    int64_t rows = config->training.localBatchSize;
    if (mesh.getPipelineDegree() > 1)
      rows = config->parallelism.pipelineParallelMicrobatchSize;
    options.defaultInput = InputSpec{
        {rows * mesh.getDataParallelDegree(), config->training.seqLen}, "i64"};
    if (config->training.getStorageDtype() != ElementType::F32)
      options.parameterStorageType = config->training.getStorageDtype();
    else if (config->training.getParamDtype() != ElementType::F32)
      options.parameterComputeType = config->training.getParamDtype();
  } else if (!configOverrides.empty()) {
    return fail("--set needs --config");
  }
  if (stage >= PipelineStage::TrainStep && !config)
    return fail("--emit=train-step needs --config (the optimizer and "
                "training settings)");

  TimingScope importTiming = timing.nest("import");
  llvm::Expected<OwningOpRef<ModuleOp>> module =
      contents.ltrim().starts_with("graph(")
          ? importTorchScriptIR(context, contents, options)
          : importTorchScriptFile(context, inputFile, options);
  if (!module)
    return fail(llvm::toString(module.takeError()));
  importTiming.stop();
  if (printSummary) {
    summarize(**module);
    summarizeFolded(folded);
  }

  // Up to the per-rank program; the executable's passes run below, after
  // the reports that read the partitioned program.
  TitanPipelineOptions pipeline =
      config ? pipelineOptionsFrom(*config, stage, emitGrads, mesh,
                                   device ? &*device : nullptr)
             : TitanPipelineOptions{};
  pipeline.stage = std::min(stage, PipelineStage::Spmd);
  setBackend(pipeline);
  // The report's prediction counts the model's FLOPs on the global
  // training step: the pipeline stops there first.
  std::optional<ModelFlops> modelFlops;
  auto runPipeline = [&](const TitanPipelineOptions &options) {
    PassManager pm(&context);
    TimingScope passTiming = timing.nest("train step and partitioning");
    pm.enableTiming(passTiming);
    buildTitanPipeline(pm, options);
    return pm.run(**module);
  };
  bool fitRecompute = config && config->activationCheckpoint.mode == "auto";
  // Gradient accumulation is a pipeline of one rank: its program, once
  // built, is the job's one program (`pipelined` turns false below).
  bool pipelined = pipeline.pipeline.has_value();
  bool accumulating = pipelined && mesh.getPipelineDegree() == 1;
  // Before the memory budget's compiles, which then plan the buckets the
  // executable runs.
  if (pipelined && !accumulating && config)
    dropUnaskedBuckets(pipeline, *config);
  // The executable's metrics need it too (MFU); the pipeline's stages are
  // cut from it.
  if ((!planReport.empty() || !summaryJson.empty() || fitRecompute ||
       pipelined || stage == PipelineStage::Executable) &&
      pipeline.stage == PipelineStage::Spmd) {
    TitanPipelineOptions trainStep = pipeline;
    trainStep.stage = PipelineStage::TrainStep;
    if (failed(runPipeline(trainStep)))
      return fail("compilation failed (see the errors above)");
    FailureOr<ModelFlops> counted = computeModelFlops(**module);
    if (failed(counted))
      return fail("cannot count the model's FLOPs");
    modelFlops = *counted;
    pipeline.resumeAfter = PipelineStage::TrainStep;
  }
  if (pipelined && failed(configurePipelineStages(**module, pipeline, *config)))
    return fail("compilation failed (see the errors above)");
  if (fitRecompute && pipeline.stage == PipelineStage::Spmd) {
    TimingScope fitTiming = timing.nest("activation checkpointing to budget");
    const std::optional<double> &gib =
        config->activationCheckpoint.memoryBudgetGib;
    int64_t budget =
        gib ? int64_t(*gib * 1024 * 1024 * 1024) : device->memoryBytes;
    llvm::Expected<RecomputeFit> fit =
        fitRecomputeToMemory(**module, pipeline, budget);
    // Buckets the config does not ask for give way to the budget: their
    // copies may be what does not fit (and the error then names what the
    // step needs without them).
    if (!fit && pipeline.buckets &&
        !config->parallelism.bucketCollectives.has_value()) {
      llvm::consumeError(fit.takeError());
      pipeline.buckets.reset();
      fit = fitRecomputeToMemory(**module, pipeline, budget);
    }
    if (!fit)
      return fail(llvm::toString(fit.takeError()));
    pipeline.recompute.keptBytes = fit->allowedBytes;
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    llvm::errs() << llvm::formatv(
        "titan-compile: activation checkpointing auto: {0:F3} GiB per rank "
        "kept for the backward, peak {1:F3} GiB of {2:F3} GiB ({3} "
        "compiles)\n",
        fit->keptBytes / kGiB, fit->peakBytes / kGiB, budget / kGiB,
        fit->compiles);
  }
  // Under pipeline parallelism: every rank's program, or the one asked
  // for; a report alone needs one (rank 0), written nowhere.
  SmallVector<PipelineRankProgram, 0> pipelinePrograms;
  // Kept when an executable or the checkpoint layout needs them all.
  SmallVector<OwningOpRef<ModuleOp>> pipelineModules;
  bool keepPipelineModules = stage >= PipelineStage::MemoryPlan ||
                             !checkpointLayout.empty() || !planReport.empty() ||
                             !overlapTrace.empty() || !summaryJson.empty() ||
                             accumulating;
  if (pipelined) {
    // Placements and activation checkpointing are chosen once, on the
    // whole step, for every pipeline rank's program.
    TitanPipelineOptions placing = pipeline;
    placing.stage = PipelineStage::Placed;
    if (failed(runPipeline(placing)))
      return fail("compilation failed (see the errors above)");
    pipeline.resumeAfter = PipelineStage::Placed;
    SmallVector<int64_t> ranks;
    if (pipelineRank.getNumOccurrences())
      ranks.push_back(pipelineRank);
    else if (outputFile == "-" && !keepPipelineModules)
      ranks.push_back(0);
    else
      ranks.append(
          llvm::to_vector(llvm::seq<int64_t>(mesh.getPipelineDegree())));
    std::optional<llvm::StringRef> output;
    if (stage == PipelineStage::Spmd && !accumulating &&
        (outputFile != "-" || pipelineRank.getNumOccurrences()))
      output = outputFile;
    FailureOr<SmallVector<PipelineRankProgram, 0>> programs =
        writePipelinePrograms(**module, pipeline, ranks, output,
                              keepPipelineModules ? &pipelineModules : nullptr,
                              backend == "cuda", timing);
    if (failed(programs))
      return fail("compilation failed (see the errors above)");
    pipelinePrograms = std::move(*programs);
    // Gradient accumulation: the one program is the job's, reported and
    // built as any unpipelined step; it trains the tokens of every
    // microbatch.
    if (accumulating) {
      *module = std::move(pipelineModules.front());
      pipelineModules.clear();
      pipelinePrograms.clear();
      pipelined = false;
      if (modelFlops)
        modelFlops->tokensPerStep *= pipeline.pipeline->microbatches;
    }
  } else if (failed(runPipeline(pipeline))) {
    return fail("compilation failed (see the errors above)");
  }
  int64_t ranksPerNode = 0;
  if (config)
    ranksPerNode = config->hardware.ranksPerNode ? config->hardware.ranksPerNode
                                                 : device->ranksPerNode;
  // Async tensor parallelism with chunk counts from the cost model: the
  // pass decides per collective; the simulated step decides whether the
  // program as a whole gains (the copies that cut and join add up).
  if (!pipelined && device && pipeline.asyncTensorParallel &&
      pipeline.asyncTensorParallel->chunks == 0) {
    TitanPipelineOptions whole = pipeline;
    whole.asyncTensorParallel.reset();
    FailureOr<StepComparison> steps =
        compareSteps(**module, pipeline, whole, *device, ranksPerNode);
    if (failed(steps))
      return fail("cannot simulate the communication overlap");
    if (!steps->isFaster()) {
      llvm::WithColor::warning(llvm::errs(), "titan-compile")
          << "parallelism.enable_async_tensor_parallel: on device "
          << device->name << " the step is predicted "
          << llvm::formatv("{0:F3}", steps->withSeconds * 1e3)
          << " ms with the tensor-parallel collective matmuls in chunks and "
          << llvm::formatv("{0:F3}", steps->withoutSeconds * 1e3)
          << " ms without; compiled without them "
             "(parallelism.async_tensor_parallel_chunks = K forces K "
             "chunks)\n";
      pipeline.asyncTensorParallel.reset();
    }
  }
  if (config && !pipelined &&
      failed(chooseBuckets(**module, pipeline, *config, *device, ranksPerNode)))
    return fail("cannot simulate the communication overlap");
  // What titan-tune reads: the configuration compiled, the prediction, and
  // (with the memory plan) the memory.
  llvm::json::Object summary;
  if (!summaryJson.empty() && modelFlops) {
    summary["world_size"] = mesh.getWorldSize();
    llvm::json::Object meshSizes;
    for (unsigned axis = 0; axis < NumMeshAxes; ++axis)
      meshSizes[getMeshAxisName(static_cast<MeshAxis>(axis))] =
          mesh.getSize(static_cast<MeshAxis>(axis));
    meshSizes["pp"] = mesh.getPipelineDegree();
    summary["mesh"] = std::move(meshSizes);
    summary["activation_checkpoint"] = llvm::json::Object{
        {"mode", config->activationCheckpoint.mode},
        {"selective_ac_option", config->activationCheckpoint.selectiveAcOption},
        {"fsdp_reshard_after_forward",
         config->parallelism.fsdpReshardAfterForward}};
    summary["device"] = llvm::json::Object{
        {"name", device->name}, {"memory_bytes", device->memoryBytes}};
  }
  // Under pipeline parallelism the prediction is the pipeline's
  // (writePipelineSummary, below).
  if (!summaryJson.empty() && modelFlops && !pipelined) {
    FailureOr<StepTimePrediction> predicted =
        predictStepTime(**module, *device, ranksPerNode, *modelFlops);
    if (failed(predicted))
      return fail("cannot predict the step time");
    summary["predicted"] = llvm::json::Object{
        {"step_seconds", predicted->getStepSeconds()},
        {"compute_seconds", predicted->step.compute},
        {"communication_seconds", predicted->step.communication},
        {"recompute_seconds", predicted->step.recompute},
        {"tokens_per_second_per_rank", predicted->tokensPerSecond},
        {"model_flops_per_token", modelFlops->getFlopsPerToken()},
        {"attention_layers", modelFlops->attentionLayers},
        {"mfu", predicted->mfu}};
  }
  auto writeSummary = [&]() -> bool {
    if (summaryJson.empty())
      return true;
    std::string message;
    auto file = openOutputFile(summaryJson, &message);
    if (!file) {
      fail(message);
      return false;
    }
    file->os() << llvm::formatv("{0:2}", llvm::json::Value(std::move(summary)))
               << "\n";
    file->keep();
    return true;
  };
  std::unique_ptr<llvm::ToolOutputFile> report;
  if (!planReport.empty()) {
    std::string message;
    report = openOutputFile(planReport, &message);
    if (!report)
      return fail(message);
  }
  // The programs of the job: the partitioned step, or every pipeline
  // rank's.
  SmallVector<ModuleOp> jobPrograms;
  for (OwningOpRef<ModuleOp> &program : pipelineModules)
    jobPrograms.push_back(*program);
  if (!pipelined)
    jobPrograms.push_back(**module);
  if (pipelined) {
    llvm::Expected<PipelineReport> built = writePipelineReports(
        pipelinePrograms, config->parallelism.pipelineParallelScheduleCsv,
        *device, ranksPerNode, mesh, modelFlops ? &*modelFlops : nullptr,
        report ? &report->os() : nullptr);
    if (!built)
      return fail(llvm::toString(built.takeError()));
    if (!summaryJson.empty() && modelFlops) {
      FailureOr<llvm::json::Object> predicted = summarizePipelinePrediction(
          *built, pipelineModules, *device, ranksPerNode, *modelFlops);
      if (failed(predicted))
        return fail("cannot predict the step time");
      summary["predicted"] = std::move(*predicted);
    }
    // Each pipeline rank's program before and after the overlap passes
    // (its own compute and communication; the pipeline's bubbles are the
    // schedule's, above).
    if (report || !overlapTrace.empty()) {
      SmallVector<OverlapTimeline> timelines;
      for (auto [program, built] :
           llvm::zip(pipelineModules, pipelinePrograms)) {
        FailureOr<OverlapComparison> overlap =
            compareOverlap(*program, pipeline, *device, ranksPerNode);
        if (failed(overlap))
          return fail("cannot simulate the communication overlap");
        if (report) {
          report->os() << "\n-- pipeline rank " << built.plan.rank << "\n";
          writeOverlapReport(*overlap, report->os());
        }
        timelines.push_back(overlap->after ? *overlap->after : overlap->before);
      }
      if (!overlapTrace.empty()) {
        std::string message;
        auto trace = openOutputFile(overlapTrace, &message);
        if (!trace)
          return fail(message);
        writeOverlapTrace(timelines, trace->os(), "pipeline rank");
        trace->keep();
      }
    }
  } else {
    if (report && failed(writePlanReport(**module, report->os())))
      return fail("cannot write the plan report");
    if (report && modelFlops &&
        failed(writeStepTimeReport(**module, *device, ranksPerNode, *modelFlops,
                                   report->os())))
      return fail("cannot write the predicted step time");
    // The step before and after titan-schedule-overlap.
    if (report || !overlapTrace.empty()) {
      FailureOr<OverlapComparison> overlap =
          compareOverlap(**module, pipeline, *device, ranksPerNode);
      if (failed(overlap))
        return fail("cannot simulate the communication overlap");
      if (report)
        writeOverlapReport(*overlap, report->os());
      if (!overlapTrace.empty()) {
        std::string message;
        auto trace = openOutputFile(overlapTrace, &message);
        if (!trace)
          return fail(message);
        writeOverlapTrace(overlap->after ? *overlap->after : overlap->before,
                          trace->os());
        trace->keep();
      }
    }
  }
  if (!checkpointLayout.empty()) {
    llvm::Expected<CheckpointPlan> plan = computeJobCheckpointPlan(jobPrograms);
    if (!plan)
      return fail(llvm::toString(plan.takeError()));
    std::string message;
    auto layout = openOutputFile(checkpointLayout, &message);
    if (!layout)
      return fail(message);
    printCheckpointPlan(*plan, layout->os());
    layout->keep();
  }
  if (stage >= PipelineStage::TrainStep && !exportWeights.empty()) {
    // The rest of the initial training state, under @train_step's argument
    // names: zero moments (shaped like their parameter, globally), step 0
    // and the configured learning rate.
    auto trainStep = (*module)->lookupSymbol<func::FuncOp>("train_step");
    for (unsigned i = 0; i < trainStep.getNumArguments(); ++i) {
      llvm::StringRef name =
          trainStep.getArgAttrOfType<StringAttr>(i, TitanDialect::kNameAttrName)
              .getValue();
      std::vector<int64_t> shape;
      float value = 0.0f;
      if (getArgRole(trainStep, i) == ArgRole::State) {
        const std::vector<int64_t> *paramShape =
            weights.shapeOf(name.split('.').second);
        if (!paramShape)
          return fail("no exported parameter for '" + name + "'");
        shape = *paramShape;
      } else if (name == "lr") {
        value = static_cast<float>(config->optimizer.lr);
      } else if (name != "step") {
        continue;
      }
      // Pure bf16 training holds its moments in bf16.
      ElementType type = getElementTypeOf(getElementTypeOrSelf(
                                              trainStep.getArgumentTypes()[i]))
                             .value_or(ElementType::F32);
      if (llvm::Error error =
              weights.writeFilled(name.str(), shape, value, type))
        return fail(llvm::toString(std::move(error)));
    }
  }
  if (!exportWeights.empty())
    if (llvm::Error error = weights.commit())
      return fail(llvm::toString(std::move(error)));

  // The validation programs of the job, for its memory plan and executable.
  SmallVector<OwningOpRef<ModuleOp>> validation;
  SmallVector<ModuleOp> validationPrograms;
  if (stage >= PipelineStage::MemoryPlan && config &&
      config->validation.enable) {
    llvm::Expected<SmallVector<OwningOpRef<ModuleOp>>> built =
        buildValidationPrograms(
            context, contents, options, *config, mesh, pipeline,
            pipelined ? &pipelinePrograms.front().plan : nullptr,
            backend == "cuda", timing);
    if (!built)
      return fail(llvm::toString(built.takeError()));
    validation = std::move(*built);
    for (OwningOpRef<ModuleOp> &program : validation)
      validationPrograms.push_back(*program);
  }
  if (stage == PipelineStage::Executable) {
    std::optional<JobMetrics> metrics;
    if (modelFlops && pipelined) {
      metrics = getJobMetrics(
          modelFlops->getFlopsPerToken(),
          getMatmulPeak(*device, pipelinePrograms.front().matmulType), *device);
    } else if (modelFlops) {
      FailureOr<StepTimePrediction> predicted =
          predictStepTime(**module, *device, ranksPerNode, *modelFlops);
      if (failed(predicted))
        return fail("cannot predict the step time");
      metrics = getJobMetrics(modelFlops->getFlopsPerToken(),
                              predicted->peakFlopsPerSecond, *device);
    }
    if (llvm::Error error = writeExecutable(
            jobPrograms, validationPrograms, pipeline, outputFile,
            report ? &report->os() : nullptr, device ? &*device : nullptr,
            summaryJson.empty() ? nullptr : &summary,
            config ? &*config : nullptr, metrics ? &*metrics : nullptr, timing))
      return fail(llvm::toString(std::move(error)));
    if (!writeSummary())
      return 1;
    if (llvm::Error error = buffers.commit())
      return fail(llvm::toString(std::move(error)));
    if (report)
      report->keep();
    llvm::errs() << "titan-compile: wrote " << outputFile << "/bin/train for "
                 << mesh.getWorldSize()
                 << (mesh.getWorldSize() == 1 ? " rank" : " ranks");
    if (pipelined)
      llvm::errs() << " (bin/train-pp0 to bin/train-pp"
                   << mesh.getPipelineDegree() - 1
                   << ": the programs of the pipeline ranks)";
    llvm::errs() << "\n";
    return 0;
  }
  // The memory plan alone: each program as planned, with the plan's
  // report and summary.
  if (stage == PipelineStage::MemoryPlan) {
    if (llvm::Error error = planJobMemory(
            jobPrograms, validationPrograms, pipeline,
            report ? &report->os() : nullptr, device ? &*device : nullptr,
            summaryJson.empty() ? nullptr : &summary, timing))
      return fail(llvm::toString(std::move(error)));
    if (pipelined && outputFile != "-")
      for (auto [rank, program] : llvm::enumerate(jobPrograms))
        if (llvm::Error error =
                writeProgram(program, getPipelineProgramPath(outputFile, rank)))
          return fail(llvm::toString(std::move(error)));
  }
  if (report)
    report->keep();
  if (!writeSummary())
    return 1;
  if (pipelined)
    return 0;

  if (llvm::Error error = writeProgram(**module, outputFile))
    return fail(llvm::toString(std::move(error)));
  return 0;
}

int main(int argc, char **argv) {
  // `titan-compile --fork-server SOCKET` (the test suite's, through
  // test/Inputs/forked_process.py): each request runs compileMain in a
  // process forked from this one, which has loaded LibTorch already.
  if (argc == 3 && llvm::StringRef(argv[1]) == "--fork-server")
    return runForkServer(argv[2], compileMain);
  exitSkippingStaticDestructors(compileMain(argc, argv));
}
