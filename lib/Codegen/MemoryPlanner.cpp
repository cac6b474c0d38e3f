//===- MemoryPlanner.cpp - static memory of a rank ------------------------===//
//
// See include/titan/Codegen/MemoryPlanner.h: liveness of every buffer,
// in-place reuse, then offsets in the arena, best-fit and largest first.
//
//===----------------------------------------------------------------------===//

#include "titan/Codegen/MemoryPlanner.h"

#include "titan/Dialect/ArgRole.h"
#include "titan/Dialect/FunctionAttributes.h"
#include "titan/Dialect/Provenance.h"

#include "titan/Runtime/titanrt.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

#include <limits>

using namespace mlir;
using namespace mlir::titan;

/// The bytes of a value of `type` (a ranked tensor or memref).
static int64_t bytesOf(Type type) {
  auto shaped = cast<ShapedType>(type);
  return shaped.getNumElements() * getElementByteWidth(shaped.getElementType());
}

/// Rounds `value` up to a multiple of `alignment`.
static int64_t alignTo(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

StringRef mlir::titan::getBufferKindName(BufferKind kind) {
  switch (kind) {
  case BufferKind::GatheredParameter:
    return "gathered parameters";
  case BufferKind::SavedActivation:
    return "saved activations";
  case BufferKind::Gradient:
    return "gradients";
  case BufferKind::Collective:
    return "collective buffers";
  case BufferKind::Scratch:
    return "kernel scratch";
  case BufferKind::Transient:
    return "transient";
  }
  llvm_unreachable("unknown BufferKind");
}

int64_t MemoryTimeline::getTotal(int64_t position) const {
  int64_t total = 0;
  for (int64_t bytes : liveBytes[position])
    total += bytes;
  return total;
}

int64_t MemoryTimeline::getPeakPosition() const {
  int64_t peak = 0;
  for (int64_t position = 1; position < int64_t(liveBytes.size()); ++position)
    if (getTotal(position) > getTotal(peak))
      peak = position;
  return peak;
}

void MemoryPlanner::placeArguments() {
  for (BlockArgument arg : function.getArguments()) {
    bool input = getArgRole(function, arg.getArgNumber()) == ArgRole::Input;
    int64_t &used = input ? inputBytes : stateBytes;
    int64_t bytes = bytesOf(arg.getType());
    argumentPlaces[arg] = BufferAttr::get(
        context, input ? MemoryRegion::Inputs : MemoryRegion::State, used,
        bytes);
    used = alignTo(used + bytes, alignment);
  }
}

SmallVector<std::pair<unsigned, unsigned>>
MemoryPlanner::inPlacePairs(Operation *op) {
  SmallVector<std::pair<unsigned, unsigned>> pairs;
  if (isa<AdamWOp>(op))
    return {{0, 0}, {2, 1}, {3, 2}};
  // Each parameter and its moments are updated in place, element by
  // element.
  if (auto fused = dyn_cast<FusedAdamWOp>(op)) {
    unsigned count = fused.getParams().size();
    for (unsigned i = 0; i < count; ++i)
      pairs.append(
          {{i, i}, {2 * count + i, count + i}, {3 * count + i, 2 * count + i}});
    return pairs;
  }
  // The GEMM reads its addend as C and writes D over it (cuBLASLt's and
  // BLAS's in-place C).
  if (auto matmul = dyn_cast<MatmulOp>(op); matmul && matmul.getAddend())
    return {{2, 0}};
  if (auto grad = dyn_cast<RmsNormGradOp>(op); grad && grad.getAddend())
    return {{3, 0}};
  auto launch = dyn_cast<LaunchOp>(op);
  if (!launch)
    return pairs;
  auto kernel = symbols.lookup<func::FuncOp>(launch.getKernel());
  auto attr = kernel ? kernel->getAttrOfType<DenseI64ArrayAttr>(
                           TitanDialect::kInPlaceAttrName)
                     : DenseI64ArrayAttr();
  if (!attr)
    return pairs;
  unsigned numInputs = launch.getInputs().size();
  for (unsigned i = 0; i + 1 < attr.size(); i += 2)
    pairs.push_back({static_cast<unsigned>(attr[i]),
                     static_cast<unsigned>(attr[i + 1] - numInputs)});
  return pairs;
}

std::pair<int64_t, int64_t> mlir::titan::getRowsAndColumns(Value value) {
  auto tensor = cast<RankedTensorType>(value.getType());
  int64_t columns = tensor.getShape().back();
  return {columns ? tensor.getNumElements() / columns : 0, columns};
}

SmallVector<int64_t> MemoryPlanner::scratchBytes(Operation *op) {
  SmallVector<int64_t> bytes;
  if (auto launch = dyn_cast<LaunchOp>(op)) {
    auto kernel = symbols.lookup<func::FuncOp>(launch.getKernel());
    FunctionType type = kernel.getFunctionType();
    unsigned fixed = launch.getInputs().size() + launch.getNumResults();
    if (type.getNumResults() == 0)
      for (Type parameter : type.getInputs().drop_front(fixed))
        bytes.push_back(bytesOf(parameter));
  } else if (auto grad = dyn_cast<AttentionGradOp>(op)) {
    ArrayRef<int64_t> q = grad.getQ().getType().getShape();
    bytes.push_back(titanrt_attention_grad_workspace_bytes(q[0], q[1], q[2]));
  } else if (auto grad = dyn_cast<RmsNormGradOp>(op)) {
    auto [rows, cols] = getRowsAndColumns(grad.getInput());
    bytes.push_back(titanrt_rms_norm_grad_workspace_bytes(rows, cols));
  } else if (isa<CrossEntropyOp, CrossEntropyGradOp>(op)) {
    bytes.push_back(titanrt_cross_entropy_workspace_bytes(
        cast<RankedTensorType>(op->getOperand(1).getType()).getNumElements()));
  }
  return bytes;
}

/// The operand an op is a view of (a reshape of a contiguous buffer, the
/// wait for an asynchronous collective's result, the ids a check passes
/// on), or null.
static Value getViewSource(Operation *op) {
  if (auto reshape = dyn_cast<ReshapeOp>(op))
    return reshape.getInput();
  if (auto wait = dyn_cast<WaitOp>(op))
    return wait.getInput();
  if (auto check = dyn_cast<CheckIdsOp>(op))
    return check.getIds();
  return Value();
}

void MemoryPlanner::addBuffer(Value value, int64_t index) {
  bufferIndex[value] = buffers.size();
  ArenaBuffer buffer;
  buffer.bytes = bytesOf(value.getType());
  buffer.start = index;
  buffer.end = std::max(index, lastUse.lookup(value));
  buffer.collective = isa<CollectiveOpInterface>(value.getDefiningOp());
  buffers.push_back(buffer);
  bufferRoots.push_back(value);
}

void MemoryPlanner::assignBuffers() {
  Block &body = function.getBody().front();
  for (Operation &op : body) {
    position[&op] = ops.size();
    ops.push_back(&op);
  }
  // The last op that reads each value (the end of the step for results).
  int64_t end = ops.size();
  for (Operation *op : ops)
    for (Value operand : op->getOperands())
      lastUse[operand] = std::max(lastUse.lookup(operand),
                                  isa<func::ReturnOp>(op) ? end : position[op]);
  // An asynchronous collective reads its operands until its wait.
  for (Operation *op : ops)
    if (op->hasAttr(TitanDialect::kAsyncAttrName))
      for (Operation *wait : op->getUsers())
        for (Value operand : op->getOperands())
          lastUse[operand] = std::max(lastUse[operand], position[wait]);

  for (Operation *op : ops) {
    int64_t at = position[op];
    if (isa<func::ReturnOp>(op))
      continue;
    if (Value source = getViewSource(op)) {
      // A view: the same buffer (or argument place), which now lives as
      // long as the view is read.
      if (auto it = bufferIndex.find(source); it != bufferIndex.end())
        join(op->getResult(0), it->second, at);
      else
        argumentPlaces[op->getResult(0)] = argumentPlaces.lookup(source);
      continue;
    }
    for (int64_t bytes : scratchBytes(op)) {
      scratch[op].push_back(buffers.size());
      ArenaBuffer buffer;
      buffer.bytes = bytes;
      buffer.start = buffer.end = at;
      buffer.kind = BufferKind::Scratch;
      buffers.push_back(buffer);
      bufferRoots.push_back(Value());
    }
    // Results computed in place over an input whose buffer is read last
    // here (by every value it holds). A result that updates a state
    // argument keeps a buffer of its own: it goes into the argument's place
    // (placeStateUpdates).
    DenseMap<unsigned, unsigned> inPlaceOf;
    llvm::SmallDenseSet<unsigned> reused;
    for (auto [input, result] : inPlacePairs(op)) {
      auto it = bufferIndex.find(op->getOperand(input));
      if (it == bufferIndex.end() ||
          stateUpdates.count(op->getResult(result)) ||
          inPlaceOf.count(result) || reused.contains(it->second))
        continue;
      // A GEMM, or RMSNorm's backward, reads its other operands across
      // rows while it writes: never over them.
      unsigned overwritten = input;
      bool sharedByAnother =
          isa<MatmulOp, RmsNormGradOp>(op) &&
          llvm::any_of(op->getOpOperands(), [&](OpOperand &other) {
            auto found = bufferIndex.find(other.get());
            return other.getOperandNumber() != overwritten &&
                   found != bufferIndex.end() && found->second == it->second;
          });
      const ArenaBuffer &buffer = buffers[it->second];
      if (buffer.end == at && !buffer.fixed && !sharedByAnother) {
        reused.insert(it->second);
        inPlaceOf[result] = it->second;
      }
    }
    for (OpResult result : op->getResults()) {
      if (auto it = inPlaceOf.find(result.getResultNumber());
          it != inPlaceOf.end())
        join(result, it->second, at);
      else
        addBuffer(result, at);
    }
  }
}

void MemoryPlanner::join(Value value, unsigned index, int64_t at) {
  bufferIndex[value] = index;
  buffers[index].end =
      std::max({buffers[index].end, at, lastUse.lookup(value)});
}

void MemoryPlanner::findStateUpdates() {
  auto ret = cast<func::ReturnOp>(function.getBody().front().getTerminator());
  // State arguments by the name of the result that updates them.
  llvm::StringMap<BlockArgument> updated;
  for (BlockArgument arg : function.getArguments()) {
    unsigned i = arg.getArgNumber();
    std::optional<ArgRole> role = getArgRole(function, i);
    auto name =
        function.getArgAttrOfType<StringAttr>(i, TitanDialect::kNameAttrName);
    if (!role || !name)
      continue;
    if (role == ArgRole::Param)
      updated[getParamSlotName(ParamSlot::Updated, name.getValue())] = arg;
    else if (role == ArgRole::State || role == ArgRole::ParamCopy)
      updated[name.getValue()] = arg;
  }
  for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
    auto name = function.getResultAttrOfType<StringAttr>(
        index, TitanDialect::kNameAttrName);
    auto it = name ? updated.find(name.getValue()) : updated.end();
    if (it != updated.end() && value.getType() == it->second.getType() &&
        value.getDefiningOp())
      stateUpdates[value] = it->second;
  }
}

void MemoryPlanner::placeStateUpdates() {
  // The last op that reads each argument (directly or through a view).
  DenseMap<Value, int64_t> lastRead;
  for (Operation *op : ops) {
    if (isa<func::ReturnOp>(op))
      continue;
    for (Value operand : op->getOperands()) {
      Value root = operand;
      while (root.getDefiningOp() && getViewSource(root.getDefiningOp()))
        root = getViewSource(root.getDefiningOp());
      if (isa<BlockArgument>(root))
        lastRead[root] = std::max(lastRead.lookup(root), position[op]);
    }
  }
  for (auto [value, arg] : stateUpdates) {
    ArenaBuffer *buffer = bufferOf(value);
    if (!buffer || buffer->fixed)
      continue;
    // The buffer may take the argument's place when the argument is no
    // longer read once the buffer is first written, or is read last by the
    // kernel that writes the buffer in place over it.
    auto dies = lastRead.find(arg);
    bool free = dies == lastRead.end() || dies->second < buffer->start;
    if (!free && dies->second == buffer->start) {
      Operation *writer = ops[buffer->start];
      for (auto [input, result] : inPlacePairs(writer))
        if (writer->getOperand(input) == arg &&
            bufferOf(writer->getResult(result)) == buffer)
          free = true;
    }
    if (free)
      buffer->fixed = argumentPlaces.lookup(arg);
  }
}

/// Whether an op of `phase` reads `value`, directly or through views.
static bool isReadIn(Value value, Phase phase) {
  for (Operation *user : value.getUsers()) {
    if (getViewSource(user)) {
      if (isReadIn(user->getResult(0), phase))
        return true;
    } else if (getPhase(user) == phase) {
      return true;
    }
  }
  return false;
}

namespace {
/// What a value holds, as far as parameters go.
enum class ParameterData { None, Local, Gathered };
} // namespace

/// What each value of `function`'s body holds: a parameter argument or a
/// parameter's copy, and what ops compute from such values alone (casts,
/// reshapes, a bucket's concatenation, slices of it), gathered once a
/// collective is on the way. One sweep in program order.
static llvm::DenseMap<Value, ParameterData>
traceParameters(func::FuncOp function) {
  llvm::DenseMap<Value, ParameterData> traced;
  Block &body = function.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    std::optional<ArgRole> role = getArgRole(function, arg.getArgNumber());
    if (role == ArgRole::Param || role == ArgRole::ParamCopy)
      traced[arg] = ParameterData::Local;
  }
  for (Operation &op : body) {
    if (op.getNumOperands() == 0)
      continue;
    ParameterData data = isa<CollectiveOpInterface>(op)
                             ? ParameterData::Gathered
                             : ParameterData::Local;
    for (Value operand : op.getOperands()) {
      ParameterData operandData = traced.lookup(operand);
      if (operandData == ParameterData::None) {
        data = ParameterData::None;
        break;
      }
      if (operandData == ParameterData::Gathered)
        data = ParameterData::Gathered;
    }
    if (data != ParameterData::None)
      for (Value result : op.getResults())
        traced[result] = data;
  }
  return traced;
}

void MemoryPlanner::classifyBuffers() {
  llvm::DenseMap<Value, ParameterData> parameters = traceParameters(function);
  for (auto [buffer, root] : llvm::zip(buffers, bufferRoots)) {
    if (!root)
      continue; // Scratch.
    Operation *writer = root.getDefiningOp();
    std::optional<Phase> phase = getPhase(writer);
    bool collective = isa<CollectiveOpInterface>(writer);
    if (parameters.lookup(root) == ParameterData::Gathered)
      buffer.kind = BufferKind::GatheredParameter;
    else if (phase == Phase::Forward && isReadIn(root, Phase::Backward))
      buffer.kind = BufferKind::SavedActivation;
    else if (phase == Phase::Backward && isReadIn(root, Phase::Optimizer))
      buffer.kind = BufferKind::Gradient;
    else if (collective)
      buffer.kind = BufferKind::Collective;
  }
}

MemoryTimeline MemoryPlanner::getTimeline() const {
  MemoryTimeline timeline;
  timeline.ops = ops;
  // A phase starts after the last op of the one before it (a few ops are
  // hoisted ahead of their phase: the step's constants, the learning rate).
  int64_t lastForward = -1, lastBackward = -1;
  for (auto [index, op] : llvm::enumerate(ops)) {
    std::optional<Phase> phase = getPhase(op);
    if (phase == Phase::Forward)
      lastForward = index;
    else if (phase == Phase::Backward)
      lastBackward = index;
  }
  timeline.backwardStart = lastForward + 1;
  timeline.optimizerStart = std::max(lastForward, lastBackward) + 1;
  // Differences, then running sums.
  std::vector<std::array<int64_t, kNumBufferKinds>> delta(ops.size() + 1);
  for (const ArenaBuffer &buffer : buffers) {
    if (buffer.fixed)
      continue;
    unsigned kind = static_cast<unsigned>(buffer.kind);
    delta[buffer.start][kind] += buffer.bytes;
    if (buffer.end + 1 < int64_t(delta.size()))
      delta[buffer.end + 1][kind] -= buffer.bytes;
  }
  timeline.liveBytes.resize(ops.size());
  std::array<int64_t, kNumBufferKinds> running = {};
  for (size_t position = 0; position < ops.size(); ++position) {
    for (unsigned kind = 0; kind < kNumBufferKinds; ++kind)
      running[kind] += delta[position][kind];
    timeline.liveBytes[position] = running;
  }
  return timeline;
}

int64_t MemoryPlanner::placeArena() {
  // Largest first; ties by start, so the order is deterministic.
  std::vector<unsigned> order;
  for (unsigned i = 0; i < buffers.size(); ++i)
    if (!buffers[i].fixed)
      order.push_back(i);
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    if (buffers[a].bytes != buffers[b].bytes)
      return buffers[a].bytes > buffers[b].bytes;
    return buffers[a].start < buffers[b].start;
  });
  // Placed buffers sorted by offset: scanning them in order gives the busy
  // ranges of those a buffer overlaps in time already sorted (no per-buffer
  // sort; linear in the placed buffers, with nothing but two compares for
  // the ones it does not overlap).
  std::vector<unsigned> placed;
  int64_t size = 0;
  for (unsigned i : order) {
    ArenaBuffer &buffer = buffers[i];
    if (buffer.bytes == 0) {
      buffer.offset = 0;
      continue;
    }
    // Best fit: the smallest gap that holds the buffer, else the end.
    int64_t best = -1, bestGap = std::numeric_limits<int64_t>::max();
    int64_t cursor = 0;
    for (unsigned other : placed) {
      const ArenaBuffer &o = buffers[other];
      if (o.end < buffer.start || o.start > buffer.end)
        continue;
      if (o.offset - cursor >= buffer.bytes && o.offset - cursor < bestGap) {
        best = cursor;
        bestGap = o.offset - cursor;
      }
      cursor = std::max(cursor, alignTo(o.offset + o.bytes, alignment));
    }
    buffer.offset = best >= 0 ? best : cursor;
    size = std::max(size, alignTo(buffer.offset + buffer.bytes, alignment));
    placed.insert(llvm::upper_bound(placed, buffer.offset,
                                    [&](int64_t offset, unsigned other) {
                                      return offset < buffers[other].offset;
                                    }),
                  i);
  }
  return size;
}

void MemoryPlanner::record() {
  auto placeOf = [&](unsigned index) -> BufferAttr {
    const ArenaBuffer &buffer = buffers[index];
    if (buffer.fixed)
      return *buffer.fixed;
    return BufferAttr::get(context, MemoryRegion::Arena, buffer.offset,
                           buffer.bytes);
  };
  auto valuePlace = [&](Value value) -> BufferAttr {
    if (auto it = bufferIndex.find(value); it != bufferIndex.end()) {
      BufferAttr place = placeOf(it->second);
      return BufferAttr::get(context, place.getRegion(), place.getOffset(),
                             bytesOf(value.getType()));
    }
    return argumentPlaces.lookup(value);
  };
  Block &body = function.getBody().front();
  setEachArgAttr(function, TitanDialect::kBufferAttrName, [&](unsigned i) {
    return argumentPlaces.lookup(function.getArgument(i));
  });
  // The arena's live bytes over time, for the peak.
  MemoryTimeline timeline = getTimeline();
  int64_t peakAt = timeline.getPeakPosition();
  int64_t peakBytes = timeline.getTotal(peakAt);
  // Collective results of every kind (gathered parameters, reduced
  // gradients, tensor-parallel buffers).
  int64_t collectiveBytes = 0;
  for (const ArenaBuffer &buffer : buffers)
    if (!buffer.fixed && buffer.collective && buffer.start <= peakAt &&
        peakAt <= buffer.end)
      collectiveBytes += buffer.bytes;
  Operation *peakOp = ops[peakAt];
  for (Operation &op : body) {
    if (isa<func::ReturnOp>(op)) {
      // Where each result is once the step returns: an update of a state
      // argument in the argument's place (copied there unless computed
      // there), anything else where it was computed.
      setEachResultAttr(function, TitanDialect::kBufferAttrName,
                        [&](unsigned index) -> Attribute {
                          Value value = op.getOperand(index);
                          auto update = stateUpdates.find(value);
                          return update != stateUpdates.end()
                                     ? argumentPlaces.lookup(update->second)
                                     : valuePlace(value);
                        });
      continue;
    }
    if (op.getNumResults()) {
      SmallVector<Attribute> places;
      for (Value result : op.getResults())
        places.push_back(valuePlace(result));
      op.setAttr(TitanDialect::kBuffersAttrName,
                 ArrayAttr::get(context, places));
    }
    if (auto it = scratch.find(&op); it != scratch.end()) {
      SmallVector<Attribute> places;
      for (unsigned index : it->second)
        places.push_back(placeOf(index));
      op.setAttr(TitanDialect::kScratchAttrName,
                 ArrayAttr::get(context, places));
    }
  }
  Builder b(context);
  std::string peakName =
      peakOp ? peakOp->getName().getStringRef().str() : std::string("return");
  if (auto launch = dyn_cast_or_null<LaunchOp>(peakOp))
    peakName += " @" + launch.getKernel().str();
  function->setAttr(
      TitanDialect::kMemoryPlanAttrName,
      b.getDictionaryAttr({
          b.getNamedAttr("arena_bytes", b.getI64IntegerAttr(arenaBytes)),
          b.getNamedAttr("state_bytes", b.getI64IntegerAttr(stateBytes)),
          b.getNamedAttr("input_bytes", b.getI64IntegerAttr(inputBytes)),
          b.getNamedAttr("peak_live_bytes", b.getI64IntegerAttr(peakBytes)),
          b.getNamedAttr("peak_collective_bytes",
                         b.getI64IntegerAttr(collectiveBytes)),
          b.getNamedAttr("peak_op_index", b.getI64IntegerAttr(peakAt)),
          b.getNamedAttr("peak_op", b.getStringAttr(peakName)),
      }));
}

void MemoryPlanner::analyze() {
  placeArguments();
  findStateUpdates();
  assignBuffers();
  placeStateUpdates();
  classifyBuffers();
}

void MemoryPlanner::plan() {
  analyze();
  arenaBytes = placeArena();
}
