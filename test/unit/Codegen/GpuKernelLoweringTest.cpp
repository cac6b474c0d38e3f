//===- GpuKernelLoweringTest.cpp - object files of a CUDA program ---------===//
//
// A planned program lowered with titan-lower-to-runtime target=cuda (its
// kernels compiled to a fatbin by the CUDA toolkit's ptxas) becomes object
// files: the kernels' host functions, the fatbin and the constructors that
// load it in the optimized object, the step function in the other. No GPU
// is needed; without the toolkit the test is skipped.
//
//===----------------------------------------------------------------------===//

#include "titan/Codegen/GpuKernelLowering.h"
#include "titan/Codegen/Executable.h"
#include "titan/InitAll.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <set>

using namespace mlir;
using namespace mlir::titan;

namespace {

/// An elementwise kernel, a row sum and a sum to a scalar.
constexpr const char *kProgram = R"mlir(
titan.mesh @mesh ["dp"=1]
func.func @train_step(%x: tensor<4x8xf32> {titan.name = "x", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>})
    -> (tensor<4x8xf32> {titan.name = "e"}, tensor<4xf32> {titan.name = "rows"}, tensor<f32> {titan.name = "total"}) {
  %e = titan.exp %x : tensor<4x8xf32>
  %r = titan.reduce_sum %x dims [1] : tensor<4x8xf32> -> tensor<4xf32>
  %t = titan.reduce_sum %x dims [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %e, %r, %t : tensor<4x8xf32>, tensor<4xf32>, tensor<f32>
}
)mlir";

/// The defined and the undefined symbols of the object file at `path`.
struct Symbols {
  std::set<std::string> defined, undefined;
};

Symbols readSymbols(llvm::StringRef path) {
  Symbols symbols;
  auto object = llvm::object::ObjectFile::createObjectFile(path);
  if (!object) {
    ADD_FAILURE() << llvm::toString(object.takeError());
    return symbols;
  }
  for (const llvm::object::SymbolRef &symbol : object->getBinary()->symbols()) {
    llvm::Expected<llvm::StringRef> name = symbol.getName();
    llvm::Expected<uint32_t> flags = symbol.getFlags();
    if (!name || !flags) {
      llvm::consumeError(name.takeError());
      llvm::consumeError(flags.takeError());
      continue;
    }
    bool undefined = *flags & llvm::object::SymbolRef::SF_Undefined;
    (undefined ? symbols.undefined : symbols.defined).insert(name->str());
  }
  return symbols;
}

TEST(GpuKernelLoweringTest, CudaProgramBecomesObjectFiles) {
  GpuKernelOptions options;
  llvm::SmallString<128> ptxas(getCudaToolkitPath(options));
  llvm::sys::path::append(ptxas, "bin", "ptxas");
  if (!llvm::sys::fs::can_execute(ptxas))
    GTEST_SKIP() << "no CUDA toolkit at " << getCudaToolkitPath(options);

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllPasses();
  MLIRContext context(registry);
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
    diagnostics += diagnostic.str() + "\n";
    return success();
  });
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kProgram, &context);
  ASSERT_TRUE(module) << diagnostics;
  PassManager pm(&context);
  ASSERT_TRUE(succeeded(parsePassPipeline(
      "titan-fuse-kernels,titan-lower-kernels,titan-plan-memory,"
      "titan-lower-to-runtime{target=cuda}",
      pm)));
  ASSERT_TRUE(succeeded(pm.run(*module))) << diagnostics;

  llvm::SmallString<128> folder;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("titan-gpu", folder));
  std::string kernelsPath = (folder + "/kernels.o").str();
  std::string hostPath = (folder + "/host.o").str();
  llvm::Error error =
      emitObjectFiles(*module, kernelsPath, hostPath, CodegenTarget());
  ASSERT_FALSE(error) << llvm::toString(std::move(error)) << "\n"
                      << diagnostics;

  Symbols kernels = readSymbols(kernelsPath);
  for (const char *name :
       {"kernel_exp", "kernel_reduce_sum", "kernel_reduce_sum_0"})
    EXPECT_TRUE(kernels.defined.count(name)) << name;
  for (const char *name :
       {"titanrt_cuda_stream", "mgpuModuleLoad", "mgpuModuleUnload",
        "mgpuModuleGetFunction", "mgpuLaunchKernel"})
    EXPECT_TRUE(kernels.undefined.count(name)) << name;
  // Launches go on the rank's stream: none is created or synchronized.
  EXPECT_FALSE(kernels.undefined.count("mgpuStreamCreate"));
  EXPECT_FALSE(kernels.undefined.count("mgpuStreamSynchronize"));
  Symbols host = readSymbols(hostPath);
  EXPECT_TRUE(host.defined.count("titan_program_step"));
  EXPECT_TRUE(host.undefined.count("kernel_exp"));
  llvm::sys::fs::remove_directories(folder);
}

} // namespace
