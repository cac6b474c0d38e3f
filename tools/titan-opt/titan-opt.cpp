//===- titan-opt.cpp - titan's pass driver --------------------------------===//
//
// mlir-opt for titan: parses textual or bytecode IR, runs a pass pipeline and
// prints the result. Input nested deeper than the tools accept
// (include/titan/Support/NestingLimit.h) is refused before it is parsed.
//
//===----------------------------------------------------------------------===//

#include "titan/InitAll.h"
#include "titan/Tools/ParseInput.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <cstdio>

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::DialectRegistry registry;
  mlir::titan::registerAllDialects(registry);
  mlir::titan::registerAllPasses();
  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "titan optimizer driver\n", registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  auto fail = [](const llvm::Twine &message) {
    llvm::WithColor::error(llvm::errs(), "titan-opt") << message << "\n";
    return EXIT_FAILURE;
  };
  // What lists and exits reads no input.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(llvm::outs(), nullptr, registry, config));

  if (inputFilename == "-" &&
      llvm::sys::Process::FileDescriptorIsDisplayed(fileno(stdin)))
    llvm::errs() << "(processing input from stdin now, hit ctrl-c/ctrl-d to "
                    "interrupt)\n";
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> input =
      mlir::titan::openCheckedInput(inputFilename);
  if (!input)
    return fail(llvm::toString(input.takeError()));
  std::string message;
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &message);
  if (!output)
    return fail(message);
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(*input), registry, config)))
    return EXIT_FAILURE;
  output->keep();
  return EXIT_SUCCESS;
}
