//===- PartitionedStep.h - the program the reports read ---------*- C++ -*-===//
//
// The plan report's sections read one rank's @train_step and its mesh, after
// titan-spmdize.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_LIB_REPORT_PARTITIONEDSTEP_H
#define TITAN_LIB_REPORT_PARTITIONEDSTEP_H

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::titan {

/// One rank's partitioned training step.
struct PartitionedStep {
  func::FuncOp function;
  MeshOp mesh;
};

/// The partitioned @train_step of `module` and its (last) mesh, or an error
/// saying that `what` needs them.
inline FailureOr<PartitionedStep> getPartitionedStep(ModuleOp module,
                                                     StringRef what) {
  PartitionedStep step;
  step.function = module.lookupSymbol<func::FuncOp>("train_step");
  for (MeshOp mesh : module.getOps<MeshOp>())
    step.mesh = mesh;
  if (!step.function || !step.mesh)
    return emitError(module.getLoc())
           << what << " needs a partitioned @train_step "
           << "(titan-compile --emit=spmd)";
  return step;
}

} // namespace mlir::titan

#endif // TITAN_LIB_REPORT_PARTITIONEDSTEP_H
