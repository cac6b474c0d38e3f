//===- Trainer.cpp - running a compiled training step ---------------------===//

#include "core/Trainer.h"

#include "core/LowPrecision.h"
#include "core/Metrics.h"
#include "core/StagedBatch.h"
#include "data/Tokenizer.h"

#include "titan/Checkpoint/Dcp.h"
#include "titan/Checkpoint/Safetensors.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Parallel.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <malloc.h>
#include <map>
#include <sys/resource.h>
#include <thread>

using namespace titan::rt;
using mlir::titan::DenseTensorRef;
using mlir::titan::ElementType;
using mlir::titan::IndexBox;
using mlir::titan::MutableDenseTensorRef;

namespace {

/// The checkpoint key and the state source of the data loader's position.
constexpr const char *kDataPositionKey = "dataloader.position";
constexpr const char *kDataPositionSource = "data_position";

/// The checkpoint dtype of a runtime dtype, if it has one.
std::optional<ElementType> torchDType(int32_t dtype) {
  switch (dtype) {
  case TITANRT_F32:
    return ElementType::F32;
  case TITANRT_F64:
    return ElementType::F64;
  case TITANRT_BF16:
    return ElementType::BF16;
  case TITANRT_F16:
    return ElementType::F16;
  case TITANRT_I64:
    return ElementType::I64;
  case TITANRT_I32:
    return ElementType::I32;
  case TITANRT_BOOL:
    return ElementType::I1;
  default:
    return std::nullopt;
  }
}

/// The runtime dtype of an .npy element type.
int32_t runtimeDType(ElementType dtype) {
  switch (dtype) {
  case ElementType::F32:
    return TITANRT_F32;
  case ElementType::F64:
    return TITANRT_F64;
  case ElementType::F16:
    return TITANRT_F16;
  case ElementType::I64:
    return TITANRT_I64;
  case ElementType::I32:
    return TITANRT_I32;
  case ElementType::I1:
    return TITANRT_BOOL;
  case ElementType::U16:
    return TITANRT_BF16; // titan writes bf16 as raw uint16 bits.
  default:
    return -1;
  }
}

/// The name of an .npy file's element type in the runtime's terms (bf16
/// for the raw uint16 bits titan writes bf16 as), or its own.
std::string fileDTypeName(ElementType dtype) {
  int32_t runtime = runtimeDType(dtype);
  return runtime >= 0 ? dtypeName(runtime)
                      : mlir::titan::stringifyElementType(dtype).str();
}

/// Bytes in use on the heap (glibc's mallinfo2).
int64_t heapInUse() { return static_cast<int64_t>(mallinfo2().uordblks); }

/// "12.3 MiB".
std::string formatBytes(int64_t bytes) {
  char text[32];
  if (bytes >= (int64_t(1) << 30))
    std::snprintf(text, sizeof(text), "%.2f GiB", bytes / double(1 << 30));
  else if (bytes >= (1 << 20))
    std::snprintf(text, sizeof(text), "%.2f MiB", bytes / double(1 << 20));
  else if (bytes >= (1 << 10))
    std::snprintf(text, sizeof(text), "%.2f KiB", bytes / double(1 << 10));
  else
    std::snprintf(text, sizeof(text), "%lld B", static_cast<long long>(bytes));
  return text;
}

/// A zero-filled tensor of `dtype` and `shape`: where an uneven shard's
/// chunk is staged between its padded buffer and a checkpoint.
mlir::titan::DenseTensor makeStagingTensor(ElementType dtype,
                                           llvm::ArrayRef<int64_t> shape) {
  mlir::titan::DenseTensor tensor{dtype, llvm::SmallVector<int64_t>(shape), {}};
  tensor.data.resize(tensor.numElements() *
                     mlir::titan::getElementTypeSize(dtype));
  return tensor;
}

/// `tensor` converted to the float type `dtype` (rounded to nearest even):
/// an exported checkpoint's tensor, or one read from it.
mlir::titan::DenseTensor convertFloats(const mlir::titan::DenseTensor &tensor,
                                       ElementType dtype) {
  mlir::titan::DenseTensor converted = makeStagingTensor(dtype, tensor.shape);
  bool converts = mlir::titan::convertElements(tensor.dtype, tensor.data.data(),
                                               dtype, converted.data.data(),
                                               size_t(tensor.numElements()));
  assert(converts && "float types convert into each other");
  (void)converts;
  return converted;
}

/// Copies `box` (an uneven shard's chunk) into the first part of `shard`
/// (its padded buffer) and zeroes the padding.
void copyIntoPadded(const mlir::titan::DenseTensor &box,
                    MutableDenseTensorRef shard) {
  std::fill(shard.data.begin(), shard.data.end(), 0);
  IndexBox region{llvm::SmallVector<int64_t>(box.shape.size(), 0), box.shape};
  IndexBox padded{region.offsets, llvm::SmallVector<int64_t>(shard.shape)};
  mlir::titan::copyRegion(box, region, shard, padded, region);
}

/// A counter-based generator: the same numbers for a global element
/// whatever the parallel layout (SplitMix64 of the element's key).
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// A standard normal number for (key, index), truncated to [-2, 2]
/// standard deviations by drawing again (Box-Muller on uniform pairs).
double normal(uint64_t key, int64_t index) {
  for (uint64_t attempt = 0;; ++attempt) {
    uint64_t a = mix(key ^ mix(uint64_t(index) * 2654435761ULL + attempt));
    uint64_t b = mix(a);
    double u = (double(a >> 11) + 0.5) * 0x1p-53;
    double v = (double(b >> 11) + 0.5) * 0x1p-53;
    double z = std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * M_PI * v);
    if (std::abs(z) <= 2.0)
      return z;
  }
}

/// Calls `body(begin, end)` over contiguous chunks of [0, count) of at
/// least 64 Ki elements, in parallel on LLVM's executor (the rank's
/// threads: titanrt_main sets llvm::parallel::strategy).
void forEachChunk(int64_t count,
                  llvm::function_ref<void(int64_t, int64_t)> body) {
  constexpr int64_t kMinChunk = 1 << 16;
  int64_t chunks = std::max<int64_t>(1, count / kMinChunk);
  llvm::parallelFor(0, chunks, [&](size_t chunk) {
    body(count * chunk / chunks, count * (chunk + 1) / chunks);
  });
}

} // namespace

//===----------------------------------------------------------------------===//
// BatchSource
//===----------------------------------------------------------------------===//

Status BatchSource::open(const std::string &folder,
                         const ProgramDescription &program) {
  for (const TensorPlace &argument : program.arguments) {
    if (argument.role != "input" || !argument.shape.size() ||
        !program.inputs.count(argument.name))
      continue;
    // The token ids are `tokens.npy` whatever the model calls its input
    // (docs/runtime.md), or the input's own name.
    std::string path = folder + "/" + argument.name + ".npy";
    const TensorPlace *tokens = program.findTokenInput();
    if (tokens && tokens->name == argument.name && !llvm::sys::fs::exists(path))
      path = folder + "/tokens.npy";
    llvm::Expected<mlir::titan::MappedNpy> file = mlir::titan::mapNpy(path);
    if (!file)
      return Status::io("cannot read the batch: " +
                        llvm::toString(file.takeError()));
    const std::vector<int64_t> &global =
        program.inputs.at(argument.name).globalShape;
    llvm::ArrayRef<int64_t> shape = file->shape;
    if (shape.size() == global.size() + 1)
      shape = shape.drop_front();
    if (shape != llvm::ArrayRef<int64_t>(global) ||
        runtimeDType(file->dtype) != argument.dtype)
      return Status::invalidArgument(
          path + " is " + fileDTypeName(file->dtype) + " " +
          formatShape(file->shape) + "; the program reads " +
          dtypeName(argument.dtype) + " " + formatShape(global) +
          " per step (or [steps, ...] of it): compile for this batch "
          "(training.local_batch_size, training.seq_len) or write the "
          "batch with that shape");
    files.emplace(argument.name, std::move(*file));
  }
  return Status::success();
}

Status BatchSource::read(const std::string &name, int64_t step, int64_t rank,
                         const ProgramDescription &program,
                         uint8_t *target) const {
  const mlir::titan::MappedNpy &file = files.at(name);
  const InputLayout &layout = program.inputs.at(name);
  const TensorPlace *argument = program.findArgument(name);
  ElementType dtype = *torchDType(argument->dtype);
  int64_t batchBytes = int64_t(dtypeSize(argument->dtype));
  for (int64_t d : layout.globalShape)
    batchBytes *= d;
  int64_t batches = int64_t(file.data.size()) / batchBytes;
  llvm::StringRef batch =
      file.data.substr((step % batches) * batchBytes, batchBytes);
  TITANRT_RETURN_IF_ERROR(
      checkIdRange(name, step % batches, layout, argument->dtype, batch));
  DenseTensorRef source(dtype, layout.globalShape, batch);
  MutableDenseTensorRef local(
      dtype, argument->shape,
      llvm::MutableArrayRef<char>(reinterpret_cast<char *>(target),
                                  argument->bytes));
  copyBox(source, layout.boxes[rank], layout, local);
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Trainer
//===----------------------------------------------------------------------===//

std::string titan::rt::checkpointFolderOf(const std::string &root,
                                          int64_t step) {
  llvm::SmallString<256> folder(root);
  llvm::sys::path::append(folder, "step-" + std::to_string(step));
  return std::string(folder);
}

std::vector<int64_t> titan::rt::listCheckpointSteps(const std::string &root) {
  std::vector<int64_t> steps;
  std::error_code error;
  for (llvm::sys::fs::directory_iterator entry(root, error), end;
       !error && entry != end; entry.increment(error)) {
    llvm::StringRef name = llvm::sys::path::filename(entry->path());
    int64_t step;
    if (!name.consume_front("step-") || name.getAsInteger(10, step) || step < 0)
      continue;
    // Only a committed checkpoint counts: .metadata is written last.
    llvm::SmallString<256> metadata(entry->path());
    llvm::sys::path::append(metadata, ".metadata");
    if (llvm::sys::fs::exists(metadata))
      steps.push_back(step);
  }
  llvm::sort(steps);
  return steps;
}

namespace {
std::atomic<int> stopSignal{0};

extern "C" void recordStopSignal(int signal) { stopSignal.store(signal); }
} // namespace

int titan::rt::getStopSignal() { return stopSignal.load(); }

void titan::rt::installTrainingSignalHandlers() {
  struct sigaction action = {};
  action.sa_handler = recordStopSignal;
  sigemptyset(&action.sa_mask);
  for (int signal : {SIGINT, SIGTERM})
    sigaction(signal, &action, nullptr);
}

/// A checkpoint written on a background thread from a snapshot of the
/// state, while training goes on (`async_mode = "async"`).
class Trainer::AsyncSave {
public:
  /// Snapshots `trainer`'s state (allocated once, reused by later saves).
  explicit AsyncSave(int64_t stateBytes) : snapshot(stateBytes) {}
  ~AsyncSave() { (void)wait(); }

  /// Waits for the running save, if any; returns its outcome.
  Status wait() {
    if (thread.joinable())
      thread.join();
    Status outcome = std::move(result);
    result = Status::success();
    return outcome;
  }

  /// Starts writing `kind`'s checkpoint of `trainer` into `folder` from a
  /// snapshot of its host mirror's state taken now (downloaded first).
  void start(Trainer &trainer, const RunOptions &options, std::string folder,
             SaveKind kind) {
    std::memcpy(snapshot.data(), trainer.regions.getBase(Region::State),
                snapshot.size());
    float step = trainer.stepValue;
    int64_t position = trainer.dataPosition;
    thread =
        std::thread([this, &trainer, &options, folder, kind, step, position] {
          result =
              trainer.writeCheckpoint(options, folder, kind, snapshot.data(),
                                      step, position, trainer.saver);
        });
  }

private:
  std::vector<uint8_t> snapshot;
  std::thread thread;
  Status result;
};

Trainer::Trainer(const ProgramDescription &program, titanrt_step_function step,
                 titanrt_context &context, int64_t rank, Communicator &control,
                 Communicator &saver, RankProgress &progress,
                 std::unique_ptr<StepMemory> memory, Validator *validator)
    : program(program), step(step), validator(validator), context(context),
      rank(rank), control(control), saver(saver), progress(progress),
      memory(std::move(memory)) {}

Trainer::~Trainer() = default;

llvm::Expected<MutableDenseTensorRef> Trainer::shardOf(llvm::StringRef source,
                                                       uint8_t *stateBase,
                                                       float &stepSlot,
                                                       int64_t &positionSlot) {
  if (source == "step")
    return MutableDenseTensorRef(
        ElementType::F32, {},
        llvm::MutableArrayRef<char>(reinterpret_cast<char *>(&stepSlot),
                                    sizeof(stepSlot)));
  if (source == kDataPositionSource)
    return MutableDenseTensorRef(
        ElementType::I64, {},
        llvm::MutableArrayRef<char>(reinterpret_cast<char *>(&positionSlot),
                                    sizeof(positionSlot)));
  const TensorPlace *argument = program.findArgument(source.str());
  if (!argument || argument->region != Region::State)
    return llvm::createStringError("the program holds no state tensor '" +
                                   source + "'");
  std::optional<ElementType> dtype = torchDType(argument->dtype);
  if (!dtype)
    return llvm::createStringError("'" + source + "' has element type " +
                                   dtypeName(argument->dtype) +
                                   ", which checkpoints cannot hold");
  return MutableDenseTensorRef(
      *dtype, argument->shape,
      llvm::MutableArrayRef<char>(
          reinterpret_cast<char *>(stateBase + argument->offset),
          argument->bytes));
}

Status Trainer::loadCheckpoint(const std::string &folder, bool modelOnly,
                               bool restartData) {
  llvm::Expected<mlir::titan::DcpReader> reader =
      mlir::titan::DcpReader::open(folder);
  if (!reader)
    return Status::io("cannot load checkpoint '" + folder +
                      "': " + llvm::toString(reader.takeError()));
  // What this checkpoint is asked for: the model alone (an initial
  // checkpoint, or a job's last save with last_save_model_only), or
  // everything; a checkpoint without the data position (PyTorch's, or a
  // titan run on .npy batches) starts the data where the step puts it.
  // Buffers come from the model file, whatever the checkpoint holds: the
  // program was compiled for its values (a causal mask proven causal).
  mlir::titan::CheckpointPlan wanted = plan;
  llvm::erase_if(wanted.tensors, [&](const mlir::titan::PlanTensor &tensor) {
    return tensor.kind == mlir::titan::PlanTensorKind::Buffer ||
           (modelOnly && !isModelTensor(tensor));
  });
  if (modelOnly)
    wanted.values.clear();
  const mlir::titan::DcpMetadata &metadata = reader->getMetadata();
  bool hasPosition = !restartData && (llvm::is_contained(metadata.bytesEntries,
                                                         kDataPositionKey) ||
                                      metadata.tensors.count(kDataPositionKey));
  llvm::erase_if(wanted.values, [&](const mlir::titan::PlanValue &value) {
    return value.key == kDataPositionKey && !hasPosition;
  });
  // A tensor saved in another float dtype (export_dtype, a float32 run
  // resumed in pure bf16) is converted as it loads. An uneven shard loads
  // its box into a staging tensor, then into (the first part of) its
  // buffer.
  uint8_t *state = regions.getBase(Region::State);
  std::map<std::string, mlir::titan::DenseTensor> staged;
  auto destination = [&](llvm::StringRef source, ElementType dtype,
                         llvm::ArrayRef<int64_t> shape)
      -> llvm::Expected<MutableDenseTensorRef> {
    llvm::Expected<MutableDenseTensorRef> shard =
        shardOf(source, state, stepValue, dataPosition);
    if (!shard || (shard->shape == shape && shard->dtype == dtype))
      return shard;
    mlir::titan::DenseTensor &box = staged[source.str()];
    box = makeStagingTensor(dtype, shape);
    return MutableDenseTensorRef(box);
  };
  if (llvm::Error error =
          mlir::titan::loadPlanRank(*reader, wanted, rank, destination))
    return Status::io("cannot load checkpoint '" + folder +
                      "': " + llvm::toString(std::move(error)));
  for (const auto &[source, box] : staged)
    copyIntoPadded(
        box, llvm::cantFail(shardOf(source, state, stepValue, dataPosition)));
  if (modelOnly) {
    stepValue = 0;
    dataPosition = 0;
  }
  stepsDone = static_cast<int64_t>(stepValue);
  if (!modelOnly && !hasPosition && windows)
    dataPosition = restartData ? 0 : windows->next(0) * stepsDone;
  return Status::success();
}

bool Trainer::isModelTensor(const mlir::titan::PlanTensor &tensor) const {
  if (tensor.kind != mlir::titan::PlanTensorKind::State)
    return true;
  const TensorPlace *argument = program.findArgument(tensor.source);
  return argument && argument->role == "param";
}

Status Trainer::loadBuffers(const std::string &folder) {
  for (const TensorPlace &argument : program.arguments) {
    if (argument.role != "buffer")
      continue;
    std::string path = folder + "/" + argument.name + ".npy";
    llvm::Expected<mlir::titan::MappedNpy> file = mlir::titan::mapNpy(path);
    if (!file)
      return Status::io("cannot read buffer '" + argument.name +
                        "': " + llvm::toString(file.takeError()));
    // Buffers are replicated: every rank holds the whole tensor.
    if (llvm::ArrayRef<int64_t>(file->shape) !=
            llvm::ArrayRef<int64_t>(argument.shape) ||
        runtimeDType(file->dtype) != argument.dtype)
      return Status::invalidArgument(
          path + " is " + fileDTypeName(file->dtype) + " " +
          formatShape(file->shape) + ", the program reads " +
          dtypeName(argument.dtype) + " " + formatShape(argument.shape));
    std::memcpy(regions.address(argument), file->data.data(), argument.bytes);
  }
  return Status::success();
}

void Trainer::initialize(uint64_t seed) {
  // The defaults of the projects models come from, by the name and rank of
  // each parameter: biases 0, norm scales (rank 1) 1, torchtitan's token
  // embeddings (`tok_embeddings`, untied from its output projection)
  // N(0, 1), other weights N(0, 0.02) (Hugging Face's initializer_range
  // and nanoGPT's, embeddings included: GPT-2's wte is also its output
  // projection, whose logits N(0, 1) would blow up), truncated at 2
  // standard deviations. Each global element's value depends only on the
  // seed, the parameter's name and the element's global index, so every
  // parallel layout starts from the same model.
  // Parameters of any float dtype (pure bf16 training holds them in bf16)
  // draw the same float32 values, rounded to their dtype once.
  for (const TensorPlace &argument : program.arguments) {
    std::optional<ElementType> dtype = torchDType(argument.dtype);
    if (argument.role != "param" || !dtype ||
        !mlir::titan::isFloatElementType(*dtype))
      continue;
    const mlir::titan::PlanTensor *tensor = nullptr;
    for (const mlir::titan::PlanTensor &candidate : plan.tensors)
      if (candidate.source == argument.name && candidate.boxes[rank].held)
        tensor = &candidate;
    if (!tensor)
      continue;
    void *data = regions.address(argument);
    llvm::StringRef name = argument.name;
    bool isBias = name.ends_with("bias");
    double std = name.contains("tok_embeddings") ? 1.0 : 0.02;
    uint64_t key = mix(seed ^ llvm::xxh3_64bits(name));
    const IndexBox &box = tensor->boxes[rank].box;
    forEachChunk(argument.numElements(), [&](int64_t begin, int64_t end) {
      std::vector<float> values(end - begin);
      for (int64_t local = begin; local < end; ++local) {
        // The element's global row-major index; the padding of an uneven
        // shard (past the box) holds zero.
        int64_t rest = local, global = 0, stride = 1;
        bool padding = false;
        for (int64_t d = int64_t(box.sizes.size()) - 1; d >= 0; --d) {
          int64_t index = rest % argument.shape[d];
          rest /= argument.shape[d];
          padding |= index >= box.sizes[d];
          global += (index + box.offsets[d]) * stride;
          stride *= tensor->shape[d];
        }
        values[local - begin] = padding || isBias ? 0.0f
                                : argument.shape.size() == 1
                                    ? 1.0f
                                    : float(std * normal(key, global));
      }
      mlir::titan::convertElements(
          ElementType::F32, values.data(), *dtype,
          static_cast<char *>(data) +
              begin * mlir::titan::getElementTypeSize(*dtype),
          size_t(end - begin));
    });
  }
}

Status Trainer::openData(const RunOptions &options) {
  if (!options.dataFolder.empty()) {
    batches = std::make_unique<BatchSource>();
    return batches->open(options.dataFolder, program);
  }
  if (options.datasetPath.empty())
    return Status::invalidArgument(
        "no training data: set [training] dataset_path (text or token ids, "
        "docs/data.md), or pass --data DIR with tokens.npy and labels.npy");
  TITANRT_RETURN_IF_ERROR(staged.open(program, rank));
  TITANRT_RETURN_IF_ERROR(staged.openDataset(
      options.datasetPath, options.tokenizerPath, tokenStream, windows));
  // The position goes into the checkpoint beside the step.
  plan.values.push_back(mlir::titan::PlanValue{
      kDataPositionKey, kDataPositionSource, ElementType::I64});
  if (rank == 0)
    std::printf("data: %s\n", tokenStream->getDescription().c_str());
  return Status::success();
}

Status Trainer::prepare(const RunOptions &options) {
  llvm::Expected<mlir::titan::CheckpointPlan> parsed =
      mlir::titan::readCheckpointPlan(options.checkpointPlanFile);
  if (!parsed)
    return Status::invalidArgument(
        llvm::toString(parsed.takeError()) +
        " (titan-compile writes OUT/checkpoint-plan.txt beside OUT/bin/; "
        "--checkpoint-plan FILE names another)");
  plan = std::move(*parsed);
  if (plan.numRanks != program.getWorldSize())
    return Status::invalidArgument(
        "checkpoint plan '" + options.checkpointPlanFile + "' is for " +
        std::to_string(plan.numRanks) + " ranks, this program runs on " +
        std::to_string(program.getWorldSize()) +
        " (use the checkpoint-plan.txt titan-compile wrote with it)");
  TITANRT_RETURN_IF_ERROR(regions.allocate(program));
  TITANRT_RETURN_IF_ERROR(memory->allocate(program, regions));
  TITANRT_RETURN_IF_ERROR(loadBuffers(options.buffersFolder));
  TITANRT_RETURN_IF_ERROR(openData(options));
  if (validator)
    TITANRT_RETURN_IF_ERROR(validator->open(program, options));
  // A Hugging Face save that cannot be made fails now, not after training.
  if (options.checkpoint.enable && options.checkpoint.lastSaveInHf)
    TITANRT_RETURN_IF_ERROR(checkHfSaveSettings(options));
  TITANRT_RETURN_IF_ERROR(fillState(options));
  TITANRT_RETURN_IF_ERROR(fillParameterCopies());
  // The buffers and the state, filled in the host mirror, go to the step.
  return memory->upload(Region::State, 0, regions.getBytes(Region::State));
}

Status Trainer::fillState(const RunOptions &options) {
  const mlir::titan::CheckpointConfig &checkpoint = options.checkpoint;
  bool restartData =
      llvm::is_contained(checkpoint.excludeFromLoading, "dataloader");
  if (!options.loadCheckpoint.empty())
    return loadCheckpoint(options.loadCheckpoint, /*modelOnly=*/false,
                          restartData);
  // A seed checkpoint is the seeded model, whatever the folder holds.
  if (checkpoint.createSeedCheckpoint) {
    initialize(options.seed);
    return Status::success();
  }
  // A job resumes from its own newest checkpoint (or load_step's).
  if (checkpoint.enable) {
    std::string root = checkpointRoot(options);
    std::vector<int64_t> steps = listCheckpointSteps(root);
    std::optional<int64_t> resumeStep;
    if (checkpoint.loadStep >= 0) {
      if (!llvm::is_contained(steps, checkpoint.loadStep))
        return Status::invalidArgument(
            "[checkpoint] load_step = " + std::to_string(checkpoint.loadStep) +
            ": " + root + " holds no complete checkpoint of that step" +
            (steps.empty()
                 ? std::string()
                 : " (it holds step " +
                       llvm::join(llvm::map_range(steps,
                                                  [](int64_t step) {
                                                    return std::to_string(step);
                                                  }),
                                  ", ") +
                       ")"));
      resumeStep = checkpoint.loadStep;
    } else if (!steps.empty()) {
      resumeStep = steps.back();
    }
    if (resumeStep) {
      std::string folder = checkpointFolderOf(root, *resumeStep);
      if (rank == 0)
        std::printf("resuming from %s\n", folder.c_str());
      // The last save of a finished job may hold the model only; step-0
      // (a seed checkpoint) starts the job from its model, as torchtitan
      // loads it.
      llvm::Expected<mlir::titan::DcpReader> reader =
          mlir::titan::DcpReader::open(folder);
      bool modelOnly =
          *resumeStep == 0 ||
          (reader && !reader->getMetadata().tensors.empty() &&
           !llvm::is_contained(reader->getMetadata().bytesEntries,
                               "train_state.step") &&
           !reader->getMetadata().tensors.count("train_state.step"));
      if (!reader)
        llvm::consumeError(reader.takeError());
      TITANRT_RETURN_IF_ERROR(loadCheckpoint(folder, modelOnly, restartData));
      if (modelOnly && *resumeStep > 0) {
        // Its folder says which step it is.
        stepsDone = *resumeStep;
        stepValue = float(stepsDone);
        if (!isComplete(options))
          return Status::invalidArgument(
              folder +
              " holds the model only (last_save_model_only) and no optimizer "
              "state, so training cannot resume from it: raise "
              "training.steps only with a full checkpoint (set "
              "checkpoint.last_save_model_only = false)");
      }
      return Status::success();
    }
  }
  if (!checkpoint.initialLoadPath.empty()) {
    if (checkpoint.initialLoadInHf) {
      if (rank == 0)
        std::printf("starting from Hugging Face weights %s\n",
                    checkpoint.initialLoadPath.c_str());
      return loadHfModel(options, checkpoint.initialLoadPath);
    }
    if (rank == 0)
      std::printf("starting from %s%s\n", checkpoint.initialLoadPath.c_str(),
                  checkpoint.initialLoadModelOnly ? " (model only)" : "");
    return loadCheckpoint(checkpoint.initialLoadPath,
                          checkpoint.initialLoadModelOnly, restartData);
  }
  initialize(options.seed);
  return Status::success();
}

Status Trainer::fillParameterCopies() {
  for (const TensorPlace &copy : program.arguments) {
    if (copy.role != "param_copy")
      continue;
    // parseProgramDescription checked the pair.
    const TensorPlace *param = program.findCopiedArgument(copy);
    const float *source =
        reinterpret_cast<const float *>(regions.address(*param));
    uint8_t *target = regions.address(copy);
    forEachChunk(copy.numElements(), [&](int64_t begin, int64_t end) {
      narrowFloats(copy.dtype, source, target, begin, end);
    });
  }
  return Status::success();
}

Status Trainer::downloadPlaces(llvm::ArrayRef<const TensorPlace *> places) {
  for (const TensorPlace *place : places)
    if (place)
      TITANRT_RETURN_IF_ERROR(
          memory->download(place->region, place->offset, place->bytes));
  return memory->synchronize();
}

Status Trainer::downloadResults() {
  std::vector<const TensorPlace *> places;
  for (const TensorPlace &result : program.results)
    places.push_back(&result);
  return downloadPlaces(places);
}

Status Trainer::downloadState() {
  TITANRT_RETURN_IF_ERROR(
      memory->download(Region::State, 0, regions.getBytes(Region::State)));
  return memory->synchronize();
}

bool Trainer::isComplete(const RunOptions &options) const {
  return !options.runSteps && stepsDone >= options.steps;
}

Status Trainer::readInputs(const RunOptions &options) {
  if (windows) {
    staged.read(*windows, dataPosition);
    TITANRT_RETURN_IF_ERROR(staged.write(stepsDone, regions));
  }
  for (const TensorPlace &argument : program.arguments) {
    if (argument.role != "input")
      continue;
    uint8_t *target = regions.address(argument);
    if (argument.name == "lr" || argument.name == "step") {
      float value = argument.name == "lr"
                        ? float(options.learningRate *
                                options.lrSchedule.factor(stepsDone))
                        : float(stepsDone);
      std::memcpy(target, &value, sizeof(value));
      continue;
    }
    if (batches)
      TITANRT_RETURN_IF_ERROR(
          batches->read(argument.name, stepsDone, rank, program, target));
  }
  return Status::success();
}

std::string Trainer::findNonFiniteResult() const {
  for (const TensorPlace &result : program.results) {
    if (result.name == "loss")
      continue;
    const uint8_t *data = regions.address(result);
    int64_t count = result.numElements();
    for (int64_t i = 0; i < count; ++i) {
      float value;
      if (result.dtype == TITANRT_F32)
        std::memcpy(&value, data + 4 * i, 4);
      else if (result.dtype == TITANRT_BF16) {
        uint16_t bits;
        std::memcpy(&bits, data + 2 * i, 2);
        value = bf16ToFloat(bits);
      } else if (result.dtype == TITANRT_F16) {
        _Float16 half;
        std::memcpy(&half, data + 2 * i, 2);
        value = float(half);
      } else {
        break;
      }
      if (!std::isfinite(value))
        return result.name + " (element " + std::to_string(i) + ": " +
               llvm::formatv("{0}", value).str() + ")";
    }
  }
  return "";
}

titanrt_status Trainer::callStep(titanrt_step_function function) {
  titanrt_status status = function(&context, memory->getStepBase(Region::Arena),
                                   memory->getStepBase(Region::State),
                                   memory->getStepBase(Region::Inputs));
  if (context.tracer)
    context.tracer->stepReturned();
  // A step that returned early (or never waited) may have left
  // asynchronous collectives queued. After a failed step, the step's own
  // error is the one to report.
  if (Status drained = context.async.drain(context.tracer);
      !drained.ok() && status == TITANRT_OK)
    status = context.fail(drained);
  return status;
}

Status Trainer::completeSends(const std::string &what) {
  for (std::unique_ptr<Communicator> &communicator : context.communicators)
    if (Status sent = communicator->completeSends(); !sent.ok())
      return Status(sent.getCode(), what + ": " + sent.getMessage());
  return Status::success();
}

Status Trainer::validate(MetricsLog &log) {
  progress.setPhase(RankPhase::Validating);
  auto start = std::chrono::steady_clock::now();
  auto [inputOffset, inputBytes] = validator->getInputRange();
  const TensorPlace &loss = validator->getLoss();
  double sum = 0;
  for (int64_t batch = 0; batch < validator->getBatches(); ++batch) {
    std::string what = "the validation after step " +
                       std::to_string(stepsDone) + ", batch " +
                       std::to_string(batch + 1);
    TITANRT_RETURN_IF_ERROR(validator->writeBatch(batch, regions));
    TITANRT_RETURN_IF_ERROR(
        memory->upload(Region::Inputs, inputOffset, inputBytes));
    titanrt_status status = callStep(validator->getStep());
    if (status == TITANRT_OK)
      TITANRT_RETURN_IF_ERROR(completeSends(what));
    if (status == TITANRT_OK)
      if (Status fetched = downloadPlaces({&loss}); !fetched.ok())
        status = context.fail(fetched);
    if (status != TITANRT_OK)
      return Status(status, what + ": " + context.lastError);
    float value;
    std::memcpy(&value, regions.address(loss), sizeof(value));
    sum += value;
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  // torchtitan's: the mean over the batches of each batch's mean token
  // loss (every rank holds the same).
  log.validation(stepsDone, sum / double(validator->getBatches()),
                 validator->getBatches(), validator->getTokens(), seconds);
  progress.setPhase(RankPhase::BetweenSteps);
  return Status::success();
}

Status Trainer::train(const RunOptions &options, StopReason &stopped) {
  stopped = StopReason::None;
  if (options.checkpoint.createSeedCheckpoint) {
    // torchtitan's seed checkpoint: step-0, saved as the job's last save
    // is, and no step.
    TITANRT_RETURN_IF_ERROR(saveStepCheckpoint(options, /*last=*/true));
    if (asyncSave)
      TITANRT_RETURN_IF_ERROR(asyncSave->wait());
    if (rank == 0)
      std::printf("created the seed checkpoint %s\n",
                  checkpointFolderOf(checkpointRoot(options), 0).c_str());
    return Status::success();
  }
  const TensorPlace *loss = program.findResult("loss");
  const TensorPlace *gradNorm = program.findResult("grad_norm");
  int64_t tokensPerStep = 0;
  if (const TensorPlace *tokens = program.findTokenInput();
      tokens && program.inputs.count(tokens->name)) {
    tokensPerStep = 1;
    for (int64_t d : program.inputs.at(tokens->name).globalShape)
      tokensPerStep *= d;
  }
  int64_t lastStep =
      options.runSteps ? stepsDone + *options.runSteps : options.steps;
  MetricsLog log(options, rank == 0, program.getWorldSize(), tokensPerStep,
                 regions.getBytes(Region::Arena), lastStep);
  TITANRT_RETURN_IF_ERROR(log.open());
  int64_t firstStep = stepsDone;
  const mlir::titan::CheckpointConfig &checkpoint = options.checkpoint;
  while (stepsDone < lastStep) {
    // The first step warms up (communication buffers, thread stacks); from
    // then on a step must not allocate.
    if (stepsDone == firstStep + 1)
      heapBeforeSteps = heapInUse();
    bool profiled = options.profiling.enableProfiling &&
                    (stepsDone + 1) % options.profiling.profileFreq == 0;
    if (profiled) {
      if (!tracer) {
        std::vector<std::string> names;
        for (const std::vector<int> &axes : program.communicators)
          names.push_back(llvm::join(
              llvm::map_range(
                  axes, [&](int axis) { return program.mesh.axisNames[axis]; }),
              ","));
        tracer = std::make_unique<Tracer>(std::move(names));
      }
      tracer->begin(stepsDone + 1);
      context.tracer = tracer.get();
    }
    progress.setStep(stepsDone + 1, RankPhase::ReadingBatch);
    {
      TraceScope trace(context.tracer, "read the batch", "data");
      TITANRT_RETURN_IF_ERROR(readInputs(options));
      TITANRT_RETURN_IF_ERROR(
          memory->upload(Region::Inputs, 0, regions.getBytes(Region::Inputs)));
    }
    double learningRate =
        options.learningRate * options.lrSchedule.factor(stepsDone);
    progress.setPhase(RankPhase::Computing);
    auto start = std::chrono::steady_clock::now();
    titanrt_status status = callStep(step);
    if (status == TITANRT_OK)
      TITANRT_RETURN_IF_ERROR(
          completeSends("step " + std::to_string(stepsDone + 1)));
    // The scalars the loop reads come back to the host mirror; the step is
    // done once they are.
    if (status == TITANRT_OK)
      if (Status fetched = downloadPlaces({loss, gradNorm}); !fetched.ok())
        status = context.fail(fetched);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    progress.setPhase(RankPhase::BetweenSteps);
    if (profiled) {
      context.tracer = nullptr;
      llvm::SmallString<256> folder(options.dumpFolder);
      llvm::sys::path::append(folder, options.profiling.saveTracesFolder);
      TITANRT_RETURN_IF_ERROR(tracer->finish(std::string(folder), rank));
    }
    if (status != TITANRT_OK)
      return Status(status, "step " + std::to_string(stepsDone + 1) + ": " +
                                context.lastError);
    float value = NAN;
    if (loss)
      std::memcpy(&value, regions.address(*loss), sizeof(value));
    // Every rank holds the same loss, so all stop at the same step.
    if (loss && !std::isfinite(value)) {
      TITANRT_RETURN_IF_ERROR(downloadResults());
      std::string where = findNonFiniteResult();
      if (rank == 0)
        std::fprintf(stderr,
                     "titan: step %lld: the loss is %s; the first "
                     "non-finite tensor it computed is %s. The state before "
                     "this step is in the last checkpoint.\n",
                     static_cast<long long>(stepsDone + 1),
                     llvm::formatv("{0}", value).str().c_str(),
                     where.empty() ? "none but the loss" : where.c_str());
      stopped = StopReason::NonFinite;
      return Status::success();
    }
    ++stepsDone;
    stepValue = float(stepsDone);
    if (windows)
      dataPosition = windows->next(dataPosition);
    float gradNormValue = NAN;
    if (gradNorm)
      std::memcpy(&gradNormValue, regions.address(*gradNorm),
                  sizeof(gradNormValue));
    log.step(stepsDone, value, gradNormValue, learningRate, seconds,
             windows ? windows->epochOf(dataPosition) : 0,
             stepsDone == lastStep,
             rank == 0 ? memory->getDeviceBytesInUse() : std::nullopt);
    if (validator && validator->isDue(stepsDone))
      TITANRT_RETURN_IF_ERROR(validate(log));
    // Ctrl-C or SIGTERM on any rank: all stop after the same step.
    int signal = getStopSignal();
    if (program.getWorldSize() > 1)
      if (Status agreed =
              control.allReduce(TITANRT_I32, TITANRT_MAX, &signal, &signal, 1);
          !agreed.ok())
        return Status(agreed.getCode(),
                      "after step " + std::to_string(stepsDone) +
                          ", agreeing with the other ranks whether to stop: " +
                          agreed.getMessage());
    bool last = stepsDone == lastStep;
    bool lastOfJob = last && !options.runSteps;
    if (checkpoint.enable && !checkpoint.loadOnly &&
        (lastOfJob || stepsDone % checkpoint.interval == 0 ||
         (stepsDone == 1 && checkpoint.enableFirstStepCheckpoint)))
      TITANRT_RETURN_IF_ERROR(saveStepCheckpoint(options, lastOfJob));
    if (signal) {
      if (rank == 0)
        std::printf("stopping after step %lld (%s)\n",
                    static_cast<long long>(stepsDone),
                    signal == SIGINT ? "SIGINT" : "SIGTERM");
      stopped = StopReason::Interrupted;
      break;
    }
  }
  progress.setPhase(RankPhase::Finishing);
  if (asyncSave)
    TITANRT_RETURN_IF_ERROR(asyncSave->wait());
  if (stepsDone > firstStep + 1)
    heapAfterSteps = heapInUse();
  return log.finish();
}

std::string titan::rt::checkpointRoot(const RunOptions &options) {
  llvm::SmallString<256> root(options.dumpFolder);
  llvm::sys::path::append(root, options.checkpoint.folder);
  return std::string(root);
}

Status Trainer::saveStepCheckpoint(const RunOptions &options, bool last) {
  progress.setPhase(RankPhase::Checkpointing);
  const mlir::titan::CheckpointConfig &checkpoint = options.checkpoint;
  if (last && checkpoint.lastSaveInHf) {
    if (asyncSave)
      TITANRT_RETURN_IF_ERROR(asyncSave->wait());
    return saveHfModel(options,
                       checkpointFolderOf(checkpointRoot(options), stepsDone));
  }
  return saveJobCheckpoint(options, last && checkpoint.modelWeightsOnly
                                        ? SaveKind::ModelOnly
                                        : SaveKind::Full);
}

Status Trainer::saveJobCheckpoint(const RunOptions &options, SaveKind kind) {
  // Both saves read the host mirror: the async one snapshots it now.
  TITANRT_RETURN_IF_ERROR(downloadState());
  std::string root = checkpointRoot(options);
  std::string folder = checkpointFolderOf(root, stepsDone);
  if (options.checkpoint.asyncMode != "disabled" && kind == SaveKind::Full) {
    if (!asyncSave)
      asyncSave = std::make_unique<AsyncSave>(regions.getBytes(Region::State));
    // One save at a time: the previous one must be done.
    TITANRT_RETURN_IF_ERROR(asyncSave->wait());
    asyncSave->start(*this, options, folder, kind);
    return Status::success();
  }
  if (asyncSave)
    TITANRT_RETURN_IF_ERROR(asyncSave->wait());
  return writeCheckpoint(options, folder, kind, regions.getBase(Region::State),
                         stepValue, dataPosition, control);
}

Status Trainer::save(const RunOptions &options, const std::string &folder) {
  TITANRT_RETURN_IF_ERROR(downloadState());
  return writeCheckpoint(options, folder, SaveKind::Full,
                         regions.getBase(Region::State), stepValue,
                         dataPosition, control);
}

Status Trainer::writeCheckpoint(const RunOptions &options,
                                const std::string &folder, SaveKind kind,
                                const uint8_t *stateBase, float stepSnapshot,
                                int64_t positionSnapshot, Communicator &world) {
  if (std::error_code error = llvm::sys::fs::create_directories(folder))
    return Status::io("cannot create checkpoint folder '" + folder +
                      "': " + error.message());
  mlir::titan::CheckpointPlan saved = plan;
  ElementType exportType = ElementType::F32;
  if (kind == SaveKind::ModelOnly) {
    llvm::erase_if(saved.tensors, [&](const mlir::titan::PlanTensor &tensor) {
      return !isModelTensor(tensor);
    });
    saved.values.clear();
    if (options.checkpoint.exportDtype == "bfloat16")
      exportType = ElementType::BF16;
    else if (options.checkpoint.exportDtype == "float16")
      exportType = ElementType::F16;
    for (mlir::titan::PlanTensor &tensor : saved.tensors)
      if (tensor.dtype == ElementType::F32)
        tensor.dtype = exportType;
  }
  // An uneven shard saves its box (the first part of its padded buffer);
  // an exported tensor, its box converted.
  std::map<std::string, llvm::SmallVector<int64_t>> boxSizes;
  for (const mlir::titan::PlanTensor &tensor : saved.tensors)
    if (tensor.boxes[rank].held)
      boxSizes[tensor.source] = tensor.boxes[rank].box.sizes;
  std::map<std::string, mlir::titan::DenseTensor> staged;
  // Buffers are saved from the executable's buffers/, as the model file
  // holds them: the program may hold one permuted or sharded, or not at all
  // (a causal mask replaced by causal attention).
  llvm::StringSet<> bufferSources;
  for (const mlir::titan::PlanTensor &tensor : saved.tensors)
    if (tensor.kind == mlir::titan::PlanTensorKind::Buffer)
      bufferSources.insert(tensor.source);
  std::map<std::string, mlir::titan::MappedNpy> bufferFiles;
  uint8_t *base = const_cast<uint8_t *>(stateBase);
  // What this rank holds of `source`: its shard (padded where uneven), or a
  // buffer's file.
  auto held = [&](llvm::StringRef source) -> llvm::Expected<DenseTensorRef> {
    if (!bufferSources.contains(source)) {
      llvm::Expected<MutableDenseTensorRef> shard =
          shardOf(source, base, stepSnapshot, positionSnapshot);
      if (!shard)
        return shard.takeError();
      return DenseTensorRef(
          shard->dtype, shard->shape,
          llvm::StringRef(shard->data.data(), shard->data.size()));
    }
    auto [mapped, first] = bufferFiles.try_emplace(source.str());
    if (first) {
      llvm::Expected<mlir::titan::MappedNpy> file = mlir::titan::mapNpy(
          options.buffersFolder + "/" + source.str() + ".npy");
      if (!file) {
        bufferFiles.erase(mapped);
        return file.takeError();
      }
      mapped->second = std::move(*file);
    }
    // bf16 is in the file as its raw uint16 bits.
    const mlir::titan::MappedNpy &file = mapped->second;
    std::optional<ElementType> dtype = torchDType(runtimeDType(file.dtype));
    if (!dtype)
      return llvm::createStringError(
          "buffer '" + source + "' is " + fileDTypeName(file.dtype) +
          " in " + options.buffersFolder + ", which checkpoints cannot hold");
    return DenseTensorRef(*dtype, file.shape, file.data);
  };
  auto lookup = [&](llvm::StringRef source) -> llvm::Expected<DenseTensorRef> {
    llvm::Expected<DenseTensorRef> whole = held(source);
    if (!whole)
      return whole.takeError();
    auto box = boxSizes.find(source.str());
    bool converted =
        whole->dtype == ElementType::F32 && exportType != ElementType::F32;
    if (box == boxSizes.end() || (box->second == whole->shape && !converted))
      return whole;
    // Staged once for all its keys (a tied parameter's names).
    auto [stagedPart, first] = staged.try_emplace(source.str());
    mlir::titan::DenseTensor &part = stagedPart->second;
    if (!first)
      return DenseTensorRef(part);
    part = makeStagingTensor(whole->dtype, box->second);
    IndexBox region{llvm::SmallVector<int64_t>(box->second.size(), 0),
                    box->second};
    IndexBox padded{region.offsets, llvm::SmallVector<int64_t>(whole->shape)};
    mlir::titan::copyRegion(*whole, padded, MutableDenseTensorRef(part), region,
                            region);
    if (converted)
      part = convertFloats(part, exportType);
    return DenseTensorRef(part);
  };
  llvm::Expected<mlir::titan::DcpRankData> data =
      mlir::titan::planRankShardData(saved, rank, lookup);
  if (!data)
    return Status::io("cannot save: " + llvm::toString(data.takeError()));
  if (llvm::Error error = mlir::titan::saveDcpRank(folder, *data))
    return Status::io("cannot save rank " + std::to_string(rank) + ": " +
                      llvm::toString(std::move(error)));
  TITANRT_RETURN_IF_ERROR(world.barrier());
  if (rank != 0)
    return Status::success();
  mlir::titan::DcpFlavor flavor = options.checkpointFlavor == "torch1.13"
                                      ? mlir::titan::DcpFlavor::Torch113
                                      : mlir::titan::DcpFlavor::Torch2;
  if (llvm::Error error =
          mlir::titan::finishDcpSave(folder, saved.numRanks, flavor))
    return Status::io("cannot commit checkpoint '" + folder +
                      "': " + llvm::toString(std::move(error)));
  std::printf("saved checkpoint %s (step %lld%s)\n", folder.c_str(),
              static_cast<long long>(stepSnapshot),
              kind == SaveKind::ModelOnly
                  ? (", model only, " + options.checkpoint.exportDtype).c_str()
                  : "");
  // keep_latest_k: the oldest complete checkpoints of the job's folder go.
  int64_t keep = options.checkpoint.keepLatestK;
  llvm::StringRef parent = llvm::sys::path::parent_path(folder);
  if (keep > 0 && parent == checkpointRoot(options)) {
    std::vector<int64_t> steps = listCheckpointSteps(parent.str());
    for (size_t i = 0; i + keep < steps.size(); ++i)
      if (std::error_code error = llvm::sys::fs::remove_directories(
              checkpointFolderOf(parent.str(), steps[i])))
        std::fprintf(stderr, "titan: warning: cannot remove %s: %s\n",
                     checkpointFolderOf(parent.str(), steps[i]).c_str(),
                     error.message().c_str());
  }
  return Status::success();
}

Status Trainer::dumpResults(const std::string &folder) {
  TITANRT_RETURN_IF_ERROR(downloadResults());
  llvm::SmallString<256> rankFolder(folder);
  llvm::sys::path::append(rankFolder, "rank" + std::to_string(rank));
  if (std::error_code error = llvm::sys::fs::create_directories(rankFolder))
    return Status::io("cannot create '" + std::string(rankFolder) +
                      "': " + error.message());
  for (const TensorPlace &result : program.results) {
    std::optional<ElementType> dtype;
    switch (result.dtype) {
    case TITANRT_F32:
      dtype = ElementType::F32;
      break;
    case TITANRT_F64:
      dtype = ElementType::F64;
      break;
    case TITANRT_I64:
      dtype = ElementType::I64;
      break;
    case TITANRT_I32:
      dtype = ElementType::I32;
      break;
    case TITANRT_BF16:
    case TITANRT_F16:
      dtype = ElementType::U16;
      break;
    default:
      dtype = ElementType::I1;
    }
    llvm::SmallString<256> path(rankFolder);
    llvm::sys::path::append(path, result.name + ".npy");
    llvm::SmallVector<int64_t> shape(result.shape.begin(), result.shape.end());
    if (llvm::Error error = mlir::titan::writeNpy(
            path, *dtype, shape,
            llvm::StringRef(
                reinterpret_cast<const char *>(regions.address(result)),
                result.bytes)))
      return Status::io(llvm::toString(std::move(error)));
  }
  return Status::success();
}

void Trainer::reportMemory() const {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  std::printf("memory (rank %lld): arena %s, state %s, inputs %s "
              "(allocated = planned: %lld + %lld + %lld bytes); heap growth "
              "after the first step %lld bytes; peak RSS %s\n",
              static_cast<long long>(rank),
              formatBytes(regions.getBytes(Region::Arena)).c_str(),
              formatBytes(regions.getBytes(Region::State)).c_str(),
              formatBytes(regions.getBytes(Region::Inputs)).c_str(),
              static_cast<long long>(regions.getBytes(Region::Arena)),
              static_cast<long long>(regions.getBytes(Region::State)),
              static_cast<long long>(regions.getBytes(Region::Inputs)),
              static_cast<long long>(heapAfterSteps - heapBeforeSteps),
              formatBytes(int64_t(usage.ru_maxrss) * 1024).c_str());
  // A device's memory: the regions, and what its libraries hold besides.
  if (std::optional<int64_t> device = memory->getDeviceBytesInUse())
    std::printf("device memory (rank %lld): %s in use of the planned %s "
                "(the device's count: the regions, and the runtime's "
                "libraries' context, workspaces and buffers)\n",
                static_cast<long long>(rank), formatBytes(*device).c_str(),
                formatBytes(regions.getBytes(Region::Arena) +
                            regions.getBytes(Region::State) +
                            regions.getBytes(Region::Inputs))
                    .c_str());
  std::fflush(stdout);
}
