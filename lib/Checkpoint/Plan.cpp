//===- Plan.cpp - Checkpoint plans: which rank writes which box -----------===//

#include "titan/Checkpoint/Plan.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir::titan;
using llvm::StringRef;

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error mlir::titan::validateCheckpointPlan(const CheckpointPlan &plan) {
  if (plan.numRanks == 0)
    return fail("a checkpoint plan needs at least one rank");
  llvm::StringSet<> keys;
  for (const PlanTensor &tensor : plan.tensors) {
    if (!keys.insert(tensor.key).second)
      return fail("checkpoint plan: key '" + tensor.key + "' appears twice");
    if (tensor.boxes.size() != plan.numRanks)
      return fail("checkpoint plan: '" + tensor.key + "' has " +
                  llvm::Twine(tensor.boxes.size()) + " boxes for " +
                  llvm::Twine(plan.numRanks) + " ranks");
    std::vector<IndexBox> written;
    for (const PlanBox &box : tensor.boxes)
      if (box.writes)
        written.push_back(box.box);
    if (llvm::Error err = validateTiling(tensor.key, tensor.shape, written))
      return fail("checkpoint plan: the written chunks do not tile: " +
                  llvm::toString(std::move(err)));
    for (auto [rank, box] : llvm::enumerate(tensor.boxes))
      if (!box.writes && !llvm::is_contained(written, box.box))
        return fail("checkpoint plan: rank " + llvm::Twine(rank) +
                    " holds box offsets " + formatInts(box.box.offsets) +
                    " sizes " + formatInts(box.box.sizes) + " of '" +
                    tensor.key + "', which no rank writes");
  }
  return llvm::Error::success();
}

/// "[1,2]": a list without spaces, one field of a plan record.
static std::string formatField(llvm::ArrayRef<int64_t> values) {
  std::string text = "[";
  for (auto [i, value] : llvm::enumerate(values))
    text += (i ? "," : "") + std::to_string(value);
  return text + "]";
}

void mlir::titan::printCheckpointPlan(const CheckpointPlan &plan,
                                      llvm::raw_ostream &os) {
  os << "titan-checkpoint-plan 1\nranks " << plan.numRanks << "\n";
  for (const PlanTensor &tensor : plan.tensors) {
    os << "tensor " << tensor.key << " " << tensor.source << " "
       << torchDTypeName(tensor.dtype) << " " << formatField(tensor.shape)
       << "\n";
    for (auto [rank, box] : llvm::enumerate(tensor.boxes))
      os << "box " << rank << " " << formatField(box.box.offsets) << " "
         << formatField(box.box.sizes) << (box.writes ? " write" : " hold")
         << "\n";
  }
}

/// Parses a bracketed list "[1,2]" ("[]" is empty).
static std::optional<llvm::SmallVector<int64_t>> parseField(StringRef text) {
  if (!text.consume_front("[") || !text.consume_back("]"))
    return std::nullopt;
  llvm::SmallVector<int64_t> values;
  if (text.empty())
    return values;
  llvm::SmallVector<StringRef> parts;
  text.split(parts, ',');
  for (StringRef part : parts) {
    int64_t value;
    if (part.getAsInteger(10, value) || value < 0)
      return std::nullopt;
    values.push_back(value);
  }
  return values;
}

llvm::Expected<CheckpointPlan>
mlir::titan::parseCheckpointPlan(StringRef text, StringRef name) {
  CheckpointPlan plan;
  bool sawHeader = false, sawRanks = false;
  unsigned lineNumber = 0;
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    text = rest;
    ++lineNumber;
    line = line.trim();
    if (line.empty() || line.starts_with("#"))
      continue;
    auto error = [&](const llvm::Twine &message) {
      return fail("'" + name + "' line " + llvm::Twine(lineNumber) + ": " +
                  message);
    };
    llvm::SmallVector<StringRef> fields;
    line.split(fields, ' ', -1, /*KeepEmpty=*/false);
    StringRef kind = fields.front();
    if (!sawHeader) {
      if (line != "titan-checkpoint-plan 1")
        return error("expected 'titan-checkpoint-plan 1'");
      sawHeader = true;
    } else if (kind == "ranks") {
      if (sawRanks || fields.size() != 2 ||
          fields[1].getAsInteger(10, plan.numRanks))
        return error("expected one 'ranks <N>' record");
      sawRanks = true;
    } else if (kind == "tensor") {
      if (fields.size() != 5)
        return error("expected 'tensor <key> <source> <dtype> <shape>'");
      std::optional<TorchDType> dtype = parseTorchDTypeName(fields[3]);
      if (!dtype)
        return error("unknown dtype '" + fields[3] + "'");
      std::optional<llvm::SmallVector<int64_t>> shape = parseField(fields[4]);
      if (!shape)
        return error("bad shape '" + fields[4] + "'");
      plan.tensors.push_back(
          PlanTensor{fields[1].str(), fields[2].str(), *dtype, *shape, {}});
    } else if (kind == "box") {
      if (plan.tensors.empty())
        return error("'box' before any 'tensor'");
      PlanTensor &tensor = plan.tensors.back();
      unsigned rank;
      if (fields.size() != 5 || fields[1].getAsInteger(10, rank) ||
          (fields[4] != "write" && fields[4] != "hold"))
        return error("expected 'box <rank> <offsets> <sizes> write|hold'");
      if (rank != tensor.boxes.size())
        return error("box of rank " + llvm::Twine(rank) + " of '" +
                     tensor.key + "' out of rank order");
      std::optional<llvm::SmallVector<int64_t>> offsets = parseField(fields[2]);
      std::optional<llvm::SmallVector<int64_t>> sizes = parseField(fields[3]);
      if (!offsets || !sizes)
        return error("bad offsets or sizes");
      tensor.boxes.push_back(
          PlanBox{IndexBox{*offsets, *sizes}, fields[4] == "write"});
    } else {
      return error("unknown record '" + kind + "'");
    }
  }
  if (!sawRanks)
    return fail("'" + name + "' is not a checkpoint plan (no 'ranks' record)");
  if (llvm::Error err = validateCheckpointPlan(plan))
    return fail("'" + name + "': " + llvm::toString(std::move(err)));
  return plan;
}

llvm::Expected<CheckpointPlan>
mlir::titan::readCheckpointPlan(StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return fail("cannot read checkpoint plan '" + path +
                "': " + buffer.getError().message());
  return parseCheckpointPlan((*buffer)->getBuffer(), path);
}

/// The box covering all of a tensor of `shape`.
static IndexBox wholeBox(llvm::ArrayRef<int64_t> shape) {
  return IndexBox{llvm::SmallVector<int64_t>(shape.size(), 0),
                  llvm::SmallVector<int64_t>(shape)};
}

/// An uninitialized tensor of `dtype` and `shape`.
static DenseTensor makeTensor(TorchDType dtype, llvm::ArrayRef<int64_t> shape) {
  DenseTensor tensor{dtype, llvm::SmallVector<int64_t>(shape), {}};
  tensor.data.resize(tensor.numElements() * torchDTypeSize(dtype));
  return tensor;
}

llvm::Expected<DcpRankData>
mlir::titan::planRankData(const CheckpointPlan &plan, unsigned rank,
                          const StateTensors &state) {
  DcpRankData data;
  data.rank = rank;
  for (const PlanTensor &tensor : plan.tensors) {
    const PlanBox &box = tensor.boxes[rank];
    if (!box.writes)
      continue;
    auto source = state.find(tensor.source);
    if (source == state.end())
      return fail("no training-state tensor '" + tensor.source + "' for '" +
                  tensor.key + "'");
    const DenseTensor &global = source->second;
    if (global.dtype != tensor.dtype || global.shape != tensor.shape)
      return fail("'" + tensor.source + "' is " +
                  torchDTypeName(global.dtype) + " " +
                  formatInts(global.shape) + ", the plan expects " +
                  torchDTypeName(tensor.dtype) + " " +
                  formatInts(tensor.shape) + " for '" + tensor.key + "'");
    DcpTensorChunk chunk{tensor.key, tensor.shape, box.box.offsets,
                         makeTensor(tensor.dtype, box.box.sizes)};
    copyRegion(global, wholeBox(global.shape), chunk.data, box.box, box.box);
    data.chunks.push_back(std::move(chunk));
  }
  return data;
}

llvm::Expected<StateTensors>
mlir::titan::loadPlanState(const DcpReader &reader,
                           const CheckpointPlan &plan) {
  const DcpMetadata &metadata = reader.getMetadata();
  StateTensors state;
  std::map<std::string, std::string> keyOfSource;
  for (const PlanTensor &tensor : plan.tensors) {
    auto saved = metadata.tensors.find(tensor.key);
    if (saved == metadata.tensors.end())
      return fail("the checkpoint has no tensor '" + tensor.key +
                  "', which the plan needs");
    if (saved->second.dtype != tensor.dtype ||
        saved->second.size != tensor.shape)
      return fail("the checkpoint holds '" + tensor.key + "' as " +
                  torchDTypeName(saved->second.dtype) + " " +
                  formatInts(saved->second.size) + ", the plan expects " +
                  torchDTypeName(tensor.dtype) + " " +
                  formatInts(tensor.shape));
    // Every rank reads its own box; the checkpoint's chunks tile the tensor
    // (DcpReader validates that), so each box is covered, and the boxes of
    // the plan's writers tile it, so the assembled tensor is complete.
    DenseTensor global = makeTensor(tensor.dtype, tensor.shape);
    IndexBox whole = wholeBox(tensor.shape);
    for (const PlanBox &box : tensor.boxes) {
      llvm::Expected<DenseTensor> local = reader.readBox(tensor.key, box.box);
      if (!local)
        return local.takeError();
      copyRegion(*local, box.box, global, whole, box.box);
    }
    auto [previous, inserted] = state.try_emplace(tensor.source, global);
    if (!inserted && previous->second.data != global.data)
      return fail("'" + tensor.key + "' and '" + keyOfSource[tensor.source] +
                  "' both hold '" + tensor.source + "' but differ");
    keyOfSource.try_emplace(tensor.source, tensor.key);
  }
  return state;
}
