//===- ProgramDescription.h - what a compiled program tells its runtime -===//
//
// The program description is text embedded in every executable
// (`titan_program_description`, titanrt.h): the mesh, the communicators, the
// sizes of the memory regions, every argument and result of the step with
// its place, and the boxes of the global batch each rank reads (the
// checkpoint plan, which can be large, is OUT/checkpoint-plan.txt beside
// the executable). docs/runtime.md documents the format; the runtime's
// parser is runtime/core/ProgramDescription.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CODEGEN_PROGRAMDESCRIPTION_H
#define TITAN_CODEGEN_PROGRAMDESCRIPTION_H

#include "titan/Config/LrSchedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace mlir::titan {

/// The titanrt_dtype of element type `element` (titanrt.h), or -1 when the
/// runtime has none.
int32_t getRuntimeDType(Type element);

/// The name of `element` in program descriptions ("f32", "bf16", "i64",
/// ...: the runtime's dtypeName), or "" when the runtime has none.
StringRef getRuntimeDTypeName(Type element);

/// The communicators of a program: one per set of mesh axes its collectives
/// run over, numbered in order of first use.
class CommunicatorTable {
public:
  /// The index of the communicator over `axes` (mesh axis names), added if
  /// new.
  int32_t getIndex(ArrayRef<std::string> axes);
  int32_t getIndex(ArrayAttr axes);
  /// Adds the communicators of `step`'s collectives and axis indices, in
  /// program order.
  void addCommunicatorsOf(func::FuncOp step);
  /// The axis names of every communicator, by index.
  const std::vector<std::vector<std::string>> &getAxes() const { return axes; }

private:
  std::vector<std::vector<std::string>> axes;
};

/// What the executable does when its command line does not say.
struct RunDefaults {
  double learningRate = 8e-4;
  int64_t steps = 1;
  int64_t seed = 0;
  LrSchedule schedule;
};

/// The description of the planned step function `step` of `module`
/// (titan-plan-memory has run) with communicators `communicators`, compiled
/// for `backend` ("cpu" or "cuda"). Fails, with an error on the function,
/// when the plan or a layout is missing.
FailureOr<std::string> describeProgram(ModuleOp module, func::FuncOp step,
                                       const CommunicatorTable &communicators,
                                       const RunDefaults &defaults,
                                       StringRef backend = "cpu");

} // namespace mlir::titan

#endif // TITAN_CODEGEN_PROGRAMDESCRIPTION_H
