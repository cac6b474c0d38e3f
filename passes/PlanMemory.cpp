//===- PlanMemory.cpp - static memory of a rank ---------------------------===//
//
// Implements titan-plan-memory (see passes/Passes.td): liveness of every
// buffer, in-place reuse, then offsets in the arena, best-fit and largest
// first.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/ArgRole.h"
#include "titan/Dialect/FunctionAttributes.h"
#include "titan/Passes.h"
#include "titan/Support/CheckedSize.h"

#include "titan/Runtime/titanrt.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

#include <numeric>

namespace mlir::titan {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

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

namespace {

/// One buffer of the arena: the values that share it (a value, its
/// reshapes, results computed in place over it) live in [start, end].
struct ArenaBuffer {
  int64_t bytes = 0;
  int64_t start = 0;
  int64_t end = 0;
  /// A buffer that lives in a state argument's place instead of the arena.
  std::optional<BufferAttr> fixed;
  /// Whether a collective writes it (the plan report counts them).
  bool collective = false;
  int64_t offset = -1;
};

/// The liveness and placement of one function's buffers.
class MemoryPlanner {
public:
  MemoryPlanner(func::FuncOp function, SymbolTable &symbols, int64_t alignment)
      : function(function), symbols(symbols), alignment(alignment),
        context(function.getContext()) {}

  /// Plans the function and records the plan in its attributes.
  void run();

private:
  /// Gives the arguments their places in the state and inputs regions.
  void placeArguments();
  /// Creates the buffers of op results, views and in-place results, with
  /// their lifetimes.
  void assignBuffers();
  /// Finds the results that update a state argument (`param.<fqn>`,
  /// `exp_avg.<fqn>`, ...).
  void findStateUpdates();
  /// Moves the buffers of those results into their argument's place where
  /// the argument is dead by then.
  void placeStateUpdates();
  /// Chooses arena offsets; returns the arena's size.
  int64_t placeArena();
  /// Writes the attributes of the plan.
  void record(int64_t arenaBytes);

  /// The buffer of `value` (an op result in the arena) or null.
  ArenaBuffer *bufferOf(Value value) {
    auto it = bufferIndex.find(value);
    return it == bufferIndex.end() ? nullptr : &buffers[it->second];
  }
  /// The pairs (input, output) of `launch`'s kernel that may share memory.
  SmallVector<std::pair<unsigned, unsigned>> inPlacePairs(LaunchOp launch);
  /// Adds a new arena buffer for `value` defined at `index`.
  void addBuffer(Value value, int64_t index);
  /// Makes `value`, defined at `at`, share buffer `index`.
  void join(Value value, unsigned index, int64_t at);
  /// The scratch buffers op `index` needs while it runs.
  SmallVector<int64_t> scratchBytes(Operation *op);

  func::FuncOp function;
  /// The module's symbols (the kernels).
  SymbolTable &symbols;
  int64_t alignment;
  MLIRContext *context;

  /// Places of the arguments.
  DenseMap<Value, BufferAttr> argumentPlaces;
  int64_t stateBytes = 0, inputBytes = 0;
  /// Arena buffers, and the buffer of every value that lives in one.
  std::vector<ArenaBuffer> buffers;
  DenseMap<Value, unsigned> bufferIndex;
  /// Scratch buffers by op.
  DenseMap<Operation *, SmallVector<unsigned>> scratch;
  /// The ops of the body in order, and the position of each.
  std::vector<Operation *> ops;
  DenseMap<Operation *, int64_t> position;
  /// The results that update a state argument, with the argument.
  DenseMap<Value, BlockArgument> stateUpdates;
  /// The position of the last op that reads each value (the number of ops,
  /// past the return, for results).
  DenseMap<Value, int64_t> lastUse;
};

} // namespace

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
MemoryPlanner::inPlacePairs(LaunchOp launch) {
  SmallVector<std::pair<unsigned, unsigned>> pairs;
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
  }
  return bytes;
}

void MemoryPlanner::addBuffer(Value value, int64_t index) {
  bufferIndex[value] = buffers.size();
  ArenaBuffer buffer;
  buffer.bytes = bytesOf(value.getType());
  buffer.start = index;
  buffer.end = std::max(index, lastUse.lookup(value));
  buffer.collective = isa<CollectiveOpInterface>(value.getDefiningOp());
  buffers.push_back(buffer);
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

  for (Operation *op : ops) {
    int64_t at = position[op];
    if (isa<func::ReturnOp>(op))
      continue;
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      // A view: the same buffer (or argument place), which now lives as
      // long as the view is read.
      Value source = reshape.getInput();
      if (auto it = bufferIndex.find(source); it != bufferIndex.end())
        join(reshape.getResult(), it->second, at);
      else
        argumentPlaces[reshape.getResult()] = argumentPlaces.lookup(source);
      continue;
    }
    for (int64_t bytes : scratchBytes(op)) {
      scratch[op].push_back(buffers.size());
      ArenaBuffer buffer;
      buffer.bytes = bytes;
      buffer.start = buffer.end = at;
      buffers.push_back(buffer);
    }
    // Results computed in place over an input whose buffer is read last
    // here (by every value it holds). A result that updates a state
    // argument keeps a buffer of its own: it goes into the argument's place
    // (placeStateUpdates).
    DenseMap<unsigned, unsigned> inPlaceOf;
    llvm::SmallDenseSet<unsigned> reused;
    if (auto launch = dyn_cast<LaunchOp>(op))
      for (auto [input, result] : inPlacePairs(launch)) {
        auto it = bufferIndex.find(launch.getInputs()[input]);
        if (it == bufferIndex.end() ||
            stateUpdates.count(launch.getResult(result)) ||
            inPlaceOf.count(result) || reused.contains(it->second))
          continue;
        const ArenaBuffer &buffer = buffers[it->second];
        if (buffer.end == at && !buffer.fixed) {
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
    else if (role == ArgRole::State)
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
      while (auto reshape = root.getDefiningOp<ReshapeOp>())
        root = reshape.getInput();
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
    if (!free && dies->second == buffer->start)
      if (auto launch = dyn_cast<LaunchOp>(ops[buffer->start]))
        for (auto [input, result] : inPlacePairs(launch))
          if (launch.getInputs()[input] == arg &&
              bufferOf(launch.getResult(result)) == buffer)
            free = true;
    if (free)
      buffer->fixed = argumentPlaces.lookup(arg);
  }
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
  int64_t arenaBytes = 0;
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
    arenaBytes =
        std::max(arenaBytes, alignTo(buffer.offset + buffer.bytes, alignment));
    placed.insert(llvm::upper_bound(placed, buffer.offset,
                                    [&](int64_t offset, unsigned other) {
                                      return offset < buffers[other].offset;
                                    }),
                  i);
  }
  return arenaBytes;
}

void MemoryPlanner::record(int64_t arenaBytes) {
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
  std::vector<int64_t> live(ops.size() + 2, 0);
  for (const ArenaBuffer &buffer : buffers)
    if (!buffer.fixed) {
      live[buffer.start] += buffer.bytes;
      live[buffer.end + 1] -= buffer.bytes;
    }
  std::partial_sum(live.begin(), live.end(), live.begin());
  int64_t peakAt = std::max_element(live.begin(), live.end()) - live.begin();
  int64_t collectiveBytes = 0;
  for (const ArenaBuffer &buffer : buffers)
    if (!buffer.fixed && buffer.collective && buffer.start <= peakAt &&
        peakAt <= buffer.end)
      collectiveBytes += buffer.bytes;
  Operation *peakOp =
      peakAt < static_cast<int64_t>(ops.size()) ? ops[peakAt] : nullptr;
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
          b.getNamedAttr("peak_live_bytes", b.getI64IntegerAttr(live[peakAt])),
          b.getNamedAttr("peak_collective_bytes",
                         b.getI64IntegerAttr(collectiveBytes)),
          b.getNamedAttr("peak_op_index", b.getI64IntegerAttr(peakAt)),
          b.getNamedAttr("peak_op", b.getStringAttr(peakName)),
      }));
}

void MemoryPlanner::run() {
  placeArguments();
  findStateUpdates();
  assignBuffers();
  placeStateUpdates();
  record(placeArena());
}

/// Fails with an error naming the largest value unless every value of
/// `function` has a byte size and all of them together stay below 2^62
/// bytes, so that no size, offset or alignment of the plan can overflow.
static LogicalResult checkPlannable(func::FuncOp function) {
  constexpr int64_t kLimit = int64_t(1) << 62;
  int64_t total = 0;
  Value largest;
  int64_t largestBytes = -1;
  bool overflow = false;
  auto count = [&](Value value) {
    auto shaped = dyn_cast<ShapedType>(value.getType());
    if (!shaped || !shaped.hasStaticShape())
      return;
    std::optional<int64_t> bytes = checkedByteSize(
        shaped.getShape(), getElementByteWidth(shaped.getElementType()));
    if (!bytes || *bytes > kLimit - total)
      overflow = true;
    else
      total += *bytes;
    int64_t size = bytes.value_or(std::numeric_limits<int64_t>::max());
    if (size > largestBytes) {
      largest = value;
      largestBytes = size;
    }
  };
  for (BlockArgument arg : function.getArguments())
    count(arg);
  function.walk([&](Operation *op) {
    for (Value result : op->getResults())
      count(result);
  });
  if (!overflow)
    return success();
  return function.emitError()
         << "titan-plan-memory: the values of one rank's step need more than "
            "2^62 bytes (the largest, "
         << largest.getType() << ", alone needs "
         << (largestBytes == std::numeric_limits<int64_t>::max()
                 ? std::string("more than 2^63-1")
                 : std::to_string(largestBytes))
         << " bytes); reduce training.local_batch_size or training.seq_len, "
            "or shard over more ranks";
}

namespace {

struct PlanMemoryPass
    : public mlir::titan::impl::PlanMemoryPassBase<PlanMemoryPass> {
  using PlanMemoryPassBase::PlanMemoryPassBase;

  void runOnOperation() override {
    int64_t align = alignment;
    if (align <= 0 || (align & (align - 1)) != 0) {
      getOperation().emitError()
          << "titan-plan-memory: alignment must be a power of two, got "
          << align;
      return signalPassFailure();
    }
    SymbolTable symbols(getOperation());
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (function->hasAttr(TitanDialect::kKernelAttrName) ||
          function.isExternal())
        continue;
      if (!function.getBody().hasOneBlock()) {
        function.emitError("titan-plan-memory: the function must have one "
                           "block (titan programs are straight-line)");
        return signalPassFailure();
      }
      if (failed(checkPlannable(function)))
        return signalPassFailure();
      MemoryPlanner(function, symbols, align).run();
    }
  }
};

} // namespace
