//===- PlanReport.cpp - human-readable parallel plan report ---------------===//
//
// Collectives are attributed to transformer blocks by data flow, so that any
// model whose block parameters have FQNs "<stem>.<index>.*" (e.g.
// "layers.3.attention.wq.weight", "transformer.h.3.attn.c_attn.weight") is
// reported per block without knowing its code:
//
// - every value gets a stage: derived from one parameter alone, before the
//   blocks, block i, after the blocks, or none (constants);
// - forward (up to the loss): an op's stage is the latest stage of its
//   operands and of the blocks of the parameters it reads; reading a
//   parameter of no block (norm, output) after a block means "after the
//   blocks", before any block (embedding) "before the blocks";
// - after the loss, an op that reads forward values (activations saved for
//   the backward, parameters) takes their stage as above (the VJP of a block
//   op reads that block's values); one that reads only cotangents takes the
//   earliest of theirs (a residual cotangent flows into the earlier block).
//
// A collective belongs to the stage of the value it moves. Its phase is the
// one in the IR (`titan.phase`, include/titan/Dialect/Phase.h):
// titan-build-train-step stamps the forward, backward and optimizer ops, and
// a redistribution carries the phase of the op that computes the value it
// moves, or of its first user for an argument.
//
//===----------------------------------------------------------------------===//

#include "titan/Report/PlanReport.h"

#include "titan/Dialect/ArgRole.h"
#include "titan/Dialect/Phase.h"
#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>
#include <map>

using namespace mlir;
using namespace mlir::titan;

namespace {

/// Bytes of a static tensor type.
int64_t bytesOf(Type type) {
  return getStaticNumElements(type) *
         getElementByteWidth(getElementTypeOrSelf(type));
}

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

/// The transformer block of a parameter: its FQN up to the first numeric
/// component ("layers.3" of "layers.3.attention.wq.weight"), or "".
std::string blockOf(StringRef fqn) {
  SmallVector<StringRef> parts;
  fqn.split(parts, '.');
  std::string prefix;
  for (StringRef part : ArrayRef(parts).drop_back()) {
    prefix += (prefix.empty() ? "" : ".") + part.str();
    unsigned index;
    if (!part.getAsInteger(10, index))
      return prefix;
  }
  return "";
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

/// Where a value stands relative to the transformer blocks (see the file
/// comment): derived from parameter `param` alone, or at `stage` (-1 before
/// the blocks, 0..n-1 block i, n after them, kNone unknown).
struct Origin {
  static constexpr int64_t kNone = std::numeric_limits<int64_t>::min();
  int64_t stage = kNone;
  int param = -1;
};

/// The block stage of every collective of a training step.
class StepAnalysis {
public:
  StepAnalysis(func::FuncOp function, ArrayRef<int64_t> paramBlocks,
               const DenseMap<unsigned, int> &argParams, int64_t numBlocks);

  /// The stage of the value `collective` moves: a block index, or -1 / the
  /// number of blocks for before / after the blocks. Sets `param` to the
  /// parameter it moves when it is derived from one alone, else -1.
  int64_t stageOf(Operation *collective, int &param) const;

private:
  /// Combines operands read in the forward (see the file comment).
  Origin combine(ArrayRef<Origin> origins) const;
  /// Origin of an op after the loss.
  Origin afterLoss(Operation *op) const;
  Origin originOf(Value value) const { return origins.lookup(value); }
  bool beforeOrAtLoss(Operation *op) const {
    return positions.lookup(op) <= lossPosition;
  }

  ArrayRef<int64_t> paramBlocks;
  int64_t numBlocks;
  DenseMap<Operation *, int64_t> positions;
  int64_t lossPosition = std::numeric_limits<int64_t>::max();
  DenseMap<Value, Origin> origins;
};

/// The value a chain of collectives starts from.
Value throughCollectives(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (!isa<CollectiveOpInterface>(def) || def->getNumOperands() == 0)
      break;
    value = def->getOperand(0);
  }
  return value;
}

StepAnalysis::StepAnalysis(func::FuncOp function, ArrayRef<int64_t> paramBlocks,
                           const DenseMap<unsigned, int> &argParams,
                           int64_t numBlocks)
    : paramBlocks(paramBlocks), numBlocks(numBlocks) {
  Block &body = function.getBody().front();
  int64_t position = 0;
  for (Operation &op : body)
    positions[&op] = position++;
  Operation *terminator = body.getTerminator();
  for (unsigned i = 0; i < function.getNumResults(); ++i) {
    auto name = function.getResultAttrOfType<StringAttr>(
        i, TitanDialect::kNameAttrName);
    if (!name || name.getValue() != "loss")
      continue;
    if (Operation *def =
            throughCollectives(terminator->getOperand(i)).getDefiningOp())
      lossPosition = positions.lookup(def);
  }

  // Parameters and their optimizer state are derived from the parameter;
  // inputs (tokens, labels, lr, step) come before the blocks; buffers (RoPE
  // tables) are read by every block and tell nothing.
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto it = argParams.find(i);
    if (it != argParams.end())
      origins[arg] = {Origin::kNone, it->second};
    else if (getArgRole(function, i) == ArgRole::Input)
      origins[arg] = {-1, -1};
  }
  for (Operation &op : body.without_terminator()) {
    Origin origin;
    if (beforeOrAtLoss(&op)) {
      SmallVector<Origin> operands;
      for (Value operand : op.getOperands())
        operands.push_back(originOf(operand));
      origin = combine(operands);
    } else {
      origin = afterLoss(&op);
    }
    for (Value result : op.getResults())
      origins[result] = origin;
  }
}

Origin StepAnalysis::combine(ArrayRef<Origin> operands) const {
  int64_t stage = Origin::kNone;
  SmallVector<int> params;
  for (const Origin &origin : operands) {
    if (origin.param >= 0)
      params.push_back(origin.param);
    else
      stage = std::max(stage, origin.stage);
  }
  if (stage == Origin::kNone && !params.empty() && llvm::all_equal(params))
    return {Origin::kNone, params.front()};
  bool outsideBlocks = false;
  for (int param : params) {
    if (paramBlocks[param] >= 0)
      stage = std::max(stage, paramBlocks[param]);
    else
      outsideBlocks = true;
  }
  if (outsideBlocks)
    stage = stage >= 0 ? numBlocks : std::max<int64_t>(stage, -1);
  return {stage, -1};
}

/// A scalar, or a scalar broadcast to a shape (a loss scale, a clipping
/// coefficient): whatever it was computed from, it says nothing about the
/// block of a tensor it scales.
bool isScalarLike(Value value) {
  if (auto broadcast = value.getDefiningOp<BroadcastInDimOp>())
    value = broadcast.getInput();
  return cast<RankedTensorType>(value.getType()).getRank() == 0;
}

Origin StepAnalysis::afterLoss(Operation *op) const {
  SmallVector<Origin> saved;
  // The earliest stage of the cotangents, and of the tensor ones alone.
  int64_t cotangent = Origin::kNone, tensorCotangent = Origin::kNone;
  auto earliest = [](int64_t current, int64_t stage) {
    return current == Origin::kNone ? stage : std::min(current, stage);
  };
  for (Value operand : op->getOperands()) {
    Origin origin = originOf(operand);
    if (origin.param < 0 && origin.stage == Origin::kNone)
      continue;
    Operation *def = operand.getDefiningOp();
    if (origin.param >= 0 || !def || beforeOrAtLoss(def)) {
      saved.push_back(origin);
      continue;
    }
    cotangent = earliest(cotangent, origin.stage);
    if (!isScalarLike(operand))
      tensorCotangent = earliest(tensorCotangent, origin.stage);
  }
  if (saved.empty())
    return {tensorCotangent != Origin::kNone ? tensorCotangent : cotangent, -1};
  Origin origin = combine(saved);
  // A cotangent times a parameter is an activation's cotangent.
  if (cotangent != Origin::kNone && origin.param >= 0)
    return {std::max<int64_t>(paramBlocks[origin.param], -1), -1};
  return origin;
}

int64_t StepAnalysis::stageOf(Operation *collective, int &param) const {
  Origin origin = originOf(collective->getOperand(0));
  param = origin.param;
  if (param >= 0)
    return paramBlocks[param];
  return origin.stage == Origin::kNone ? -1 : origin.stage;
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

LogicalResult mlir::titan::writePlanReport(ModuleOp module,
                                           llvm::raw_ostream &os) {
  auto function = module.lookupSymbol<func::FuncOp>("train_step");
  MeshOp mesh;
  for (MeshOp m : module.getOps<MeshOp>())
    mesh = m;
  if (!function || !mesh)
    return emitError(module.getLoc())
           << "the plan report needs a partitioned @train_step "
              "(titan-compile --emit=spmd)";

  os << "== titan plan report ==\nmesh @" << mesh.getSymName() << ": ";
  llvm::interleave(
      llvm::zip(mesh.getAxisNames(), mesh.getAxisSizes()), os,
      [&](auto axis) {
        os << cast<StringAttr>(std::get<0>(axis)).getValue() << "="
           << std::get<1>(axis);
      },
      " x ");
  os << " (" << mesh.getNumDevices() << " ranks)\n\n";

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
    SmallVector<int64_t> global(local.getShape());
    std::string text = "[";
    if (placements) {
      for (auto [axis, p] : llvm::enumerate(placements.getPlacements()))
        if (p.isShard())
          global[p.getDim()] *= mesh.getAxisSizes()[axis];
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
  // Optimizer state ("exp_avg.<fqn>") is derived from its parameter.
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    auto name =
        function.getArgAttrOfType<StringAttr>(i, TitanDialect::kNameAttrName);
    if (!name || getArgRole(function, i) != ArgRole::State)
      continue;
    auto it = paramIndices.find(name.getValue().split('.').second);
    if (it != paramIndices.end())
      argParams[i] = it->second;
  }

  // Transformer blocks, in order.
  SmallVector<std::string> blocks;
  for (const std::string &fqn : paramNames)
    if (std::string block = blockOf(fqn);
        !block.empty() && !llvm::is_contained(blocks, block))
      blocks.push_back(block);
  llvm::stable_sort(blocks, blockLess);
  SmallVector<int64_t> paramBlocks;
  for (const std::string &fqn : paramNames) {
    auto *it = llvm::find(blocks, blockOf(fqn));
    paramBlocks.push_back(it == blocks.end() ? -1 : it - blocks.begin());
  }
  StepAnalysis analysis(function, paramBlocks, argParams, blocks.size());

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
    int param;
    int64_t stage = analysis.stageOf(op, param);
    Line line{getPhase(op).value_or(Phase::Forward),
              kind,
              axes,
              collective.getSummary(),
              param >= 0 ? paramNames[param]
                         : typeString(communicatedValue(op).getType()),
              Tally()};
    all.add(line, sent);
    listings[stage >= 0 && stage < int64_t(blocks.size()) ? stage
                                                          : blocks.size()]
        .add(std::move(line), sent);
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
