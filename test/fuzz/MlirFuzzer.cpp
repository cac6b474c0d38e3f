//===- MlirFuzzer.cpp - libFuzzer target of titan-opt's textual input -----===//
//
// Parses arbitrary text as an MLIR module with the titan dialect registered
// (titan's attribute, type and op parsers), verifies it (titan's verifiers),
// and canonicalizes what verifies (titan's folders and patterns, a bounded
// number of rounds), as `titan-opt FILE --canonicalize` would.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/TitanDialect.h"
#include "titan/Support/NestingLimit.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/SourceMgr.h"

#include <cstddef>
#include <cstdint>

using namespace mlir;

/// The dialects of titan's programs as the importer and the passes up to the
/// per-rank program write them.
static DialectRegistry makeRegistry() {
  DialectRegistry registry;
  registry.insert<titan::TitanDialect, func::FuncDialect, arith::ArithDialect,
                  tensor::TensorDialect>();
  return registry;
}

/// One input: the text of a `.mlir` file.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const DialectRegistry registry = makeRegistry();
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  // Diagnostics are expected for most inputs; only crashes matter.
  ScopedDiagnosticHandler ignore(&context, [](Diagnostic &) {});
  std::unique_ptr<llvm::MemoryBuffer> buffer =
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size),
          "fuzz.mlir");
  // As the tools do (include/titan/Tools/ParseInput.h): nesting past the
  // limit is refused before the recursive parser sees it.
  if (llvm::Error error = titan::checkMlirNestingDepth(*buffer)) {
    llvm::consumeError(std::move(error));
    return 0;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  // Parsing verifies the module.
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context));
  if (!module)
    return 0;
  PassManager pm(&context);
  pm.addPass(createCanonicalizerPass());
  (void)pm.run(*module);
  return 0;
}
