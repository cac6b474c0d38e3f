//===- LowerKernels.cpp - compile kernel functions to loops ---------------===//
//
// Implements titan-lower-kernels (see passes/Passes.td). The kernels are
// compiled in a module of their own, so that bufferization never sees the
// host function (which keeps its tensors until titan-plan-memory).
//
//===----------------------------------------------------------------------===//

#include "titan/Codegen/KernelLowering.h"
#include "titan/Passes.h"

namespace mlir::titan {
#define GEN_PASS_DEF_LOWERKERNELSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

struct LowerKernelsPass
    : public mlir::titan::impl::LowerKernelsPassBase<LowerKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OwningOpRef<ModuleOp> kernels = ModuleOp::create(module.getLoc());
    for (auto function :
         llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (function->hasAttr(TitanDialect::kKernelAttrName) &&
          function.getNumResults() != 0) {
        function->remove();
        kernels->push_back(function);
      }
    if (failed(bufferizeKernels(*kernels)))
      return signalPassFailure();
    // Back into the module: the kernels and the constants they read.
    for (Operation &op : llvm::make_early_inc_range(*kernels->getBody())) {
      op.remove();
      module.push_back(&op);
    }
  }
};

} // namespace
