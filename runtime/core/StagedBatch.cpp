//===- StagedBatch.cpp - a rank's rows of a dataset's batch ---------------===//

#include "core/StagedBatch.h"

#include "data/Tokenizer.h"

#include "titan/Checkpoint/Dcp.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cstring>

using namespace titan::rt;
using mlir::titan::DenseTensorRef;
using mlir::titan::ElementType;
using mlir::titan::IndexBox;
using mlir::titan::MutableDenseTensorRef;

std::string titan::rt::formatShape(llvm::ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    text += (i ? ", " : "") + std::to_string(d);
  return text + "]";
}

void titan::rt::copyBox(DenseTensorRef source, const Box &box,
                        const InputLayout &layout,
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

Status titan::rt::checkIdRange(const std::string &name, int64_t batchIndex,
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

Status StagedBatch::open(const ProgramDescription &description,
                         int64_t rankIndex) {
  program = &description;
  rank = rankIndex;
  // The loader feeds the model's token ids (its one input:
  // titan-build-train-step refuses more) and `labels`, [batch, seq] of int64
  // each.
  const TensorPlace *tokenPlace = program->findTokenInput();
  const TensorPlace *labelPlace = program->findArgument("labels");
  if (!tokenPlace || !labelPlace || tokenPlace->dtype != TITANRT_I64 ||
      labelPlace->dtype != TITANRT_I64 ||
      !program->inputs.count(tokenPlace->name) ||
      program->inputs.at(tokenPlace->name).globalShape.size() != 2)
    return Status::invalidArgument(
        "the data loader feeds int64 token ids and `labels` of [batch, "
        "seq]; this program's inputs differ" +
        (tokenPlace ? " ('" + tokenPlace->name + "' is " +
                          dtypeName(tokenPlace->dtype) + " " +
                          formatShape(tokenPlace->shape) + ")"
                    : std::string()) +
        ": pass --data DIR with its .npy inputs");
  tokenInput = tokenPlace->name;
  // This rank's rows, staged whole (context parallelism's boxes cut their
  // columns); labels are the tokens shifted, so they are cut alike.
  const InputLayout &layout = program->inputs.at(tokenInput);
  const Box &tokenBox = layout.boxes[rank];
  const Box &labelBox = program->inputs.at("labels").boxes[rank];
  if (program->inputs.at("labels").globalShape != layout.globalShape ||
      labelBox.offsets[0] != tokenBox.offsets[0] ||
      labelBox.sizes[0] != tokenBox.sizes[0])
    return Status::invalidArgument(
        "the data loader needs tokens and labels of one shape, cut into the "
        "same rows on every rank; this program places them differently: pass "
        "--data DIR with its .npy inputs");
  tokens.resize(tokenBox.sizes[0] * layout.globalShape[1]);
  labels.resize(tokens.size());
  return Status::success();
}

int64_t StagedBatch::getVocabularySize() const {
  const InputLayout &layout = program->inputs.at(tokenInput);
  return layout.idRange.size() >= 2 ? layout.idRange[1] : int64_t(1) << 31;
}

Status StagedBatch::openDataset(const std::string &datasetPath,
                                const std::string &tokenizerPath,
                                std::unique_ptr<TokenStream> &stream,
                                std::unique_ptr<BatchWindows> &windows) const {
  std::unique_ptr<Tokenizer> tokenizer;
  TITANRT_RETURN_IF_ERROR(loadTokenizer(tokenizerPath, tokenizer));
  stream = std::make_unique<TokenStream>();
  TITANRT_RETURN_IF_ERROR(
      TokenStream::open(datasetPath, *tokenizer, getVocabularySize(), *stream));
  const std::vector<int64_t> &shape = getGlobalShape();
  windows = std::make_unique<BatchWindows>(*stream, shape[0], shape[1]);
  return windows->check();
}

void StagedBatch::read(const BatchWindows &windows, int64_t position) {
  const InputLayout &layout = program->inputs.at(tokenInput);
  int64_t seqLen = layout.globalShape[1];
  windows.read(position, layout.boxes[rank].offsets[0],
               int64_t(tokens.size()) / seqLen, tokens, labels);
}

void StagedBatch::padRows(int64_t firstRow, int64_t ignoreIndex) {
  int64_t seqLen = getGlobalShape()[1];
  int64_t rowBegin = program->inputs.at(tokenInput).boxes[rank].offsets[0];
  int64_t first = std::max<int64_t>(firstRow - rowBegin, 0) * seqLen;
  if (first >= int64_t(tokens.size()))
    return;
  std::fill(tokens.begin() + first, tokens.end(), 0);
  std::fill(labels.begin() + first, labels.end(), ignoreIndex);
}

std::optional<int64_t> StagedBatch::getIgnoreIndex() const {
  const std::vector<int64_t> &range = program->inputs.at("labels").idRange;
  if (range.size() == 3)
    return range[2];
  return std::nullopt;
}

Status StagedBatch::write(int64_t batchIndex,
                          const RegionTable &regions) const {
  int64_t rowBegin = program->inputs.at(tokenInput).boxes[rank].offsets[0];
  for (const std::string &name : {tokenInput, std::string("labels")}) {
    const TensorPlace *argument = program->findArgument(name);
    const InputLayout &layout = program->inputs.at(name);
    const std::vector<int64_t> &staged = name == tokenInput ? tokens : labels;
    int64_t seqLen = layout.globalShape[1];
    llvm::StringRef bytes(reinterpret_cast<const char *>(staged.data()),
                          staged.size() * sizeof(int64_t));
    TITANRT_RETURN_IF_ERROR(
        checkIdRange(name, batchIndex, layout, argument->dtype, bytes));
    // This rank's box of the staged rows (the ref keeps a pointer to its
    // shape).
    const int64_t stagedShape[2] = {int64_t(staged.size()) / seqLen, seqLen};
    DenseTensorRef source(ElementType::I64, stagedShape, bytes);
    Box box = layout.boxes[rank];
    box.offsets[0] -= rowBegin;
    MutableDenseTensorRef local(
        ElementType::I64, argument->shape,
        llvm::MutableArrayRef<char>(
            reinterpret_cast<char *>(regions.address(*argument)),
            argument->bytes));
    copyBox(source, box, layout, local);
  }
  return Status::success();
}
