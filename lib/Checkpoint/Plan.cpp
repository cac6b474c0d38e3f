//===- Plan.cpp - Checkpoint plans: which rank writes which box -----------===//

#include "titan/Checkpoint/Plan.h"
#include "titan/Checkpoint/Safetensors.h"
#include "titan/Support/CheckedSize.h"
#include "titan/Support/FormatInts.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <cstring>
#include <limits>

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
    for (auto [rank, box] : llvm::enumerate(tensor.boxes)) {
      if (box.held) {
        if (box.writes)
          written.push_back(box.box);
        continue;
      }
      if (box.writes)
        return fail("checkpoint plan: rank " + llvm::Twine(rank) + " writes '" +
                    tensor.key + "', which it does not hold");
      if (!box.box.offsets.empty() || !box.box.sizes.empty())
        return fail("checkpoint plan: rank " + llvm::Twine(rank) +
                    " does not hold '" + tensor.key + "' but has a box of it");
    }
    if (llvm::Error err = validateTiling(tensor.key, tensor.shape, written))
      return fail("checkpoint plan: the written chunks do not tile: " +
                  llvm::toString(std::move(err)));
    // Tensors of the plan are allocated whole when a state is loaded.
    if (!checkedByteSize(tensor.shape, getElementTypeSize(tensor.dtype)))
      return fail("checkpoint plan: '" + tensor.key + "' of shape " +
                  formatInts(tensor.shape) + " and dtype " +
                  torchDTypeName(tensor.dtype) + " has more than 2^63-1 bytes");
    for (auto [rank, box] : llvm::enumerate(tensor.boxes))
      if (box.held && !box.writes && !llvm::is_contained(written, box.box))
        return fail("checkpoint plan: rank " + llvm::Twine(rank) +
                    " holds box offsets " + formatInts(box.box.offsets) +
                    " sizes " + formatInts(box.box.sizes) + " of '" +
                    tensor.key + "', which no rank writes");
  }
  // An alias is another name of a parameter a state key holds.
  for (const PlanTensor &alias : plan.tensors) {
    if (alias.kind != PlanTensorKind::Alias)
      continue;
    const PlanTensor *tied = nullptr;
    for (const PlanTensor &tensor : plan.tensors)
      if (tensor.kind == PlanTensorKind::State && tensor.source == alias.source)
        tied = &tensor;
    if (!tied)
      return fail("checkpoint plan: alias '" + alias.key + "' of '" +
                  alias.source + "', which no state key holds");
    if (tied->dtype != alias.dtype || tied->shape != alias.shape)
      return fail("checkpoint plan: alias '" + alias.key + "' is " +
                  torchDTypeName(alias.dtype) + " " + formatInts(alias.shape) +
                  ", the '" + tied->key + "' it aliases " +
                  torchDTypeName(tied->dtype) + " " + formatInts(tied->shape));
  }
  for (const PlanValue &value : plan.values) {
    if (!keys.insert(value.key).second)
      return fail("checkpoint plan: key '" + value.key + "' appears twice");
    if (!llvm::is_contained({ElementType::F32, ElementType::F64,
                             ElementType::I32, ElementType::I64},
                            value.dtype))
      return fail("checkpoint plan: value '" + value.key + "' comes from a " +
                  torchDTypeName(value.dtype) +
                  " tensor; an int is taken from float32, float64, int32 or "
                  "int64");
  }
  return llvm::Error::success();
}

llvm::Expected<CheckpointPlan> mlir::titan::mergePipelineCheckpointPlans(
    llvm::ArrayRef<CheckpointPlan> stagePlans) {
  auto error = [](const llvm::Twine &message) {
    return fail("merging the checkpoint plans of pipeline ranks: " + message);
  };
  if (stagePlans.empty())
    return error("no pipeline rank");
  unsigned stageRanks = stagePlans.front().numRanks;
  for (auto [pipelineRank, stage] : llvm::enumerate(stagePlans)) {
    if (stage.numRanks != stageRanks)
      return error("pipeline rank 0's plan is for " + llvm::Twine(stageRanks) +
                   " ranks, pipeline rank " + llvm::Twine(pipelineRank) +
                   "'s for " + llvm::Twine(stage.numRanks) +
                   "; every pipeline rank's program runs on as many ranks");
    if (llvm::Error err = validateCheckpointPlan(stage))
      return error("pipeline rank " + llvm::Twine(pipelineRank) + ": " +
                   llvm::toString(std::move(err)));
  }
  uint64_t numRanks = uint64_t(stageRanks) * stagePlans.size();
  if (numRanks > std::numeric_limits<unsigned>::max())
    return error(llvm::Twine(stagePlans.size()) + " pipeline ranks of " +
                 llvm::Twine(stageRanks) + " ranks are too many ranks");
  CheckpointPlan merged;
  merged.numRanks = numRanks;
  // Where each key went in `merged`, and the first pipeline rank holding it.
  llvm::StringMap<std::pair<size_t, unsigned>> tensorOf, valueOf;
  for (auto [pipelineRank, stage] : llvm::enumerate(stagePlans)) {
    unsigned firstRank = pipelineRank * stageRanks;
    for (const PlanTensor &tensor : stage.tensors) {
      auto [found, inserted] = tensorOf.try_emplace(
          tensor.key, merged.tensors.size(), unsigned(pipelineRank));
      if (inserted) {
        PlanTensor &added =
            merged.tensors.emplace_back(PlanTensor{tensor.key,
                                                   tensor.source,
                                                   tensor.dtype,
                                                   tensor.shape,
                                                   {},
                                                   tensor.kind});
        added.boxes.assign(numRanks, PlanBox{IndexBox{}, /*writes=*/false,
                                             /*held=*/false});
        llvm::copy(tensor.boxes, added.boxes.begin() + firstRank);
        continue;
      }
      // A tied weight: the first pipeline rank holding it writes it, the
      // others hold copies of its boxes.
      auto [index, owner] = found->second;
      PlanTensor &first = merged.tensors[index];
      if (first.source != tensor.source || first.dtype != tensor.dtype ||
          first.shape != tensor.shape || first.kind != tensor.kind)
        return error("'" + tensor.key + "' differs between pipeline ranks " +
                     llvm::Twine(owner) + " and " + llvm::Twine(pipelineRank) +
                     ": " + torchDTypeName(first.dtype) + " " +
                     formatInts(first.shape) + " from '" + first.source +
                     "' on pipeline rank " + llvm::Twine(owner) + ", " +
                     torchDTypeName(tensor.dtype) + " " +
                     formatInts(tensor.shape) + " from '" + tensor.source +
                     "' on pipeline rank " + llvm::Twine(pipelineRank) +
                     (first.kind != tensor.kind ? " (of another kind)" : ""));
      std::vector<IndexBox> written;
      for (unsigned rank = 0; rank < stageRanks; ++rank) {
        const PlanBox &box = first.boxes[owner * stageRanks + rank];
        if (box.held && box.writes)
          written.push_back(box.box);
      }
      for (auto [rank, box] : llvm::enumerate(tensor.boxes)) {
        if (!box.held)
          continue;
        if (!llvm::is_contained(written, box.box))
          return error(
              "'" + tensor.key + "' is sharded differently on pipeline ranks " +
              llvm::Twine(owner) + " and " + llvm::Twine(pipelineRank) +
              ": rank " + llvm::Twine(rank) + " of pipeline rank " +
              llvm::Twine(pipelineRank) + " holds box offsets " +
              formatInts(box.box.offsets) + " sizes " +
              formatInts(box.box.sizes) + ", which pipeline rank " +
              llvm::Twine(owner) + " does not write");
        first.boxes[firstRank + rank] =
            PlanBox{box.box, /*writes=*/false, /*held=*/true};
      }
    }
    for (const PlanValue &value : stage.values) {
      auto [found, inserted] = valueOf.try_emplace(
          value.key, merged.values.size(), unsigned(pipelineRank));
      if (inserted) {
        merged.values.push_back(value);
        continue;
      }
      auto [index, owner] = found->second;
      const PlanValue &first = merged.values[index];
      if (first.source != value.source || first.dtype != value.dtype)
        return error("value '" + value.key +
                     "' differs between pipeline ranks " + llvm::Twine(owner) +
                     " and " + llvm::Twine(pipelineRank) + ": " +
                     torchDTypeName(first.dtype) + " from '" + first.source +
                     "' on pipeline rank " + llvm::Twine(owner) + ", " +
                     torchDTypeName(value.dtype) + " from '" + value.source +
                     "' on pipeline rank " + llvm::Twine(pipelineRank));
    }
  }
  if (llvm::Error err = validateCheckpointPlan(merged))
    return error(llvm::toString(std::move(err)));
  return merged;
}

namespace {
/// "[1,2]": a list without spaces, one field of a plan record, printed
/// straight to the stream (a plan has a line per rank and tensor).
struct Field {
  llvm::ArrayRef<int64_t> values;
};
llvm::raw_ostream &operator<<(llvm::raw_ostream &os, Field field) {
  os << '[';
  for (auto [i, value] : llvm::enumerate(field.values)) {
    if (i)
      os << ',';
    os << value;
  }
  return os << ']';
}
} // namespace

void mlir::titan::printCheckpointPlan(const CheckpointPlan &plan,
                                      llvm::raw_ostream &os) {
  os << "titan-checkpoint-plan 1\nranks " << plan.numRanks << "\n";
  for (const PlanTensor &tensor : plan.tensors) {
    os << "tensor " << tensor.key << " " << tensor.source << " "
       << torchDTypeName(tensor.dtype) << " " << Field{tensor.shape};
    if (tensor.kind == PlanTensorKind::Alias)
      os << " alias";
    else if (tensor.kind == PlanTensorKind::Buffer)
      os << " buffer";
    os << "\n";
    for (auto [rank, box] : llvm::enumerate(tensor.boxes)) {
      os << "box " << rank;
      if (!box.held) {
        os << " none\n";
        continue;
      }
      os << " " << Field{box.box.offsets} << " " << Field{box.box.sizes}
         << (box.writes ? " write" : " hold") << "\n";
    }
  }
  for (const PlanValue &value : plan.values)
    os << "value " << value.key << " " << value.source << " "
       << torchDTypeName(value.dtype) << "\n";
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
      PlanTensorKind tensorKind = PlanTensorKind::State;
      if (fields.size() == 6 && fields[5] == "alias")
        tensorKind = PlanTensorKind::Alias;
      else if (fields.size() == 6 && fields[5] == "buffer")
        tensorKind = PlanTensorKind::Buffer;
      else if (fields.size() != 5)
        return error(
            "expected 'tensor <key> <source> <dtype> <shape> [alias|buffer]'");
      std::optional<ElementType> dtype = parseTorchDTypeName(fields[3]);
      if (!dtype)
        return error("unknown dtype '" + fields[3] + "'");
      std::optional<llvm::SmallVector<int64_t>> shape = parseField(fields[4]);
      if (!shape)
        return error("bad shape '" + fields[4] + "'");
      plan.tensors.push_back(PlanTensor{
          fields[1].str(), fields[2].str(), *dtype, *shape, {}, tensorKind});
    } else if (kind == "box") {
      if (plan.tensors.empty())
        return error("'box' before any 'tensor'");
      PlanTensor &tensor = plan.tensors.back();
      unsigned rank;
      bool absent = fields.size() == 3 && fields[2] == "none";
      if ((fields.size() != 5 && !absent) || fields[1].getAsInteger(10, rank) ||
          (!absent && fields[4] != "write" && fields[4] != "hold"))
        return error("expected 'box <rank> <offsets> <sizes> write|hold' or "
                     "'box <rank> none'");
      if (rank != tensor.boxes.size())
        return error("box of rank " + llvm::Twine(rank) + " of '" + tensor.key +
                     "' out of rank order");
      if (absent) {
        tensor.boxes.push_back(
            PlanBox{IndexBox{}, /*writes=*/false, /*held=*/false});
        continue;
      }
      std::optional<llvm::SmallVector<int64_t>> offsets = parseField(fields[2]);
      std::optional<llvm::SmallVector<int64_t>> sizes = parseField(fields[3]);
      if (!offsets || !sizes)
        return error("bad offsets or sizes");
      tensor.boxes.push_back(
          PlanBox{IndexBox{*offsets, *sizes}, fields[4] == "write"});
    } else if (kind == "value") {
      std::optional<ElementType> dtype;
      if (fields.size() != 4 || !(dtype = parseTorchDTypeName(fields[3])))
        return error("expected 'value <key> <source> <dtype>'");
      plan.values.push_back(
          PlanValue{fields[1].str(), fields[2].str(), *dtype});
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

llvm::Expected<CheckpointPlan> mlir::titan::readCheckpointPlan(StringRef path) {
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
static DenseTensor makeTensor(ElementType dtype,
                              llvm::ArrayRef<int64_t> shape) {
  DenseTensor tensor{dtype, llvm::SmallVector<int64_t>(shape), {}};
  tensor.data.resize(tensor.numElements() * getElementTypeSize(dtype));
  return tensor;
}

/// The int a 0-d tensor of the dtypes PlanValue allows holds; `what` names
/// it in errors.
static llvm::Expected<int64_t> scalarToInt(DenseTensorRef tensor,
                                           const llvm::Twine &what) {
  if (!tensor.shape.empty())
    return fail(what + " has shape " + formatInts(tensor.shape) +
                ", not a 0-d tensor holding an int");
  double value;
  switch (tensor.dtype) {
  case ElementType::I64:
    return llvm::support::endian::read64le(tensor.data.data());
  case ElementType::I32:
    return int32_t(llvm::support::endian::read32le(tensor.data.data()));
  case ElementType::F32: {
    float single;
    std::memcpy(&single, tensor.data.data(), sizeof(single));
    value = single;
    break;
  }
  case ElementType::F64:
    std::memcpy(&value, tensor.data.data(), sizeof(value));
    break;
  default:
    return fail(what + " is " + torchDTypeName(tensor.dtype) +
                ", which cannot hold an int");
  }
  if (value != std::trunc(value) || std::abs(value) > 0x1p53)
    return fail(what + " holds " + std::to_string(value) +
                ", which is not an integer");
  return int64_t(value);
}

/// A 0-d tensor of `dtype` (one PlanValue allows) holding `value`.
static DenseTensor intToScalar(int64_t value, ElementType dtype) {
  DenseTensor tensor = makeTensor(dtype, {});
  char *data = tensor.data.data();
  switch (dtype) {
  case ElementType::I64:
    llvm::support::endian::write64le(data, value);
    break;
  case ElementType::I32:
    llvm::support::endian::write32le(data, uint32_t(value));
    break;
  case ElementType::F32: {
    float single = value;
    std::memcpy(data, &single, sizeof(single));
    break;
  }
  case ElementType::F64: {
    double wide = value;
    std::memcpy(data, &wide, sizeof(wide));
    break;
  }
  default:
    llvm_unreachable("validateCheckpointPlan allows no other value dtype");
  }
  return tensor;
}

/// Looks up `source` for `key` and checks its dtype and shape.
static llvm::Expected<DenseTensorRef>
lookupSource(StateLookup state, StringRef source, StringRef key,
             ElementType dtype, llvm::ArrayRef<int64_t> shape) {
  llvm::Expected<DenseTensorRef> global = state(source);
  if (!global)
    return global.takeError();
  if (global->dtype != dtype || global->shape != shape)
    return fail("'" + source + "' is " + torchDTypeName(global->dtype) + " " +
                formatInts(global->shape) + ", the plan expects " +
                torchDTypeName(dtype) + " " + formatInts(shape) + " for '" +
                key + "'");
  return global;
}

/// What rank `rank` writes; `state` returns the global tensor of a source
/// or, with `fromShards`, the box of it the rank holds.
static llvm::Expected<DcpRankData> rankData(const CheckpointPlan &plan,
                                            unsigned rank, StateLookup state,
                                            bool fromShards) {
  if (rank >= plan.numRanks)
    return fail("rank " + llvm::Twine(rank) +
                " is not a rank of the plan, which has " +
                llvm::Twine(plan.numRanks) + " ranks");
  DcpRankData data;
  data.rank = rank;
  for (const PlanTensor &tensor : plan.tensors) {
    // A rank saves only what it writes: never a tensor it does not hold.
    const PlanBox &box = tensor.boxes[rank];
    if (!box.held || !box.writes)
      continue;
    IndexBox sourceBox = fromShards ? box.box : wholeBox(tensor.shape);
    llvm::Expected<DenseTensorRef> source = lookupSource(
        state, tensor.source, tensor.key, tensor.dtype, sourceBox.sizes);
    if (!source)
      return source.takeError();
    data.chunks.push_back(DcpTensorChunk{tensor.key, tensor.shape, box.box,
                                         *source, std::move(sourceBox)});
  }
  // DCP's coordinator writes the non-tensor values.
  if (rank != 0)
    return data;
  for (const PlanValue &value : plan.values) {
    llvm::Expected<DenseTensorRef> source =
        lookupSource(state, value.source, value.key, value.dtype, {});
    if (!source)
      return source.takeError();
    llvm::Expected<int64_t> integer =
        scalarToInt(*source, "'" + value.source + "'");
    if (!integer)
      return integer.takeError();
    data.bytesEntries.push_back(
        {value.key, writeTorchSaveObject(PickleValue::integer(*integer))});
  }
  return data;
}

llvm::Expected<DcpRankData>
mlir::titan::planRankData(const CheckpointPlan &plan, unsigned rank,
                          StateLookup state) {
  return rankData(plan, rank, state, /*fromShards=*/false);
}

llvm::Expected<DcpRankData>
mlir::titan::planRankShardData(const CheckpointPlan &plan, unsigned rank,
                               StateLookup shards) {
  return rankData(plan, rank, shards, /*fromShards=*/true);
}

/// Reads value `value` of a plan from `reader`: the int of a bytes entry
/// (a torch.save archive) or of a 0-d tensor.
static llvm::Expected<int64_t> readValue(const DcpReader &reader,
                                         const PlanValue &value) {
  if (reader.getMetadata().tensors.count(value.key)) {
    llvm::Expected<DenseTensor> tensor = reader.readTensor(value.key);
    if (!tensor)
      return tensor.takeError();
    return scalarToInt(*tensor, "the checkpoint's '" + value.key + "'");
  }
  llvm::Expected<std::string> blob = reader.readBytes(value.key);
  if (!blob)
    return blob.takeError();
  llvm::Expected<TorchSaveArchive> archive = readTorchSave(*blob, value.key);
  if (!archive)
    return archive.takeError();
  if (!archive->root->is(PickleValue::Kind::Int))
    return fail("the checkpoint's bytes entry '" + value.key +
                "' does not hold an int, which the plan expects");
  return archive->root->getInt();
}

/// Loads into what `destination` returns, for every tensor of `plan`, the
/// box `boxOf` gives and every value; a tensor `boxOf` gives no box for (one
/// the loading rank does not hold) is skipped: not looked up in the
/// checkpoint, not passed to `destination`. A source several keys hold is
/// loaded from the first (and kept, as the destination's memory may be
/// reused) and compared with the others.
static llvm::Error loadPlanBoxes(
    const DcpReader &reader, const CheckpointPlan &plan,
    llvm::function_ref<std::optional<IndexBox>(const PlanTensor &)> boxOf,
    StateDestination destination) {
  const DcpMetadata &metadata = reader.getMetadata();
  // The tensors loaded and their boxes, in plan order: an alias or buffer
  // only where the checkpoint has it.
  std::vector<std::pair<const PlanTensor *, IndexBox>> boxes;
  for (const PlanTensor &tensor : plan.tensors) {
    if (tensor.kind != PlanTensorKind::State &&
        !metadata.tensors.count(tensor.key))
      continue;
    if (std::optional<IndexBox> box = boxOf(tensor))
      boxes.emplace_back(&tensor, std::move(*box));
  }
  std::map<std::string, unsigned> keysOf;
  for (const auto &[tensor, box] : boxes)
    ++keysOf[tensor->source];
  for (const PlanValue &value : plan.values)
    ++keysOf[value.source];
  // The loaded sources: the key each was loaded from, and its data when
  // other keys hold it too.
  std::map<std::string, std::pair<std::string, std::vector<char>>> loaded;
  // Loads `source` from `key` with `read`, or checks that another key
  // already loaded the same values.
  auto load = [&](const std::string &key, const std::string &source,
                  ElementType dtype, llvm::ArrayRef<int64_t> shape,
                  llvm::function_ref<llvm::Error(MutableDenseTensorRef)> read)
      -> llvm::Error {
    auto previous = loaded.find(source);
    if (previous != loaded.end()) {
      DenseTensor again = makeTensor(dtype, shape);
      if (llvm::Error err = read(again))
        return err;
      const auto &[firstKey, first] = previous->second;
      if (!llvm::equal(first, again.data))
        return fail("the checkpoint's '" + key + "' and '" + firstKey +
                    "' differ, but the program holds both in '" + source +
                    "' (names of one tied parameter, or steps of the one "
                    "step titan keeps); this model cannot load them");
      return llvm::Error::success();
    }
    llvm::Expected<MutableDenseTensorRef> target =
        destination(source, dtype, shape);
    if (!target)
      return target.takeError();
    int64_t count = 1;
    for (int64_t dim : shape)
      count *= dim;
    if (target->dtype != dtype || target->shape != shape ||
        target->data.size() != count * getElementTypeSize(dtype))
      return fail("the destination of '" + source + "' is " +
                  torchDTypeName(target->dtype) + " " +
                  formatInts(target->shape) + ", '" + key + "' needs " +
                  torchDTypeName(dtype) + " " + formatInts(shape));
    if (llvm::Error err = read(*target))
      return err;
    std::vector<char> kept;
    if (keysOf[source] > 1)
      kept.assign(target->data.begin(), target->data.end());
    loaded.try_emplace(source, key, std::move(kept));
    return llvm::Error::success();
  };
  // Check every key before loading anything.
  for (const auto &[tensor, box] : boxes) {
    auto saved = metadata.tensors.find(tensor->key);
    if (saved == metadata.tensors.end())
      return fail("the checkpoint has no tensor '" + tensor->key +
                  "', which the plan needs");
    // Floats load into another float type as DCP's copy_ loads them
    // (rounded to nearest even): a float32 run resumes as pure bf16.
    if (!canConvertElements(saved->second.dtype, tensor->dtype) ||
        saved->second.size != tensor->shape)
      return fail("the checkpoint holds '" + tensor->key + "' as " +
                  torchDTypeName(saved->second.dtype) + " " +
                  formatInts(saved->second.size) + ", the plan expects " +
                  torchDTypeName(tensor->dtype) + " " +
                  formatInts(tensor->shape));
  }
  for (const PlanValue &value : plan.values)
    if (!metadata.tensors.count(value.key) &&
        !llvm::is_contained(metadata.bytesEntries, value.key))
      return fail("the checkpoint has no entry '" + value.key +
                  "', which the plan needs");
  for (const auto &entry : boxes) {
    // Not a structured binding: the lambda below captures them (C++17).
    const PlanTensor *tensor = entry.first;
    const IndexBox &box = entry.second;
    // The checkpoint's chunks tile the tensor (DcpReader validates that), so
    // every box is covered.
    ElementType saved = metadata.tensors.at(tensor->key).dtype;
    auto read = [&](MutableDenseTensorRef target) -> llvm::Error {
      if (saved == target.dtype)
        return reader.readBoxInto(tensor->key, box, target);
      DenseTensor staged = makeTensor(saved, box.sizes);
      if (llvm::Error err = reader.readBoxInto(tensor->key, box, staged))
        return err;
      convertElements(saved, staged.data.data(), target.dtype,
                      target.data.data(),
                      staged.data.size() / getElementTypeSize(saved));
      return llvm::Error::success();
    };
    if (llvm::Error err =
            load(tensor->key, tensor->source, tensor->dtype, box.sizes, read))
      return err;
  }
  for (const PlanValue &value : plan.values) {
    llvm::Expected<int64_t> integer = readValue(reader, value);
    if (!integer)
      return integer.takeError();
    DenseTensor scalar = intToScalar(*integer, value.dtype);
    if (llvm::Error err = load(value.key, value.source, value.dtype, {},
                               [&](MutableDenseTensorRef target) {
                                 llvm::copy(scalar.data, target.data.begin());
                                 return llvm::Error::success();
                               }))
      return err;
  }
  return llvm::Error::success();
}

llvm::Error mlir::titan::loadPlanState(const DcpReader &reader,
                                       const CheckpointPlan &plan,
                                       StateDestination destination) {
  return loadPlanBoxes(
      reader, plan,
      [](const PlanTensor &tensor) -> std::optional<IndexBox> {
        return wholeBox(tensor.shape);
      },
      destination);
}

llvm::Error mlir::titan::loadPlanRank(const DcpReader &reader,
                                      const CheckpointPlan &plan, unsigned rank,
                                      StateDestination destination) {
  if (rank >= plan.numRanks)
    return fail("rank " + llvm::Twine(rank) +
                " is not a rank of the plan, which has " +
                llvm::Twine(plan.numRanks) + " ranks");
  return loadPlanBoxes(
      reader, plan,
      [&](const PlanTensor &tensor) -> std::optional<IndexBox> {
        const PlanBox &box = tensor.boxes[rank];
        if (!box.held)
          return std::nullopt;
        return box.box;
      },
      destination);
}

llvm::Expected<StateTensors>
mlir::titan::loadPlanState(const DcpReader &reader,
                           const CheckpointPlan &plan) {
  StateTensors state;
  auto allocate = [&](StringRef source, ElementType dtype,
                      llvm::ArrayRef<int64_t> shape)
      -> llvm::Expected<MutableDenseTensorRef> {
    return MutableDenseTensorRef(state[source.str()] =
                                     makeTensor(dtype, shape));
  };
  if (llvm::Error err = loadPlanState(reader, plan, allocate))
    return std::move(err);
  return state;
}
