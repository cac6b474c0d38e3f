//===- Trainer.cpp - running a compiled training step ---------------------===//

#include "core/Trainer.h"

#include "titan/Checkpoint/Dcp.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <malloc.h>
#include <map>
#include <sys/mman.h>
#include <sys/resource.h>

using namespace titan::rt;
using mlir::titan::DenseTensorRef;
using mlir::titan::ElementType;
using mlir::titan::IndexBox;
using mlir::titan::MutableDenseTensorRef;

namespace {

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
  case ElementType::U16:
    return TITANRT_BF16; // titan writes bf16 as raw uint16 bits.
  default:
    return -1;
  }
}

std::string formatShape(llvm::ArrayRef<int64_t> shape) {
  return "[" +
         llvm::join(llvm::map_range(
                        shape, [](int64_t d) { return std::to_string(d); }),
                    ", ") +
         "]";
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

/// Copies the box `box` of `source` (a global tensor, possibly stored with
/// a chunk order along one dim) into the first part of `target` (the box's
/// shape, or larger for an uneven shard: its padding is zeroed).
void copyBox(DenseTensorRef source, const Box &box, const InputLayout &layout,
             MutableDenseTensorRef target) {
  IndexBox region{
      llvm::SmallVector<int64_t>(box.offsets.begin(), box.offsets.end()),
      llvm::SmallVector<int64_t>(box.sizes.begin(), box.sizes.end())};
  IndexBox targetBox{region.offsets, llvm::SmallVector<int64_t>(target.shape)};
  if (targetBox.sizes != region.sizes)
    std::fill(target.data.begin(), target.data.end(), 0);
  IndexBox whole{llvm::SmallVector<int64_t>(source.shape.size(), 0),
                 llvm::SmallVector<int64_t>(source.shape)};
  if (!layout.orderDim) {
    mlir::titan::copyRegion(source, whole, target, targetBox, region);
    return;
  }
  // Stored chunk k holds natural chunk order[k]: view the natural tensor
  // shifted so that its chunk order[k] sits at stored chunk k.
  int64_t dim = *layout.orderDim;
  int64_t chunk = source.shape[dim] / int64_t(layout.order.size());
  for (auto [k, natural] : llvm::enumerate(layout.order)) {
    int64_t begin = std::max<int64_t>(k * chunk, box.offsets[dim]);
    int64_t end =
        std::min<int64_t>((k + 1) * chunk, box.offsets[dim] + box.sizes[dim]);
    if (begin >= end)
      continue;
    IndexBox part = region;
    part.offsets[dim] = begin;
    part.sizes[dim] = end - begin;
    IndexBox shifted = whole;
    shifted.offsets[dim] = (int64_t(k) - natural) * chunk;
    mlir::titan::copyRegion(source, shifted, target, targetBox, part);
  }
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

} // namespace

//===----------------------------------------------------------------------===//
// Regions
//===----------------------------------------------------------------------===//

Regions::~Regions() {
  for (int i = 0; i < 3; ++i)
    if (bases[i])
      munmap(bases[i], sizes[i]);
}

Status Regions::allocate(const ProgramDescription &description) {
  int64_t bytes[3] = {description.arenaBytes, description.stateBytes,
                      description.inputBytes};
  static const char *names[3] = {"arena", "state", "inputs"};
  for (int i = 0; i < 3; ++i) {
    sizes[i] = std::max<int64_t>(bytes[i], 1);
    void *memory = mmap(nullptr, sizes[i], PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED)
      return Status::invalidArgument(std::string("cannot allocate the ") +
                                     names[i] + " (" + formatBytes(bytes[i]) +
                                     "): " + std::strerror(errno));
    bases[i] = static_cast<uint8_t *>(memory);
    sizes[i] = bytes[i];
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// BatchSource
//===----------------------------------------------------------------------===//

Status BatchSource::open(const std::string &folder,
                         const ProgramDescription &program) {
  for (const TensorPlace &argument : program.arguments) {
    if (argument.role != "input" || !argument.shape.size() ||
        !program.inputs.count(argument.name))
      continue;
    std::string path = folder + "/" + argument.name + ".npy";
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
          path + " is " + dtypeName(runtimeDType(file->dtype)) + " " +
          formatShape(file->shape) + "; the program reads " +
          dtypeName(argument.dtype) + " " + formatShape(global) +
          " per step (or [steps, ...] of it): compile for this batch "
          "(training.local_batch_size, training.seq_len) or write the "
          "batch with that shape");
    files.emplace(argument.name, std::move(*file));
  }
  return Status::success();
}

/// Checks that every id of the global batch `data` of input `name` is in
/// its range: kernels do not check indices, and once the vocabulary is
/// sharded an id outside it would fall in no rank's shard.
static Status checkIdRange(const std::string &name, int64_t batchIndex,
                           const InputLayout &layout, int32_t dtype,
                           llvm::StringRef data) {
  if (layout.idRange.empty())
    return Status::success();
  int64_t lo = layout.idRange[0], hi = layout.idRange[1];
  std::optional<int64_t> ignore;
  if (layout.idRange.size() == 3)
    ignore = layout.idRange[2];
  size_t size = dtypeSize(dtype);
  for (size_t i = 0; i * size < data.size(); ++i) {
    int64_t id;
    if (dtype == TITANRT_I64) {
      std::memcpy(&id, data.data() + i * size, sizeof(id));
    } else if (dtype == TITANRT_I32) {
      int32_t narrow;
      std::memcpy(&narrow, data.data() + i * size, sizeof(narrow));
      id = narrow;
    } else {
      return Status::invalidArgument("input '" + name +
                                     "' has an id range but is not integer");
    }
    if ((id >= lo && id < hi) || (ignore && id == *ignore))
      continue;
    return Status::invalidArgument(
        name + ".npy, batch " + std::to_string(batchIndex) + ", element " +
        std::to_string(i) + ": id " + std::to_string(id) + " is outside [" +
        std::to_string(lo) + ", " + std::to_string(hi) + ")" +
        (ignore ? " (or the ignore index " + std::to_string(*ignore) + ")"
                : std::string()) +
        ", the rows of the table it indexes (the model's vocabulary)");
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

llvm::Expected<MutableDenseTensorRef> Trainer::shardOf(llvm::StringRef source) {
  if (source == "step")
    return MutableDenseTensorRef(
        ElementType::F32, {},
        llvm::MutableArrayRef<char>(reinterpret_cast<char *>(&stepValue),
                                    sizeof(stepValue)));
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
          reinterpret_cast<char *>(regions.address(*argument)),
          argument->bytes));
}

Status Trainer::loadCheckpoint(const std::string &folder) {
  llvm::Expected<mlir::titan::DcpReader> reader =
      mlir::titan::DcpReader::open(folder);
  if (!reader)
    return Status::io("cannot load checkpoint '" + folder +
                      "': " + llvm::toString(reader.takeError()));
  // An uneven shard loads its box into a staging tensor, then into the
  // first part of its padded buffer.
  std::map<std::string, mlir::titan::DenseTensor> staged;
  auto destination = [&](llvm::StringRef source, ElementType dtype,
                         llvm::ArrayRef<int64_t> shape)
      -> llvm::Expected<MutableDenseTensorRef> {
    llvm::Expected<MutableDenseTensorRef> shard = shardOf(source);
    if (!shard || shard->shape == shape)
      return shard;
    mlir::titan::DenseTensor &box = staged[source.str()];
    box = makeStagingTensor(dtype, shape);
    return MutableDenseTensorRef(box);
  };
  if (llvm::Error error =
          mlir::titan::loadPlanRank(*reader, plan, rank, destination))
    return Status::io("cannot load checkpoint '" + folder +
                      "': " + llvm::toString(std::move(error)));
  for (const auto &[source, box] : staged)
    copyIntoPadded(box, llvm::cantFail(shardOf(source)));
  stepsDone = static_cast<int64_t>(stepValue);
  return Status::success();
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
          path + " is " + formatShape(file->shape) + ", the program reads " +
          dtypeName(argument.dtype) + " " + formatShape(argument.shape));
    std::memcpy(regions.address(argument), file->data.data(), argument.bytes);
  }
  return Status::success();
}

void Trainer::initialize(uint64_t seed) {
  // torchtitan-like defaults, from the name and rank of each parameter:
  // biases 0, norm scales (rank 1) 1, embeddings N(0, 1), other weights
  // N(0, 0.02), truncated at 2 standard deviations. Each global element's
  // value depends only on the seed, the parameter's name and the element's
  // global index, so every parallel layout starts from the same model.
  for (const TensorPlace &argument : program.arguments) {
    if (argument.role != "param" || argument.dtype != TITANRT_F32)
      continue;
    const mlir::titan::PlanTensor *tensor = nullptr;
    for (const mlir::titan::PlanTensor &candidate : plan.tensors)
      if (candidate.source == argument.name)
        tensor = &candidate;
    if (!tensor)
      continue;
    float *data = reinterpret_cast<float *>(regions.address(argument));
    llvm::StringRef name = argument.name;
    bool isBias = name.ends_with("bias");
    bool isEmbedding =
        name.contains("embed") || name.contains("wte") || name.contains("wpe");
    double std = isEmbedding ? 1.0 : 0.02;
    uint64_t key = mix(seed ^ llvm::xxh3_64bits(name));
    const IndexBox &box = tensor->boxes[rank].box;
    int64_t count = argument.numElements();
    for (int64_t local = 0; local < count; ++local) {
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
      if (padding) {
        data[local] = 0.0f;
        continue;
      }
      data[local] = isBias ? 0.0f
                    : argument.shape.size() == 1
                        ? 1.0f
                        : float(std * normal(key, global));
    }
  }
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
  TITANRT_RETURN_IF_ERROR(loadBuffers(options.buffersFolder));
  if (!options.loadCheckpoint.empty())
    return loadCheckpoint(options.loadCheckpoint);
  initialize(options.seed);
  return Status::success();
}

Status Trainer::train(const RunOptions &options) {
  BatchSource batches;
  if (options.dataFolder.empty())
    return Status::invalidArgument(
        "no training data: pass --data DIR with tokens.npy and labels.npy");
  TITANRT_RETURN_IF_ERROR(batches.open(options.dataFolder, program));
  const TensorPlace *loss = program.findResult("loss");
  int64_t tokensPerStep = 0;
  if (const TensorPlace *tokens = program.findArgument("tokens"))
    tokensPerStep = tokens->numElements();
  std::ofstream metrics;
  if (rank == 0 && !options.metricsFile.empty())
    metrics.open(options.metricsFile, std::ios::app);

  // torchtitan's LambdaLR: the step after `done` steps runs at the rate
  // times the schedule's factor of `done` (a resumed run continues it).
  auto learningRateOf = [&](int64_t done) {
    return options.learningRate * options.lrSchedule.factor(done);
  };
  for (int64_t i = 0; i < options.steps; ++i) {
    // The first step warms up (communication buffers, thread stacks); from
    // then on a step must not allocate.
    if (i == 1)
      heapBeforeSteps = heapInUse();
    for (const TensorPlace &argument : program.arguments) {
      if (argument.role != "input")
        continue;
      uint8_t *target = regions.address(argument);
      if (argument.name == "lr" || argument.name == "step") {
        float value = argument.name == "lr" ? float(learningRateOf(stepsDone))
                                            : float(stepsDone);
        std::memcpy(target, &value, sizeof(value));
        continue;
      }
      TITANRT_RETURN_IF_ERROR(
          batches.read(argument.name, stepsDone, rank, program, target));
    }
    auto start = std::chrono::steady_clock::now();
    titanrt_status status =
        step(&context, regions.getBase(Region::Arena),
             regions.getBase(Region::State), regions.getBase(Region::Inputs));
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (status != TITANRT_OK)
      return Status(status, "step " + std::to_string(stepsDone + 1) + ": " +
                                context.lastError);
    double learningRate = learningRateOf(stepsDone);
    ++stepsDone;
    if (rank != 0)
      continue;
    float value = NAN;
    std::string lossText;
    if (loss) {
      std::memcpy(&value, regions.address(*loss), sizeof(value));
      lossText = llvm::formatv(" | loss {0:f6}", value).str();
    }
    std::printf("step %lld%s | lr %.4g | %.1f ms | %.0f tokens/s/rank\n",
                static_cast<long long>(stepsDone), lossText.c_str(),
                learningRate, seconds * 1e3, tokensPerStep / seconds);
    std::fflush(stdout);
    if (metrics.is_open())
      metrics << "{\"step\": " << stepsDone
              << ", \"loss\": " << llvm::formatv("{0:e9}", value).str()
              << ", \"lr\": " << llvm::formatv("{0:e9}", learningRate).str()
              << ", \"seconds\": " << seconds << "}\n";
  }
  if (options.steps > 1)
    heapAfterSteps = heapInUse();
  stepValue = static_cast<float>(stepsDone);
  return Status::success();
}

Status Trainer::save(const RunOptions &options, Communicator &world) {
  const std::string &folder = options.saveCheckpoint;
  if (std::error_code error = llvm::sys::fs::create_directories(folder))
    return Status::io("cannot create checkpoint folder '" + folder +
                      "': " + error.message());
  // An uneven shard saves its box: the first part of its padded buffer.
  std::map<std::string, llvm::SmallVector<int64_t>> boxSizes;
  for (const mlir::titan::PlanTensor &tensor : plan.tensors)
    boxSizes[tensor.source] = tensor.boxes[rank].box.sizes;
  std::map<std::string, mlir::titan::DenseTensor> staged;
  auto lookup = [&](llvm::StringRef source) -> llvm::Expected<DenseTensorRef> {
    llvm::Expected<MutableDenseTensorRef> shard = shardOf(source);
    if (!shard)
      return shard.takeError();
    DenseTensorRef whole(
        shard->dtype, shard->shape,
        llvm::StringRef(shard->data.data(), shard->data.size()));
    auto box = boxSizes.find(source.str());
    if (box == boxSizes.end() || box->second == shard->shape)
      return whole;
    mlir::titan::DenseTensor &part = staged[source.str()];
    part = makeStagingTensor(shard->dtype, box->second);
    IndexBox region{llvm::SmallVector<int64_t>(box->second.size(), 0),
                    box->second};
    IndexBox padded{region.offsets, llvm::SmallVector<int64_t>(shard->shape)};
    mlir::titan::copyRegion(whole, padded, MutableDenseTensorRef(part), region,
                            region);
    return DenseTensorRef(part);
  };
  llvm::Expected<mlir::titan::DcpRankData> data =
      mlir::titan::planRankShardData(plan, rank, lookup);
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
          mlir::titan::finishDcpSave(folder, plan.numRanks, flavor))
    return Status::io("cannot commit checkpoint '" + folder +
                      "': " + llvm::toString(std::move(error)));
  std::printf("saved checkpoint %s (step %lld)\n", folder.c_str(),
              static_cast<long long>(stepsDone));
  return Status::success();
}

Status Trainer::dumpResults(const std::string &folder) const {
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
  std::fflush(stdout);
}
