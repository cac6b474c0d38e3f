//===- Executable.cpp - object files and executables of programs ----------===//

#include "titan/Codegen/Executable.h"

#include "titan/Codegen/GpuKernelLowering.h"
#include "titan/Codegen/RuntimeLocation.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
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
#include "llvm/Transforms/Utils/Cloning.h"

#include <cstdlib>
#include <thread>

using namespace mlir;
using namespace mlir::titan;

/// A target machine for `target` generating code at `level`, or an error
/// naming what is unknown.
static llvm::Expected<std::unique_ptr<llvm::TargetMachine>> createTargetMachine(
    const CodegenTarget &target,
    llvm::CodeGenOptLevel level = llvm::CodeGenOptLevel::Aggressive) {
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
      std::nullopt, level));
  if (!machine)
    return llvm::createStringError("cannot generate code for CPU '" + cpu +
                                   "' on " + triple.str());
  return std::move(machine);
}

llvm::Error mlir::titan::checkCodegenTarget(const CodegenTarget &target) {
  return createTargetMachine(target).takeError();
}

/// Runs LLVM's O2 pipeline over `module`. O3 generated twice the code of
/// O2 for fused kernels with static shapes (it unrolls and vectorizes more
/// of their small loops) and took 2.8x the time to compile them, for no
/// faster step (docs/benchmarks.md, "Compile time of the kernels").
static void optimize(llvm::Module &module, llvm::TargetMachine &machine) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager cgscc;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder(&machine);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(cgscc);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, cgscc, modules);
  builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2)
      .run(module, modules);
}

/// Writes the object file of `module` to `path` with `machine`.
static llvm::Error writeObjectFile(llvm::Module &module,
                                   llvm::TargetMachine &machine,
                                   llvm::StringRef path) {
  module.setDataLayout(machine.createDataLayout());
  module.setTargetTriple(machine.getTargetTriple());
  std::error_code error;
  llvm::raw_fd_ostream os(path, error, llvm::sys::fs::OF_None);
  if (error)
    return llvm::createStringError("cannot write '" + path +
                                   "': " + error.message());
  llvm::legacy::PassManager codegen;
  if (machine.addPassesToEmitFile(codegen, os, nullptr,
                                  llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("the target cannot emit object files");
  codegen.run(module);
  os.flush();
  if (os.has_error())
    return llvm::createStringError("cannot write '" + path + "'");
  return llvm::Error::success();
}

llvm::Error mlir::titan::emitObjectFiles(ModuleOp module,
                                         llvm::StringRef kernelsPath,
                                         llvm::StringRef hostPath,
                                         const CodegenTarget &target) {
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> optimizing =
      createTargetMachine(target);
  if (!optimizing)
    return optimizing.takeError();
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> fast =
      createTargetMachine(target, llvm::CodeGenOptLevel::None);
  if (!fast)
    return fast.takeError();
  // A program for CUDA (titan-lower-to-runtime target=cuda) holds a
  // gpu.binary and launches: its fatbin becomes a global with constructors
  // loading it, both in the optimized object with the kernels' host
  // functions (neither is optnone).
  DialectRegistry translations;
  registerGpuKernelTranslations(translations);
  module.getContext()->appendDialectRegistry(translations);
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> kernels =
      translateModuleToLLVMIR(module, llvmContext, "titan_program");
  if (!kernels)
    return llvm::createStringError("cannot translate the program to LLVM IR");

  // The optnone functions move to their own module (declared in the other).
  auto isHost = [](const llvm::GlobalValue *value) {
    auto *function = llvm::dyn_cast<llvm::Function>(value);
    return function && function->hasOptNone();
  };
  llvm::ValueToValueMapTy mapping;
  std::unique_ptr<llvm::Module> host =
      llvm::CloneModule(*kernels, mapping, isHost);
  for (llvm::Function &function : *kernels)
    if (isHost(&function))
      function.deleteBody();

  // The kernels are optimized and compiled on a second thread, in a context
  // of their own (an LLVMContext is not shared between threads: they move
  // there as bitcode), while this thread compiles the host functions.
  llvm::SmallVector<char> bitcode;
  {
    llvm::raw_svector_ostream os(bitcode);
    llvm::WriteBitcodeToFile(*kernels, os);
  }
  kernels.reset();
  llvm::Error kernelsError = llvm::Error::success();
  std::thread kernelsThread([&] {
    llvm::LLVMContext kernelsContext;
    llvm::Expected<std::unique_ptr<llvm::Module>> parsed =
        llvm::parseBitcodeFile(
            llvm::MemoryBufferRef(
                llvm::StringRef(bitcode.data(), bitcode.size()), "kernels"),
            kernelsContext);
    if (!parsed) {
      kernelsError = parsed.takeError();
      return;
    }
    optimize(**parsed, **optimizing);
    kernelsError = writeObjectFile(**parsed, **optimizing, kernelsPath);
  });
  llvm::Error hostError = writeObjectFile(*host, **fast, hostPath);
  kernelsThread.join();
  return llvm::joinErrors(std::move(kernelsError), std::move(hostError));
}

llvm::Error mlir::titan::linkExecutable(llvm::ArrayRef<std::string> objects,
                                        llvm::StringRef output,
                                        llvm::StringRef backend) {
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
  std::string library =
      backend == "cpu" ? "titanrt" : "titanrt_" + backend.str();
  std::string runtime = runtimeDir + "/lib" + library + ".so";
  if (!llvm::sys::fs::exists(runtime))
    return llvm::createStringError(
        "cannot find lib" + library + " at '" + runtime + "' (build the " +
        library + " target" +
        (backend == "cuda" ? ", which needs the CUDA toolkit at configure time"
                           : "") +
        ", or set TITAN_RUNTIME_DIR)");
  std::string rpath = "-Wl,-rpath," + runtimeDir;
  llvm::SmallVector<llvm::StringRef> arguments = {*linker, "-o", output};
  // The default driver links with lld where it is installed (~0.15 s
  // instead of GNU ld's ~0.7 s for a rank's executable).
  bool defaultDriver = !linkerEnv || !*linkerEnv;
  if (defaultDriver && llvm::sys::findProgramByName("ld.lld"))
    arguments.push_back("-fuse-ld=lld");
  arguments.append(objects.begin(), objects.end());
  arguments.append({runtime, rpath});
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
