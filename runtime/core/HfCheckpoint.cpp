//===- HfCheckpoint.cpp - Hugging Face weights in and out of a job --------===//
//
// `[checkpoint] initial_load_in_hf` and `last_save_in_hf` (docs/hf-weights.md,
// docs/training-jobs.md): every rank reads its boxes of the model's
// parameters from safetensors files, or writes them into files whose layout
// every rank computes alike, through the mapping `checkpoint.hf_mapping`
// names (Hugging Face's names, Llama's RoPE row order).
//
//===----------------------------------------------------------------------===//

#include "core/Trainer.h"

#include "titan/Checkpoint/HfMapping.h"
#include "titan/Checkpoint/Safetensors.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace titan::rt;
using mlir::titan::ElementType;
using mlir::titan::IndexBox;

namespace {

/// The folder of the model's Hugging Face config.json: torchtitan's
/// `model.hf_assets_path` (titan's tokenizer_path, or the folder of its
/// tokenizer.json), else the Hugging Face folder the job started from; ""
/// when neither has one.
std::string findHfConfigFolder(const RunOptions &options) {
  std::vector<std::string> candidates;
  if (!options.tokenizerPath.empty())
    candidates.push_back(
        llvm::sys::fs::is_directory(options.tokenizerPath)
            ? options.tokenizerPath
            : llvm::sys::path::parent_path(options.tokenizerPath).str());
  if (options.checkpoint.initialLoadInHf)
    candidates.push_back(options.checkpoint.initialLoadPath);
  for (const std::string &folder : candidates) {
    llvm::SmallString<256> config(folder);
    llvm::sys::path::append(config, "config.json");
    if (llvm::sys::fs::exists(config))
      return folder;
  }
  return "";
}

/// The job's mapping with its head counts from the Hugging Face config.json
/// in `configFolder`.
Status readMapping(const RunOptions &options, const std::string &configFolder,
                   const char *why, mlir::titan::HfMapping &mapping) {
  if (options.checkpoint.hfMapping.empty())
    return Status::invalidArgument(
        std::string("[checkpoint] ") + why +
        " needs the mapping between the model's names and Hugging Face's: "
        "set checkpoint.hf_mapping (for Llama 3, models/llama3/"
        "hf_mapping.json; docs/hf-weights.md)");
  llvm::Expected<mlir::titan::HfMapping> read =
      mlir::titan::HfMapping::read(options.checkpoint.hfMapping);
  if (!read)
    return Status::invalidArgument("checkpoint.hf_mapping: " +
                                   llvm::toString(read.takeError()));
  mapping = std::move(*read);
  if (configFolder.empty())
    return Status::invalidArgument(
        std::string("[checkpoint] ") + why +
        " needs the model's Hugging Face config.json (its head counts order "
        "the rows of wq and wk, and it goes with the saved model): put it in "
        "the folder model.hf_assets_path (titan's tokenizer_path) names");
  llvm::SmallString<256> config(configFolder);
  llvm::sys::path::append(config, "config.json");
  auto text = llvm::MemoryBuffer::getFile(config);
  if (!text)
    return Status::io(std::string("[checkpoint] ") + why +
                      ": cannot read the model's Hugging Face config '" +
                      std::string(config) + "' (its head counts order the " +
                      "rows of wq and wk): " + text.getError().message());
  if (llvm::Error error =
          mapping.setParametersFromHfConfig((*text)->getBuffer(), config))
    return Status::invalidArgument(llvm::toString(std::move(error)));
  return Status::success();
}

} // namespace

Status titan::rt::checkHfSaveSettings(const RunOptions &options) {
  mlir::titan::HfMapping mapping;
  return readMapping(options, findHfConfigFolder(options), "last_save_in_hf",
                     mapping);
}

Status Trainer::loadHfModel(const RunOptions &options,
                            const std::string &folder) {
  mlir::titan::HfMapping mapping;
  TITANRT_RETURN_IF_ERROR(
      readMapping(options, folder, "initial_load_in_hf", mapping));
  llvm::Expected<mlir::titan::SafetensorsReader> reader =
      mlir::titan::SafetensorsReader::open(folder);
  if (!reader)
    return Status::io("cannot read Hugging Face weights '" + folder +
                      "': " + llvm::toString(reader.takeError()));
  uint8_t *state = regions.getBase(Region::State);
  for (const mlir::titan::PlanTensor &tensor : plan.tensors) {
    // Another pipeline rank's tensor is no concern of this rank; Hugging
    // Face holds a tied parameter once, and no buffers.
    if (!tensor.boxes[rank].held ||
        tensor.kind != mlir::titan::PlanTensorKind::State)
      continue;
    const TensorPlace *argument = program.findArgument(tensor.source);
    if (!argument || argument->role != "param")
      continue;
    llvm::Expected<mlir::titan::MutableDenseTensorRef> shard =
        shardOf(tensor.source, state, stepValue, dataPosition);
    if (!shard)
      return Status::invalidArgument(llvm::toString(shard.takeError()));
    const IndexBox &box = tensor.boxes[rank].box;
    IndexBox held{box.offsets, llvm::SmallVector<int64_t>(shard->shape)};
    if (llvm::Error error = mlir::titan::readHfBox(
            *reader, mapping, tensor.key, tensor.shape, box, *shard, held))
      return Status::io("cannot load Hugging Face weights '" + folder +
                        "': " + llvm::toString(std::move(error)));
  }
  stepsDone = 0;
  stepValue = 0;
  dataPosition = 0;
  return Status::success();
}

Status Trainer::saveHfModel(const RunOptions &options,
                            const std::string &folder) {
  mlir::titan::HfMapping mapping;
  std::string configFolder = findHfConfigFolder(options);
  TITANRT_RETURN_IF_ERROR(
      readMapping(options, configFolder, "last_save_in_hf", mapping));
  ElementType dtype = ElementType::F32;
  if (options.checkpoint.exportDtype == "bfloat16")
    dtype = ElementType::BF16;
  else if (options.checkpoint.exportDtype == "float16")
    dtype = ElementType::F16;
  TITANRT_RETURN_IF_ERROR(downloadState());
  std::vector<mlir::titan::SafetensorsTensorSpec> specs;
  std::vector<const mlir::titan::PlanTensor *> params;
  for (const mlir::titan::PlanTensor &tensor : plan.tensors) {
    // The layout holds every parameter of the model, also those this rank
    // does not hold (another pipeline rank's: the program has no argument
    // for them, and their keys, as every model tensor's, are not under
    // `optimizer.`), so that every rank computes the same layout.
    bool isParam;
    if (tensor.kind != mlir::titan::PlanTensorKind::State) {
      // Hugging Face holds a tied parameter once (save_pretrained drops
      // the other names), and no buffers.
      isParam = false;
    } else if (tensor.boxes[rank].held) {
      const TensorPlace *argument = program.findArgument(tensor.source);
      isParam = argument && argument->role == "param";
    } else {
      isParam = !llvm::StringRef(tensor.key).starts_with("optimizer.");
    }
    if (!isParam)
      continue;
    specs.push_back({tensor.key, dtype, tensor.shape});
    params.push_back(&tensor);
  }
  // Every rank computes the same layout; rank 0 makes the files.
  llvm::Expected<mlir::titan::SafetensorsLayout> layout =
      mlir::titan::computeHfLayout(mapping, specs);
  if (!layout)
    return Status::invalidArgument("cannot lay out the Hugging Face save: " +
                                   llvm::toString(layout.takeError()));
  auto fail = [&](llvm::Error error) {
    if (rank == 0)
      mlir::titan::discardSafetensorsSave(folder);
    return Status::io("cannot save Hugging Face weights '" + folder +
                      "': " + llvm::toString(std::move(error)));
  };
  if (rank == 0)
    if (llvm::Error error =
            mlir::titan::prepareSafetensorsSave(folder, *layout))
      return fail(std::move(error));
  TITANRT_RETURN_IF_ERROR(control.barrier());
  {
    llvm::Expected<mlir::titan::SafetensorsWriter> writer =
        mlir::titan::SafetensorsWriter::open(folder, *layout);
    if (!writer)
      return fail(writer.takeError());
    uint8_t *state = regions.getBase(Region::State);
    for (const mlir::titan::PlanTensor *tensor : params) {
      // A rank writes only boxes it holds, never another pipeline rank's.
      const mlir::titan::PlanBox &box = tensor->boxes[rank];
      if (!box.held || !box.writes)
        continue;
      llvm::Expected<mlir::titan::MutableDenseTensorRef> shard =
          shardOf(tensor->source, state, stepValue, dataPosition);
      if (!shard)
        return Status::invalidArgument(llvm::toString(shard.takeError()));
      IndexBox held{box.box.offsets, llvm::SmallVector<int64_t>(shard->shape)};
      mlir::titan::DenseTensorRef source(
          shard->dtype, shard->shape,
          llvm::StringRef(shard->data.data(), shard->data.size()));
      if (llvm::Error error = mlir::titan::writeHfBox(
              *writer, *layout, mapping, tensor->key, box.box, source, held))
        return fail(std::move(error));
    }
    if (llvm::Error error = writer->close())
      return fail(std::move(error));
  }
  TITANRT_RETURN_IF_ERROR(control.barrier());
  if (rank != 0)
    return Status::success();
  // The model's config.json goes with it, as Hugging Face's tools expect.
  std::vector<std::pair<std::string, std::string>> extraFiles;
  llvm::SmallString<256> config(configFolder);
  llvm::sys::path::append(config, "config.json");
  if (auto text = llvm::MemoryBuffer::getFile(config))
    extraFiles.emplace_back("config.json", (*text)->getBuffer().str());
  if (llvm::Error error =
          mlir::titan::commitSafetensorsSave(folder, *layout, extraFiles))
    return fail(std::move(error));
  std::printf("saved Hugging Face weights %s (step %lld, %s)\n", folder.c_str(),
              static_cast<long long>(stepsDone),
              options.checkpoint.exportDtype.c_str());
  return Status::success();
}
