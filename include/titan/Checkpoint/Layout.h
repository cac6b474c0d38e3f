//===- Layout.h - The checkpoint plan of a partitioned program --*- C++ -*-===//
//
// Derives the checkpoint plan (Plan.h) of a program partitioned by
// titan-spmdize from its @train_step arguments: their names, roles,
// placements and local types, and the module's mesh.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CHECKPOINT_LAYOUT_H
#define TITAN_CHECKPOINT_LAYOUT_H

#include "titan/Checkpoint/Plan.h"

#include "titan/Placement/PlacementAlgebra.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::titan {

/// Where the ranks of a partitioned function hold an argument.
struct ArgumentLayout {
  /// The argument's global shape: its local shape times the shard counts,
  /// or the recorded `titan.global_shape` of uneven shards.
  llvm::SmallVector<int64_t> globalShape;
  /// The box of the global tensor each rank holds, by rank: for uneven
  /// shards the rank's chunk, which starts its padded local tensor.
  std::vector<IndexBox> boxes;
};

/// The layout of argument `index` of `function` over `mesh` from its
/// placements (the placement algebra's boxes). Fails, with an error on the
/// argument, on missing placements, a partial placement, or a local type
/// the placements do not produce.
FailureOr<ArgumentLayout> computeArgumentLayout(func::FuncOp function,
                                                unsigned index,
                                                const DeviceMesh &mesh);

/// The checkpoint plan of `module`'s @train_step, with torchtitan's keys:
///  - a `param` argument `<fqn>` is saved as `<fqn>`;
///  - `state` arguments `exp_avg.<fqn>` and `exp_avg_sq.<fqn>` as
///    `optimizer.state.<fqn>.exp_avg` and `.exp_avg_sq`, and the `step`
///    argument as `optimizer.state.<fqn>.step` for every such `<fqn>` and,
///    as a value (an int in a bytes entry, as torchtitan's trainer saves
///    it), as `train_state.step`;
///  - where the module has `titan.state_dict` (the importer's), every other
///    key of a parameter there (a tied name) as an alias of it, and every
///    buffer as a buffer (PlanTensorKind), so that the checkpoint holds what
///    the model's state_dict holds; a buffer the step does not read (a
///    causal mask replaced by causal attention) is taken from @forward's
///    argument, every rank holding it whole.
/// Global shapes are the local shapes times the shard counts; each rank's
/// box comes from the placement algebra, and of ranks holding the same box
/// the lowest writes it. Fails (with an error on the module) on a missing
/// mesh or placements, a partial value, a local type the placements do not
/// produce, or a plan whose written boxes do not tile a tensor.
FailureOr<CheckpointPlan> computeCheckpointLayout(ModuleOp module);

} // namespace mlir::titan

#endif // TITAN_CHECKPOINT_LAYOUT_H
