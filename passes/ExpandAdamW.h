//===- ExpandAdamW.h - titan.adamw as elementwise ops -----------*- C++ -*-===//
//
// titan-fuse-kernels expands the titan.adamw ops the runtime does not
// execute into the elementwise ops their description spells out, which it
// then fuses like any others.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PASSES_EXPANDADAMW_H
#define TITAN_PASSES_EXPANDADAMW_H

#include "titan/Dialect/TitanDialect.h"

#include "llvm/ADT/SmallVector.h"

#include <tuple>

namespace mlir::titan {

/// Expands titan.adamw ops one after another in program order; the f64
/// scalars of a step (decay, step size, second-moment correction) are built
/// before the first op that needs them and shared by the later ones of the
/// same lr, step and hyperparameters.
class AdamWExpander {
public:
  /// Replaces `op` by its elementwise computation and erases it.
  void expand(AdamWOp op);

private:
  /// The f64 scalars of one step.
  struct StepScalars {
    Value decay, stepSize, correction2Sqrt;
  };
  /// lr, step, beta1, beta2 and weight decay.
  using StepKey = std::tuple<Value, Value, double, double, double>;

  StepScalars getStepScalars(AdamWOp op, OpBuilder &builder);

  /// The scalars built so far (a step has one set per optimizer).
  llvm::SmallVector<std::pair<StepKey, StepScalars>, 1> stepScalars;
};

} // namespace mlir::titan

#endif // TITAN_PASSES_EXPANDADAMW_H
