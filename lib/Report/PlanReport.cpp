//===- PlanReport.cpp - human-readable parallel plan report ---------------===//
//
// The report lists the mesh, the placement of every parameter and the
// collectives one rank runs per step: by kind, per transformer block and
// phase, and in detail. Blocks and phases are facts recorded in the IR
// (include/titan/Dialect/Provenance.h): the importer stamps every op with
// the path of the module it came from, so a collective belongs to the block
// of the op that computes the value it moves (or, for an argument, of its
// first user) - "layers.3" for "layers.3.attention.wq" - whatever the model
// calls its blocks ("transformer.h.3" in GPT-2); titan-build-train-step
// stamps the phase.
//
//===----------------------------------------------------------------------===//

#include "titan/Report/PlanReport.h"

#include "PartitionedStep.h"

#include "titan/Dialect/ArgRole.h"
#include "titan/Dialect/ArgumentTrace.h"
#include "titan/Dialect/GlobalShape.h"
#include "titan/Dialect/PipelineMesh.h"
#include "titan/Dialect/Provenance.h"
#include "titan/Dialect/TitanDialect.h"
#include "titan/Placement/PlacementAlgebra.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

using namespace mlir;
using namespace mlir::titan;

namespace {

/// Bytes of a static tensor type.
int64_t bytesOf(Type type) { return getStaticByteSize(type); }

/// The tensor a collective communicates: its operand (a recv's result).
Value communicatedValue(Operation *op) {
  return op->getNumOperands() ? op->getOperand(0) : op->getResult(0);
}

/// "1.5 MB" style.
std::string humanBytes(double bytes) {
  const char *units[] = {"B", "KB", "MB", "GB", "TB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  return llvm::formatv("{0:F1} {1}", bytes, units[unit]).str();
}

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string text = "[";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(shape, os);
  os << "]";
  return text;
}

/// "f32[2,32,256]".
std::string typeString(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << tensor.getElementType() << shapeString(tensor.getShape());
  return text;
}

/// Orders blocks by stem, then numerically by index ("layers.2" before
/// "layers.10").
bool blockLess(StringRef a, StringRef b) {
  auto [stemA, indexA] = a.rsplit('.');
  auto [stemB, indexB] = b.rsplit('.');
  if (stemA != stemB)
    return stemA < stemB;
  unsigned ia = 0, ib = 0;
  (void)indexA.getAsInteger(10, ia);
  (void)indexB.getAsInteger(10, ib);
  return ia < ib;
}

/// The parameter whose value, or optimizer state, `value` is: followed back
/// through collectives and ops of one operand (casts, reshapes); -1 for
/// any other value. `argParams` maps argument numbers to parameters.
int paramOf(Value value, const DenseMap<unsigned, int> &argParams) {
  BlockArgument arg = traceToArgument(value);
  return arg ? argParams.lookup_or(arg.getArgNumber(), -1) : -1;
}

/// A count and the bytes one rank sends.
struct Tally {
  int64_t count = 0;
  double bytes = 0;
  void add(double sent) {
    ++count;
    bytes += sent;
  }
};

/// One line of a block's listing: identical collectives of one phase.
struct Line {
  Phase phase;
  std::string kind, axes, dims, what;
  Tally tally;
};

/// The collectives of a block (or of what lies outside the blocks).
struct BlockListing {
  Tally phases[3];
  Tally total;
  /// Lines in program order, identical ones merged.
  std::vector<Line> lines;
  void add(Line line, double sent) {
    phases[static_cast<int>(line.phase)].add(sent);
    total.add(sent);
    for (Line &existing : lines)
      if (existing.phase == line.phase && existing.kind == line.kind &&
          existing.axes == line.axes && existing.dims == line.dims &&
          existing.what == line.what) {
        existing.tally.add(sent);
        return;
      }
    line.tally.add(sent);
    lines.push_back(std::move(line));
  }
  /// The lines as text, with `block`'s name in parameter names replaced, to
  /// find blocks that communicate alike.
  std::string signature(StringRef block) const {
    std::string text;
    for (const Line &line : lines) {
      std::string what = line.what;
      if (StringRef(what).starts_with(block))
        what = "*" + what.substr(block.size());
      text += llvm::formatv("{0}|{1}|{2}|{3}|{4}|{5}|{6}\n",
                            static_cast<int>(line.phase), line.kind, line.axes,
                            line.dims, what, line.tally.count, line.tally.bytes)
                  .str();
    }
    return text;
  }
};

/// Prints the lines of `listing`, phase by phase.
void printLines(const BlockListing &listing, llvm::raw_ostream &os) {
  SmallVector<const Line *> lines;
  for (const Line &line : listing.lines)
    lines.push_back(&line);
  llvm::stable_sort(
      lines, [](const Line *a, const Line *b) { return a->phase < b->phase; });
  for (const Line *line : lines)
    os << llvm::formatv("  {0,-9} {1,3} x {2,-14} {3,-14} {4,-10} {5,-42} "
                        "{6,10}\n",
                        stringifyPhase(line->phase), line->tally.count,
                        line->kind, line->axes, line->dims, line->what,
                        humanBytes(line->tally.bytes));
}

/// Prints the counts and bytes of `listing` per phase and in all.
void printTallies(StringRef name, const BlockListing &listing,
                  llvm::raw_ostream &os) {
  os << llvm::formatv("  {0,-24}", name);
  for (const Tally &tally : listing.phases)
    os << llvm::formatv(" {0,5} {1,10}", tally.count, humanBytes(tally.bytes));
  os << llvm::formatv(" {0,5} {1,10}\n", listing.total.count,
                      humanBytes(listing.total.bytes));
}

} // namespace

/// The padding of uneven shards per rank, when there is any: the bytes of
/// the step's arguments (parameters, optimizer state, inputs) that a rank
/// holds past its chunks, and the FLOPs it spends on padding per step
/// (titan.padding_flops).
static void printPadding(func::FuncOp function, MeshOp mesh,
                         llvm::raw_ostream &os) {
  FailureOr<DeviceMesh> deviceMesh = mesh.getDeviceMesh();
  if (failed(deviceMesh))
    return;
  SmallVector<int64_t> bytes(deviceMesh->getNumRanks(), 0);
  bool any = false;
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    auto placements = function.getArgAttrOfType<PlacementsAttr>(
        i, TitanDialect::kPlacementsAttrName);
    if (!placements ||
        !function.getArgAttr(i, TitanDialect::kGlobalShapeAttrName))
      continue;
    any = true;
    auto local = cast<RankedTensorType>(function.getArgument(i).getType());
    SmallVector<int64_t> global =
        getArgGlobalShape(function, i, mesh.getAxisSizes());
    for (int64_t rank = 0; rank < deviceMesh->getNumRanks(); ++rank) {
      llvm::Expected<LocalShard> shard = computeLocalShapeAndGlobalOffset(
          global, deviceMesh->getSizes(), placements.getPlacements(),
          deviceMesh->getCoordinate(rank));
      if (!shard) {
        llvm::consumeError(shard.takeError());
        continue;
      }
      int64_t held = 1;
      for (int64_t size : shard->shape)
        held *= size;
      bytes[rank] +=
          bytesOf(local) - held * getElementByteWidth(local.getElementType());
    }
  }
  auto flops = function->getAttrOfType<DenseI64ArrayAttr>(
      TitanDialect::kPaddingFlopsAttrName);
  if (!any && !flops)
    return;
  os << "padding of uneven shards (torch.chunk; every rank holds the largest "
        "chunk), per rank:\n";
  for (int64_t rank = 0; rank < deviceMesh->getNumRanks(); ++rank)
    os << llvm::formatv("  rank {0,-4} {1,10} of arguments, {2} FLOP per "
                        "step\n",
                        rank, humanBytes(bytes[rank]),
                        flops && rank < int64_t(flops.size()) ? flops[rank]
                                                              : 0);
  os << "\n";
}

std::string mlir::titan::describeGradientAccumulation(int64_t microbatches) {
  return llvm::formatv("gradient accumulation: {0} microbatches per step, "
                       "their gradients summed before the optimizer",
                       microbatches)
      .str();
}

LogicalResult mlir::titan::writePlanReport(ModuleOp module,
                                           llvm::raw_ostream &os) {
  FailureOr<PartitionedStep> step =
      getPartitionedStep(module, "the plan report");
  if (failed(step))
    return failure();
  func::FuncOp function = step->function;
  MeshOp mesh = step->mesh;

  os << "== titan plan report ==\nmesh @" << mesh.getSymName() << ": ";
  llvm::interleave(
      llvm::zip(mesh.getAxisNames(), mesh.getAxisSizes()), os,
      [&](auto axis) {
        os << cast<StringAttr>(std::get<0>(axis)).getValue() << "="
           << std::get<1>(axis);
      },
      " x ");
  os << " (" << mesh.getNumDevices() << " ranks)\n";
  // Gradient accumulation: the one-stage pipeline of
  // titan-partition-pipeline.
  if (auto pipeline =
          function->getAttrOfType<DictionaryAttr>(kPipelineAttrName)) {
    auto microbatches = pipeline.getAs<IntegerAttr>("microbatches");
    if (microbatches && microbatches.getInt() > 1)
      os << describeGradientAccumulation(microbatches.getInt()) << "\n";
  }
  os << "\n";

  // Parameters.
  os << llvm::formatv("{0,-42} {1,-16} {2,-22} {3}\n", "parameter",
                      "global shape", "placements", "per rank");
  int64_t paramBytes = 0, localBytes = 0;
  SmallVector<std::string> paramNames;
  llvm::StringMap<int> paramIndices;
  DenseMap<unsigned, int> argParams;
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    if (getArgRole(function, i) != ArgRole::Param)
      continue;
    auto name =
        function.getArgAttrOfType<StringAttr>(i, TitanDialect::kNameAttrName);
    auto placements = function.getArgAttrOfType<PlacementsAttr>(
        i, TitanDialect::kPlacementsAttrName);
    auto local = cast<RankedTensorType>(function.getArgument(i).getType());
    SmallVector<int64_t> global =
        getArgGlobalShape(function, i, mesh.getAxisSizes());
    std::string text = "[";
    if (placements) {
      llvm::raw_string_ostream ts(text);
      llvm::interleaveComma(placements.getPlacements(), ts,
                            [&](const Placement &p) { ts << p.str(); });
    }
    text += "]";
    int64_t elements = 1;
    for (int64_t d : global)
      elements *= d;
    paramBytes += elements * getElementByteWidth(local.getElementType());
    localBytes += bytesOf(local);
    std::string fqn = name ? name.getValue().str() : "?";
    os << llvm::formatv("{0,-42} {1,-16} {2,-22} {3}\n", fqn,
                        shapeString(global), text,
                        shapeString(local.getShape()));
    argParams[i] = paramNames.size();
    paramIndices[fqn] = paramNames.size();
    paramNames.push_back(fqn);
  }
  os << llvm::formatv("parameters: {0} in all, {1} per rank\n\n",
                      humanBytes(paramBytes), humanBytes(localBytes));
  printPadding(function, mesh, os);
  // Optimizer state (ParamSlot::ExpAvg, ExpAvgSq) is its parameter's.
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    auto name =
        function.getArgAttrOfType<StringAttr>(i, TitanDialect::kNameAttrName);
    if (!name || getArgRole(function, i) != ArgRole::State)
      continue;
    auto slot = parsePrefixedParamSlot(name.getValue());
    auto it = slot ? paramIndices.find(slot->second) : paramIndices.end();
    if (it != paramIndices.end())
      argParams[i] = it->second;
  }

  // Transformer blocks, in order.
  auto blockOf = [](Operation *op) {
    std::optional<StringRef> path = getModulePath(op->getLoc());
    return path ? getTransformerBlock(*path) : StringRef();
  };
  SmallVector<StringRef> blocks;
  function.walk([&](Operation *op) {
    if (StringRef block = blockOf(op);
        !block.empty() && !llvm::is_contained(blocks, block))
      blocks.push_back(block);
  });
  llvm::stable_sort(blocks, blockLess);

  // Collectives.
  std::map<std::string, Tally> byKind;
  // Blocks, then what lies outside them.
  std::vector<BlockListing> listings(blocks.size() + 1);
  BlockListing all;
  function.walk([&](Operation *op) {
    auto collective = dyn_cast<CollectiveOpInterface>(op);
    if (!collective)
      return;
    double sent = collective.getBytesSentPerRank();
    std::string axes = "[";
    llvm::raw_string_ostream as(axes);
    llvm::interleave(
        op->getAttrOfType<ArrayAttr>("axes"), as,
        [&](Attribute axis) { as << cast<StringAttr>(axis).getValue(); }, ",");
    axes += "]";
    std::string kind = op->getName().stripDialect().str();
    byKind[kind + " " + axes].add(sent);
    int param = paramOf(communicatedValue(op), argParams);
    Line line{getPhase(op).value_or(Phase::Forward),
              kind,
              axes,
              collective.getSummary(),
              param >= 0 ? paramNames[param]
                         : typeString(communicatedValue(op).getType()),
              Tally()};
    all.add(line, sent);
    listings[llvm::find(blocks, blockOf(op)) - blocks.begin()].add(
        std::move(line), sent);
  });
  os << "collectives one rank runs per step (bytes sent, ring estimates):\n";
  os << llvm::formatv("  {0,-32} {1,6} {2,12}\n", "kind [mesh axes]", "count",
                      "sent");
  for (const auto &[kind, tally] : byKind)
    os << llvm::formatv("  {0,-32} {1,6} {2,12}\n", kind, tally.count,
                        humanBytes(tally.bytes));
  os << llvm::formatv("  {0,-32} {1,6} {2,12}\n\n", "total", all.total.count,
                      humanBytes(all.total.bytes));

  os << "collectives per transformer block (count, bytes one rank sends):\n";
  os << llvm::formatv("  {0,-24}", "");
  for (Phase phase : {Phase::Forward, Phase::Backward, Phase::Optimizer})
    os << llvm::formatv(" {0,16}", stringifyPhase(phase));
  os << llvm::formatv(" {0,16}\n", "total");
  for (auto [block, listing] : llvm::zip(blocks, listings))
    printTallies(block, listing, os);
  printTallies("outside blocks", listings.back(), os);
  printTallies("total", all, os);

  // Details: each block's collectives; a run of blocks that communicate like
  // the first of the run is named once.
  os << "\nin detail (phase, count, kind, mesh axes, tensor dims, the "
        "parameter or the local operand, bytes sent):\n";
  for (size_t i = 0; i < blocks.size();) {
    std::string signature = listings[i].signature(blocks[i]);
    size_t end = i + 1;
    while (end < blocks.size() &&
           listings[end].signature(blocks[end]) == signature)
      ++end;
    os << blocks[i] << ":\n";
    printLines(listings[i], os);
    if (end == i + 2)
      os << blocks[i + 1] << ": the same as " << blocks[i] << "\n";
    else if (end > i + 2)
      os << llvm::formatv("{0} .. {1}: the same as {2}\n", blocks[i + 1],
                          blocks[end - 1], blocks[i]);
    i = end;
  }
  os << "outside blocks:\n";
  printLines(listings.back(), os);
  return success();
}
