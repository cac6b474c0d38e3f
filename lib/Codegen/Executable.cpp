//===- Executable.cpp - object files and executables of programs ----------===//

#include "titan/Codegen/Executable.h"

#include "titan/Codegen/RuntimeLocation.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::titan;

/// A target machine for `target`, or an error naming what is unknown.
static llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const CodegenTarget &target) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(target.triple.empty()
                          ? llvm::sys::getDefaultTargetTriple()
                          : target.triple);
  std::string error;
  const llvm::Target *llvmTarget =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!llvmTarget)
    return llvm::createStringError("target '" + triple.str() + "': " + error);
  std::string cpu =
      target.cpu == "native" ? llvm::sys::getHostCPUName().str() : target.cpu;
  // Checked before creating the machine, which would only warn.
  std::unique_ptr<llvm::MCSubtargetInfo> generic(
      llvmTarget->createMCSubtargetInfo(triple, "", ""));
  if (!generic || !generic->isCPUStringValid(cpu))
    return llvm::createStringError(
        "unknown CPU '" + cpu + "' for " + triple.str() +
        " (use an LLVM CPU name such as x86-64-v3, x86-64-v4 or native)");
  std::unique_ptr<llvm::TargetMachine> machine(llvmTarget->createTargetMachine(
      triple, cpu, /*Features=*/"", llvm::TargetOptions(), llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return llvm::createStringError("cannot generate code for CPU '" + cpu +
                                   "' on " + triple.str());
  return std::move(machine);
}

llvm::Error mlir::titan::checkCodegenTarget(const CodegenTarget &target) {
  return createTargetMachine(target).takeError();
}

llvm::Error mlir::titan::emitObjectFile(ModuleOp module, llvm::StringRef path,
                                        const CodegenTarget &target) {
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      createTargetMachine(target);
  if (!machine)
    return machine.takeError();
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "titan_program");
  if (!llvmModule)
    return llvm::createStringError("cannot translate the program to LLVM IR");
  llvmModule->setDataLayout((*machine)->createDataLayout());
  llvmModule->setTargetTriple((*machine)->getTargetTriple());

  {
    llvm::LoopAnalysisManager loops;
    llvm::FunctionAnalysisManager functions;
    llvm::CGSCCAnalysisManager cgscc;
    llvm::ModuleAnalysisManager modules;
    llvm::PassBuilder builder(machine->get());
    builder.registerModuleAnalyses(modules);
    builder.registerCGSCCAnalyses(cgscc);
    builder.registerFunctionAnalyses(functions);
    builder.registerLoopAnalyses(loops);
    builder.crossRegisterProxies(loops, functions, cgscc, modules);
    llvm::ModulePassManager optimizer =
        builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
    optimizer.run(*llvmModule, modules);
  }

  std::error_code error;
  llvm::raw_fd_ostream os(path, error, llvm::sys::fs::OF_None);
  if (error)
    return llvm::createStringError("cannot write '" + path +
                                   "': " + error.message());
  llvm::legacy::PassManager codegen;
  if ((*machine)->addPassesToEmitFile(codegen, os, nullptr,
                                      llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("the target cannot emit object files");
  codegen.run(*llvmModule);
  os.flush();
  if (os.has_error())
    return llvm::createStringError("cannot write '" + path + "'");
  return llvm::Error::success();
}

llvm::Error mlir::titan::linkExecutable(llvm::StringRef object,
                                        llvm::StringRef output) {
  const char *linkerEnv = std::getenv("TITAN_LINKER");
  std::string linkerName = linkerEnv && *linkerEnv ? linkerEnv : "c++";
  llvm::ErrorOr<std::string> linker = llvm::sys::findProgramByName(linkerName);
  if (!linker)
    return llvm::createStringError(
        "cannot find the linker driver '" + linkerName +
        "' (install g++ or set TITAN_LINKER to a C++ compiler driver)");
  const char *runtimeEnv = std::getenv("TITAN_RUNTIME_DIR");
  std::string runtimeDir =
      runtimeEnv && *runtimeEnv ? runtimeEnv : kTitanRuntimeLibraryDir;
  std::string runtime = runtimeDir + "/libtitanrt.so";
  if (!llvm::sys::fs::exists(runtime))
    return llvm::createStringError(
        "cannot find libtitanrt at '" + runtime +
        "' (build the titanrt target, or set TITAN_RUNTIME_DIR)");
  std::string rpath = "-Wl,-rpath," + runtimeDir;
  llvm::SmallVector<llvm::StringRef> arguments = {*linker, "-o",    output,
                                                  object,  runtime, rpath};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(*linker, arguments, std::nullopt, {},
                                         0, 0, &message);
  if (status != 0)
    return llvm::createStringError(
        "linking '" + output + "' failed" +
        (message.empty() ? std::string() : ": " + message) +
        " (command: " + llvm::join(arguments, " ") + ")");
  return llvm::Error::success();
}
