//===- ValidationProgram.h - a validation step beside the training step ---===//
//
// A job with validation ([validation] enable) runs two planned programs on
// one rank's memory: the training step and the validation step
// (titan-build-train-step's `evaluate`: the forward and the loss of a
// held-out batch). They share the regions the runtime allocates once: the
// validation step reads the parameters and buffers where the training step
// keeps them, computes in the same arena (it runs between steps, when the
// arena holds nothing), and finds its batch after the training step's
// inputs.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CODEGEN_VALIDATIONPROGRAM_H
#define TITAN_CODEGEN_VALIDATIONPROGRAM_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Error.h"

namespace mlir::titan {

/// Makes the unplanned `validation` step read the narrow copies of the
/// parameters that the planned `training` step keeps (its `copy.<fqn>`
/// arguments, titan-keep-param-copies: under mixed precision, each
/// parameter rounded to the forward's type, written by AdamW): every cast of
/// validation's parameter `<fqn>` to that type reads a new argument
/// `copy.<fqn>` instead, as the training step's forward does, so that a
/// validation batch casts no parameter.
void readParameterCopies(func::FuncOp training, func::FuncOp validation);

/// Joins the planned `validation` step to the planned `training` step:
/// every state argument of `validation` (a parameter or buffer) moves to
/// the place of the training argument of the same name, which must have
/// its type; its inputs move after the training step's inputs (64-byte
/// aligned); every place in `validation` (arguments, op results, results)
/// moves with them. Both memory plans then name the same regions: the
/// training step's state, the larger arena, and inputs that hold both
/// batches. Errors name the tensor the two programs hold differently.
llvm::Error joinValidationProgram(func::FuncOp training,
                                  func::FuncOp validation);

} // namespace mlir::titan

#endif // TITAN_CODEGEN_VALIDATIONPROGRAM_H
