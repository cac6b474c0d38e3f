//===- titan-compile.cpp - titan's compiler driver ------------------------===//
//
// titan-compile MODEL.pt --emit=titan -o MODEL.mlir [--export-weights DIR]
//
// Imports a TorchScript model into the titan dialect. Later stages of the
// pipeline (train step, parallel plan, spmdize, lowering) extend --emit.
//
//===----------------------------------------------------------------------===//

#include "titan/Checkpoint/Layout.h"
#include "titan/Import/TorchScriptImporter.h"
#include "titan/InitAll.h"
#include "titan/Pipeline.h"
#include "titan/Report/PlanReport.h"
#include "titan/Support/Npy.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
using namespace mlir::titan;
namespace cl = llvm::cl;

static cl::opt<std::string>
    inputFile(cl::Positional,
              cl::desc("<model.pt | graph.ir (TorchScript textual IR)>"),
              cl::Required);
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("file"), cl::init("-"));

static cl::opt<PipelineStage>
    emit("emit", cl::desc("What to produce"), cl::init(PipelineStage::Forward),
         cl::values(clEnumValN(PipelineStage::Forward, "titan",
                               "the imported forward program (titan dialect)"),
                    clEnumValN(PipelineStage::TrainStep, "train-step",
                               "+ @train_step: loss, gradients, AdamW (needs "
                               "--config)"),
                    clEnumValN(PipelineStage::Spmd, "spmd",
                               "+ the parallel plan, placements and the "
                               "per-rank program (needs --config and "
                               "--world-size)")));
static cl::opt<int64_t>
    worldSize("world-size",
              cl::desc("Number of ranks to compile for (with --emit=spmd)"),
              cl::init(1));
static cl::opt<std::string>
    configFile("config", cl::desc("Training config (torchtitan-style TOML)"),
               cl::value_desc("file.toml"));
static cl::list<std::string>
    configOverrides("set",
                    cl::desc("Override a config value, e.g. "
                             "--set training.seq_len=64"),
                    cl::value_desc("section.key=value"));
static cl::opt<bool>
    emitGrads("emit-grads",
              cl::desc("With --emit=train-step, also return grad.<fqn>"));

static cl::opt<std::string>
    exportWeights("export-weights",
                  cl::desc("Write every parameter and buffer as "
                           "DIR/<name>.npy"),
                  cl::value_desc("DIR"));
static cl::list<std::string>
    inputShapes("input-shape",
                cl::desc("Shape of a model input, e.g. tokens=2x64xi64 "
                         "(needed for scripted modules)"),
                cl::value_desc("name=shape"));
static cl::opt<std::string>
    planReport("plan-report",
               cl::desc("With --emit=spmd, write the plan report (mesh, "
                        "placements, collectives) to this file ('-': "
                        "stdout)"),
               cl::value_desc("file"));
static cl::opt<std::string> checkpointLayout(
    "checkpoint-layout",
    cl::desc("With --emit=spmd, write the checkpoint plan (keys, global "
             "shapes, dtypes, the box each rank writes) to this file"),
    cl::value_desc("file"));
static cl::opt<bool>
    printSummary("summary",
                 cl::desc("Print parameter and op counts to stderr"));

/// The NPY dtype of an element type name of the importer.
static std::optional<NpyDType> npyTypeOf(llvm::StringRef elementType) {
  return llvm::StringSwitch<std::optional<NpyDType>>(elementType)
      .Case("f32", NpyDType::F32)
      .Case("f64", NpyDType::F64)
      .Case("f16", NpyDType::F16)
      .Case("bf16", NpyDType::U16) // numpy has no bf16: raw bits
      .Case("i64", NpyDType::I64)
      .Case("i32", NpyDType::I32)
      .Case("i1", NpyDType::Bool)
      .Default(std::nullopt);
}

/// Writes one imported tensor as DIR/<name>.npy.
static llvm::Error writeWeight(llvm::StringRef dir,
                               const ImportedTensor &weight) {
  if (weight.data.empty())
    return llvm::createStringError(
        "'" + weight.name +
        "' has no data in the model (a shape-only export); "
        "--export-weights needs a model saved with its weights");
  std::optional<NpyDType> dtype = npyTypeOf(weight.elementType);
  if (!dtype)
    return llvm::createStringError("'" + weight.name + "' has element type " +
                                   weight.elementType +
                                   ", which .npy cannot hold");
  NpyArray array;
  array.dtype = *dtype;
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
  /// Creates the staging directory.
  llvm::Error begin() {
    if (std::error_code error =
            llvm::sys::fs::create_directories(exportWeights))
      return llvm::createStringError("cannot create '" + exportWeights +
                                     "': " + error.message());
    staging = exportWeights;
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
  /// Writes a tensor of `shape` filled with `value` (optimizer state,
  /// scalars of the training state).
  llvm::Error writeFilled(const std::string &name,
                          llvm::ArrayRef<int64_t> shape, float value) {
    int64_t count = 1;
    for (int64_t d : shape)
      count *= d;
    std::vector<float> values(count, value);
    const char *bytes = reinterpret_cast<const char *>(values.data());
    return write(
        ImportedTensor{name, std::vector<int64_t>(shape.begin(), shape.end()),
                       "f32", std::vector<char>(bytes, bytes + count * 4)});
  }
  /// Moves the staged files into the export directory.
  llvm::Error commit() {
    for (const std::string &name : names) {
      llvm::SmallString<256> from(staging), to(exportWeights);
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
      auto role =
          function.getArgAttrOfType<StringAttr>(i, TitanDialect::kRoleAttrName);
      if (!role || role.getValue() != "param")
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

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "titan compiler driver\n");
  auto fail = [](const llvm::Twine &message) {
    llvm::WithColor::error(llvm::errs(), "titan-compile") << message << "\n";
    return 1;
  };

  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);

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
  WeightExport weights;
  if (!exportWeights.empty()) {
    if (llvm::Error error = weights.begin())
      return fail(llvm::toString(std::move(error)));
    options.onWeight = [&weights](const ImportedTensor &weight) {
      return weights.write(weight);
    };
  }

  // A file in TorchScript's textual graph IR ("graph(%x : ...):") is
  // imported as a bare graph; anything else is loaded as a saved module.
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(inputFile);
  if (!buffer)
    return fail("cannot read '" + inputFile +
                "': " + buffer.getError().message());
  llvm::StringRef contents = (*buffer)->getBuffer();
  std::optional<TrainConfig> config;
  if (!configFile.empty()) {
    llvm::Expected<TrainConfig> loaded =
        loadTrainConfig(configFile, configOverrides);
    if (!loaded)
      return fail(llvm::toString(loaded.takeError()));
    config = *loaded;
    // The model input (tokens) is [global batch, seq_len] unless given; as
    // in torchtitan, local_batch_size is per data-parallel rank, so the
    // global batch multiplies it by the data-parallel degrees of the world
    // the program is compiled for (titan-apply-parallel-plan validates them).
    const ParallelismConfig &parallelism = config->parallelism;
    int64_t dataParallel = 1;
    if (emit >= PipelineStage::Spmd) {
      int64_t others = parallelism.dataParallelReplicateDegree *
                       parallelism.contextParallelDegree *
                       parallelism.tensorParallelDegree *
                       parallelism.pipelineParallelDegree;
      int64_t shard = parallelism.dataParallelShardDegree;
      if (shard == -1 && others > 0)
        shard = worldSize / others;
      dataParallel =
          parallelism.dataParallelReplicateDegree * std::max<int64_t>(shard, 1);
    }
    options.defaultInput =
        InputSpec{{config->training.localBatchSize * dataParallel,
                   config->training.seqLen},
                  "i64"};
  } else if (!configOverrides.empty()) {
    return fail("--set needs --config");
  }
  if (emit >= PipelineStage::TrainStep && !config)
    return fail("--emit=train-step needs --config (the optimizer and "
                "training settings)");

  llvm::Expected<OwningOpRef<ModuleOp>> module =
      contents.ltrim().starts_with("graph(")
          ? importTorchScriptIR(context, contents, options)
          : importTorchScriptFile(context, inputFile, options);
  if (!module)
    return fail(llvm::toString(module.takeError()));
  if (printSummary) {
    summarize(**module);
    summarizeFolded(folded);
  }

  {
    // Without a config only the forward stage runs (checked above).
    TitanPipelineOptions pipeline =
        config ? pipelineOptionsFrom(*config, emit, emitGrads, worldSize)
               : TitanPipelineOptions{PipelineStage::Forward, {}, {}, {}};
    PassManager pm(&context);
    buildTitanPipeline(pm, pipeline);
    if (failed(pm.run(**module)))
      return fail("compilation failed (see the errors above)");
  }
  if (!planReport.empty()) {
    if (emit < PipelineStage::Spmd)
      return fail("--plan-report needs --emit=spmd");
    std::string message;
    auto report = openOutputFile(planReport, &message);
    if (!report)
      return fail(message);
    if (failed(writePlanReport(**module, report->os())))
      return fail("cannot write the plan report");
    report->keep();
  }
  if (!checkpointLayout.empty()) {
    if (emit < PipelineStage::Spmd)
      return fail("--checkpoint-layout needs --emit=spmd");
    FailureOr<CheckpointPlan> plan = computeCheckpointLayout(**module);
    if (failed(plan))
      return fail("cannot compute the checkpoint layout");
    std::string message;
    auto layout = openOutputFile(checkpointLayout, &message);
    if (!layout)
      return fail(message);
    printCheckpointPlan(*plan, layout->os());
    layout->keep();
  }
  if (emit >= PipelineStage::TrainStep && !exportWeights.empty()) {
    // The rest of the initial training state, under @train_step's argument
    // names: zero moments (shaped like their parameter, globally), step 0
    // and the configured learning rate.
    auto trainStep = (*module)->lookupSymbol<func::FuncOp>("train_step");
    for (unsigned i = 0; i < trainStep.getNumArguments(); ++i) {
      auto role = trainStep.getArgAttrOfType<StringAttr>(
          i, TitanDialect::kRoleAttrName);
      llvm::StringRef name =
          trainStep.getArgAttrOfType<StringAttr>(i, TitanDialect::kNameAttrName)
              .getValue();
      std::vector<int64_t> shape;
      float value = 0.0f;
      if (role.getValue() == "state") {
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
      if (llvm::Error error = weights.writeFilled(name.str(), shape, value))
        return fail(llvm::toString(std::move(error)));
    }
  }
  if (!exportWeights.empty())
    if (llvm::Error error = weights.commit())
      return fail(llvm::toString(std::move(error)));

  // Write to a temporary file and rename it only on success, so a failed
  // run never leaves a partial output.
  std::string message;
  auto output = openOutputFile(outputFile, &message);
  if (!output)
    return fail(message);
  (*module)->print(output->os());
  output->os() << "\n";
  output->keep();
  return 0;
}
