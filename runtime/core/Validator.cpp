//===- Validator.cpp - the validation loss of a training job --------------===//

#include "core/Validator.h"

#include "core/Trainer.h"

#include <cstdio>

using namespace titan::rt;

Status Validator::open(const ProgramDescription &training,
                       const RunOptions &options) {
  if (program.mesh.axisNames != training.mesh.axisNames ||
      program.mesh.axisSizes != training.mesh.axisSizes ||
      program.arenaBytes != training.arenaBytes ||
      program.stateBytes != training.stateBytes ||
      program.inputBytes != training.inputBytes ||
      program.communicators != training.communicators)
    return Status::invalidArgument(
        "the validation program linked into this executable was compiled "
        "for another mesh, regions or communicators than its training step: "
        "compile the model again");
  loss = program.findResult("loss");
  if (!loss || loss->dtype != TITANRT_F32 || !loss->shape.empty())
    return Status::invalidArgument(
        "the validation program returns no f32 scalar `loss`");
  const mlir::titan::ValidationConfig &validation = options.validation;
  freq = validation.freq;
  TITANRT_RETURN_IF_ERROR(staged.open(program, rank));
  if (Status opened = staged.openDataset(
          validation.datasetPath, options.tokenizerPath, stream, windows);
      !opened.ok())
    return Status(opened.getCode(),
                  "validation.dataset_path: " + opened.getMessage());
  const std::vector<int64_t> &shape = staged.getGlobalShape();
  int64_t windowCount = stream->size() / (shape[1] + 1);
  // -1: one pass over the data's windows. As torchtitan's loader yields a
  // last, partial batch, a compiled program runs it as a whole one whose
  // missing rows are padding the loss ignores (without an ignore index in
  // the labels' range, it is left out).
  batches = validation.steps > 0 ? validation.steps : windowCount / shape[0];
  if (validation.steps < 0 && windowCount % shape[0] &&
      staged.getIgnoreIndex()) {
    lastRows = windowCount % shape[0];
    ++batches;
  }
  if (batches == 0)
    return Status::invalidArgument(
        "validation.dataset_path '" + validation.datasetPath + "' holds " +
        std::to_string(windowCount) + " windows of " +
        std::to_string(shape[1] + 1) + " ids, fewer than one batch of " +
        std::to_string(shape[0]) +
        ", and the labels take no ignore index to pad one with: give it more "
        "data, lower validation.local_batch_size, or set validation.steps "
        "to repeat the data");
  if (rank == 0) {
    std::string last =
        lastRows ? ", the last of " + std::to_string(lastRows) + " rows" : "";
    std::printf(
        "validation: %s; %lld batches of %lld x %lld tokens%s after "
        "step 1 and every %lld steps\n",
        stream->getDescription().c_str(), static_cast<long long>(batches),
        static_cast<long long>(shape[0]), static_cast<long long>(shape[1]),
        last.c_str(), static_cast<long long>(freq));
  }
  return Status::success();
}

int64_t Validator::getTokens() const {
  const std::vector<int64_t> &shape = staged.getGlobalShape();
  int64_t rows = batches * shape[0];
  if (lastRows)
    rows += lastRows - shape[0];
  return rows * shape[1];
}

Status Validator::writeBatch(int64_t batch, const RegionTable &regions) {
  staged.read(*windows, batch * windows->next(0));
  if (lastRows && batch == batches - 1)
    staged.padRows(lastRows, *staged.getIgnoreIndex());
  return staged.write(batch, regions);
}

std::pair<int64_t, int64_t> Validator::getInputRange() const {
  int64_t begin = program.inputBytes, end = 0;
  for (const TensorPlace &argument : program.arguments)
    if (argument.region == Region::Inputs) {
      begin = std::min(begin, argument.offset);
      end = std::max(end, argument.offset + argument.bytes);
    }
  return {begin, std::max<int64_t>(end - begin, 0)};
}
