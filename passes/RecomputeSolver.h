//===- RecomputeSolver.h - what to save, what to recompute ------*- C++ -*-===//
//
// The integer program behind titan-select-recompute's budgeted modes: over
// the checkpointed blocks of a training step, which forward values to keep
// for the backward and which to recompute there, minimizing the predicted
// seconds of recomputation subject to the bytes kept per rank. Solved with
// CBC; IR-free, so the solver is tested on its own.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PASSES_RECOMPUTESOLVER_H
#define TITAN_PASSES_RECOMPUTESOLVER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir::titan {

/// One checkpointed block: its ops in forward order and the values they
/// compute that the block need not keep (its outputs, which later forward
/// ops read, are kept anyway and are not listed).
struct RecomputeBlock {
  /// A candidate value: what keeping it costs and who needs it.
  struct Value {
    /// Bytes one rank holds of it.
    double bytes = 0;
    /// Whether a backward op reads it (then it is kept or recomputed).
    bool readByBackward = false;
    /// The op (index into `ops`) that computes it.
    unsigned def = 0;
  };
  /// An op of the block.
  struct Op {
    /// Predicted seconds of running it once more.
    double seconds = 0;
    /// Its operands that are candidate values (indices into `values`);
    /// operands kept anyway or from outside the block are not listed.
    llvm::SmallVector<unsigned> operands;
  };
  llvm::SmallVector<Value> values;
  llvm::SmallVector<Op> ops;
};

/// How the program was solved.
enum class RecomputeSolveStatus {
  /// CBC proved every program optimal.
  Optimal,
  /// CBC stopped at its time limit; the choice is the best it found.
  TimeLimit,
  /// CBC found nothing better than recomputing everything (or failed):
  /// every candidate is recomputed (full activation checkpointing).
  Fallback,
};

/// The choice for every block.
struct RecomputeSolution {
  /// Per block, per candidate value: whether it is kept.
  llvm::SmallVector<llvm::SmallVector<bool>> kept;
  /// Bytes kept per rank, over all blocks.
  double keptBytes = 0;
  /// Predicted seconds of the recomputation the choice implies (the ops
  /// that compute the backward's unkept values, through their unkept
  /// operands).
  double recomputeSeconds = 0;
  RecomputeSolveStatus status = RecomputeSolveStatus::Fallback;
  /// Wall seconds the solver took.
  double solveSeconds = 0;
  /// Blocks of distinct structure, and the efficient choices found for
  /// them together (the options of the knapsack over blocks).
  int64_t blockClasses = 0, choices = 0;
};

/// The recomputation `kept` implies in `block`: per op, whether it runs
/// again (it computes an unkept value the backward reads, or an unkept
/// operand of such an op).
llvm::SmallVector<bool> getRecomputedOps(const RecomputeBlock &block,
                                         llvm::ArrayRef<bool> kept);

/// Chooses what to keep in every block so that at most `keptBytesBudget`
/// bytes are kept per rank and the predicted recomputation is the least.
/// Blocks interact only through the budget, and the blocks of a model are
/// mostly alike, so the program is solved in two levels, each an integer
/// program for CBC:
///  - per class of identical blocks, its efficient choices (the Pareto
///    front of kept bytes against recompute seconds, walked from keeping
///    everything the backward reads down to keeping nothing, the bound
///    falling by at least 1/`kMaxChoicesPerClass` of the range each time):
///    binary keep(v) and recompute(op), keep(v) + recompute(def v) >= 1 for values the backward reads,
///    recompute(op) <= keep(u) + recompute(def u) for its candidate
///    operands u, sum bytes(v) keep(v) <= bound, minimizing
///    sum seconds(op) recompute(op) plus a tie-break toward fewer bytes;
///  - over the classes, how many of their blocks take each choice (integer
///    counts summing to the class's size) within the budget, minimizing the
///    seconds.
/// Each solve stops after `timeLimitSeconds` with the best found.
RecomputeSolution solveRecompute(llvm::ArrayRef<RecomputeBlock> blocks,
                                 double keptBytesBudget,
                                 double timeLimitSeconds);

/// The most efficient choices kept per class of blocks.
constexpr unsigned kMaxChoicesPerClass = 64;

/// "optimal", "time limit (best found)", "fallback (full recomputation)".
std::string stringifyRecomputeSolveStatus(RecomputeSolveStatus status);

} // namespace mlir::titan

#endif // TITAN_PASSES_RECOMPUTESOLVER_H
