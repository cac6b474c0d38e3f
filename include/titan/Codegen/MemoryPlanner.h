//===- MemoryPlanner.h - static memory of a rank ----------------*- C++ -*-===//
//
// The memory planner of titan-plan-memory (passes/Passes.td has the whole
// contract): liveness of every buffer of `@train_step`, in-place reuse, then
// offsets in the arena, best-fit and largest first. The plan report reads
// the same liveness back (getTimeline) to break the arena's use down over
// the step: what each buffer holds (saved activations, gradients,
// collective buffers, scratch) at every op.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CODEGEN_MEMORYPLANNER_H
#define TITAN_CODEGEN_MEMORYPLANNER_H

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

#include <array>
#include <optional>
#include <vector>

namespace mlir::titan {

/// What an arena buffer holds, by the phases of the op that writes its first
/// value and of the ops that read that value.
enum class BufferKind : uint8_t {
  /// A parameter gathered by a collective (FSDP's all-gather), kept while a
  /// phase or both use it.
  GatheredParameter,
  /// A forward value the backward reads (what activation checkpointing
  /// trades for recomputation).
  SavedActivation,
  /// A backward value the optimizer reads (a parameter's gradient).
  Gradient,
  /// Another collective's result (a buffer of tensor or sequence
  /// parallelism read within its phase).
  Collective,
  /// Workspace of a kernel or runtime call while it runs.
  Scratch,
  /// Anything else: a value read within its own phase.
  Transient,
};
inline constexpr unsigned kNumBufferKinds = 6;

/// The name of `kind` for people ("saved activations", ...).
StringRef getBufferKindName(BufferKind kind);

/// The arena's live bytes over the step, by kind.
struct MemoryTimeline {
  /// Per op of the body in order (the return last): the bytes of arena
  /// buffers live while it runs, by BufferKind.
  std::vector<std::array<int64_t, kNumBufferKinds>> liveBytes;
  /// The ops of the body in order.
  std::vector<Operation *> ops;
  /// Where the backward and the optimizer start: after the last op of the
  /// forward, and of the backward.
  int64_t backwardStart = 0;
  int64_t optimizerStart = 0;

  /// The sum over kinds at `position`.
  int64_t getTotal(int64_t position) const;
  /// The first position where the total peaks.
  int64_t getPeakPosition() const;
};

/// The rows (the product of all dims but the last) and the columns (the
/// last dim) of a static tensor of rank >= 1: the matrix the runtime's row
/// kernels (titanrt_rms_norm and its gradient) see, and size workspaces by.
std::pair<int64_t, int64_t> getRowsAndColumns(Value value);

/// Plans the memory of one straight-line function (titan-plan-memory).
class MemoryPlanner {
public:
  MemoryPlanner(func::FuncOp function, SymbolTable &symbols, int64_t alignment)
      : function(function), symbols(symbols), alignment(alignment),
        context(function.getContext()) {}

  /// The liveness of every buffer: places of the arguments, buffers of op
  /// results, views and in-place results, updates of state arguments in
  /// their arguments' places.
  void analyze();
  /// analyze(), then the arena's offsets.
  void plan();
  /// Writes the attributes of the plan (after plan()).
  void record();
  /// The arena's use over the step (after analyze()).
  MemoryTimeline getTimeline() const;

private:
  /// One buffer of the arena: the values that share it (a value, its
  /// reshapes, results computed in place over it) live in [start, end].
  struct ArenaBuffer {
    int64_t bytes = 0;
    int64_t start = 0;
    int64_t end = 0;
    /// A buffer that lives in a state argument's place instead of the
    /// arena.
    std::optional<BufferAttr> fixed;
    /// What it holds, and whether a collective writes it.
    BufferKind kind = BufferKind::Transient;
    bool collective = false;
    int64_t offset = -1;
  };

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
  /// Sets each buffer's kind from the phases of its writer and readers.
  void classifyBuffers();
  /// Chooses arena offsets; returns the arena's size.
  int64_t placeArena();

  /// The buffer of `value` (an op result in the arena) or null.
  ArenaBuffer *bufferOf(Value value) {
    auto it = bufferIndex.find(value);
    return it == bufferIndex.end() ? nullptr : &buffers[it->second];
  }
  /// The pairs (operand, result) of `op` that may share memory: those of
  /// a launch's kernel (titan.in_place), a parameter and its moments and
  /// their updates for titan.adamw, the addend of titan.matmul or
  /// titan.rms_norm_grad and its (first) result.
  SmallVector<std::pair<unsigned, unsigned>> inPlacePairs(Operation *op);
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
  int64_t arenaBytes = 0;

  /// Places of the arguments.
  DenseMap<Value, BufferAttr> argumentPlaces;
  int64_t stateBytes = 0, inputBytes = 0;
  /// Arena buffers, and the buffer of every value that lives in one.
  std::vector<ArenaBuffer> buffers;
  DenseMap<Value, unsigned> bufferIndex;
  /// The value that first took each buffer (none for scratch).
  std::vector<Value> bufferRoots;
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

} // namespace mlir::titan

#endif // TITAN_CODEGEN_MEMORYPLANNER_H
