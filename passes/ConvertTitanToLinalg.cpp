//===- ConvertTitanToLinalg.cpp - titan's fusible ops to linalg -----------===//
//
// Implements titan-convert-to-linalg (see passes/Passes.td): a thin driver
// of the conversion in lib/Codegen/TitanToLinalg.
//
//===----------------------------------------------------------------------===//

#include "titan/Passes.h"

#include "titan/Codegen/TitanToLinalg.h"

namespace mlir::titan {
#define GEN_PASS_DEF_CONVERTTITANTOLINALGPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

struct ConvertTitanToLinalgPass
    : titan::impl::ConvertTitanToLinalgPassBase<ConvertTitanToLinalgPass> {
  void runOnOperation() override {
    if (failed(convertTitanToLinalg(getOperation())))
      signalPassFailure();
  }
};

} // namespace
