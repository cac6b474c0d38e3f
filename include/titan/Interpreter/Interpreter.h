//===- Interpreter.h - reference interpreter of titan programs --*- C++ -*-===//
//
// Runs a function of a titan-dialect module on the host, for one rank (the
// global program) or for N simulated ranks (a spmdized program). With N
// ranks, the function is the local program of every rank: all ranks run it
// in lockstep, op by op, each with its own values; a collective reads the
// operands of every rank of each of its groups and writes each rank's
// result. Global arguments are sharded with their `titan.placements` and
// global results are assembled from theirs (see `Interpreter::run`).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_INTERPRETER_INTERPRETER_H
#define TITAN_INTERPRETER_INTERPRETER_H

#include "titan/Interpreter/TensorValue.h"
#include "titan/Placement/PlacementAlgebra.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <string>
#include <vector>

namespace mlir::titan {

/// The file name stem of argument `index` of `function`: its `titan.name`,
/// else "arg<index>".
std::string getArgumentName(func::FuncOp function, unsigned index);

/// The file name stem of result `index` of `function`: its `titan.name`,
/// else "result<index>".
std::string getResultName(func::FuncOp function, unsigned index);

/// Runs one function of a titan module on `numRanks` simulated ranks.
/// Failures are reported as MLIR diagnostics on the offending op (with the
/// rank when it matters).
class Interpreter {
public:
  /// Prepares to run the function `entry` of `module` on `numRanks` ranks.
  /// Fails unless the function exists, is one block, and its arguments and
  /// results are ranked tensors of element types the interpreter handles.
  /// Dims may be dynamic: shapes come from the arguments at run time.
  /// That every mesh the run needs has `numRanks` devices is checked on use.
  static FailureOr<Interpreter> create(ModuleOp module, llvm::StringRef entry,
                                       int64_t numRanks);

  func::FuncOp getFunction() const { return entry; }
  int64_t getNumRanks() const { return numRanks; }

  /// What the global input of argument `index` must be, for messages: its
  /// type for one rank; with several ranks, the global type an even sharding
  /// under the argument's placements implies and the local type per rank.
  std::string describeGlobalArgument(unsigned index) const;

  /// Element kind of argument `index`.
  ElementType getArgumentKind(unsigned index) const;

  /// Runs the program with every rank's own arguments (`arguments[rank][i]`)
  /// and returns every rank's results.
  FailureOr<std::vector<std::vector<TensorValue>>>
  runRanks(std::vector<std::vector<TensorValue>> arguments) const;

  /// Runs the program on global arguments. With one rank they are the
  /// arguments. With several, argument i is sharded by its `titan.placements`
  /// (replicated when absent): `S(d)` keeps each rank's torch.chunk box,
  /// `P(sum)` keeps the value on coordinate 0 of the axis and zeros
  /// elsewhere, `P(avg|max|min)` keeps it everywhere. Results are assembled
  /// by their placements: shards placed, partial axes reduced, and replicas
  /// required to agree bitwise. Arguments and results with
  /// `titan.sequence_order` are given and returned in natural order (the
  /// permutation is applied before sharding and undone after assembly).
  FailureOr<std::vector<TensorValue>>
  run(llvm::ArrayRef<TensorValue> givenArguments) const;

  /// Runs the program on global arguments, sharded as run() does, and
  /// returns every rank's local results as they are (no assembly), as a
  /// rank process of the compiled program holds them.
  FailureOr<std::vector<std::vector<TensorValue>>>
  runLocal(llvm::ArrayRef<TensorValue> givenArguments) const;

  /// Shards global arguments over the ranks as run() does: every rank's
  /// arguments.
  FailureOr<std::vector<std::vector<TensorValue>>>
  shardArguments(llvm::ArrayRef<TensorValue> givenArguments) const;

  /// Assembles every rank's local results into global results as run()
  /// does.
  FailureOr<std::vector<TensorValue>>
  assembleResults(std::vector<std::vector<TensorValue>> locals) const;

  /// Runs the programs of a pipeline's ranks together (MPMD):
  /// `programs[p]` is pipeline rank p's program (titan-partition-pipeline's),
  /// each on the ranks of one stage (the same number for all), on its
  /// global `arguments[p]`, sharded as run() does. The programs run op by
  /// op in turn; one that receives a message not sent yet waits while the
  /// others run. Returns each program's global results. Programs that all
  /// wait are an error, with a note where each waits.
  static FailureOr<std::vector<std::vector<TensorValue>>>
  runPipeline(llvm::ArrayRef<const Interpreter *> programs,
              llvm::ArrayRef<std::vector<TensorValue>> arguments);

  /// The mesh `symbol` referenced from `user`; emits an error on `user` when
  /// it does not exist or, with several ranks, does not have `numRanks`
  /// devices.
  FailureOr<const DeviceMesh *> getMesh(Operation *user,
                                        FlatSymbolRefAttr symbol) const;

private:
  Interpreter(func::FuncOp function, int64_t numRanks,
              std::map<std::string, DeviceMesh> meshes)
      : entry(function), numRanks(numRanks), meshes(std::move(meshes)) {}

  /// Shards global argument `index` over the ranks.
  FailureOr<std::vector<TensorValue>>
  shardArgument(unsigned index, const TensorValue &global) const;

  /// Assembles result `index` from every rank's local result.
  FailureOr<TensorValue>
  assembleResult(unsigned index,
                 const std::vector<std::vector<TensorValue>> &locals) const;

  func::FuncOp entry;
  int64_t numRanks;
  std::map<std::string, DeviceMesh> meshes;
};

} // namespace mlir::titan

#endif // TITAN_INTERPRETER_INTERPRETER_H
