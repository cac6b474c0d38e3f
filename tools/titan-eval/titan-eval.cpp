//===- titan-eval.cpp - run a titan program on the host -------------------===//
//
// titan-eval PROGRAM.mlir --entry=NAME --inputs=DIR --outputs=DIR [--ranks=N]
//
// Runs func.func @NAME with titan's reference interpreter. Argument i is read
// from DIR/<name>.npy, where <name> is the argument's `titan.name` (else
// "arg<i>"); result i is written to DIR/<name>.npy, named by the result's
// `titan.name` (else "result<i>"). With --ranks=N the function is a spmdized
// program run on N simulated ranks: global inputs are sharded and global
// outputs assembled by their `titan.placements`.
//
// With several program files, they are the programs of a pipeline's ranks
// (titan-partition-pipeline's, pipeline rank 0 first), each run on --ranks
// ranks of its stage, together: each reads the inputs it names, and a
// result several programs return (the loss) must be the same bits in all.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/TitanDialect.h"
#include "titan/InitAll.h"
#include "titan/Interpreter/Interpreter.h"
#include "titan/Support/Npy.h"
#include "titan/Tools/ParseInput.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include "llvm/Support/WithColor.h"

using namespace mlir;
using namespace mlir::titan;

/// The options this tool defines: --help lists only them (the options of
/// the LLVM libraries linked in are still accepted, not listed).
static llvm::cl::OptionCategory evalOptions("titan-eval options");

static llvm::cl::list<std::string>
    programFiles(llvm::cl::Positional, llvm::cl::OneOrMore,
                 llvm::cl::desc("<program.mlir> (one per pipeline rank)"),
                 llvm::cl::cat(evalOptions));
static llvm::cl::opt<std::string>
    entryName("entry", llvm::cl::desc("The func.func to run"),
              llvm::cl::init("main"), llvm::cl::cat(evalOptions));
static llvm::cl::opt<std::string>
    inputsDir("inputs", llvm::cl::Required,
              llvm::cl::desc("Directory of the argument .npy files"),
              llvm::cl::cat(evalOptions));
static llvm::cl::opt<std::string>
    outputsDir("outputs", llvm::cl::Required,
               llvm::cl::desc("Directory the result .npy files go to"),
               llvm::cl::cat(evalOptions));
static llvm::cl::opt<int>
    numRanks("ranks", llvm::cl::init(1),
             llvm::cl::desc("Number of simulated ranks of a spmdized "
                            "program"),
             llvm::cl::cat(evalOptions));
static llvm::cl::opt<bool> rankOutputs(
    "rank-outputs",
    llvm::cl::desc("Write every rank's local results as "
                   "OUTPUTS/rank<R>/<name>.npy instead of assembling them "
                   "(the layout of a compiled program's --dump-results)"),
    llvm::cl::cat(evalOptions));

/// Prints `message` as an error and returns the exit code of a failure.
static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "titan-eval") << message << "\n";
  return 1;
}

/// Prints `diagnostic` (and its notes) as "file:line:col: error: message",
/// without the source line MLIR's handler shows: a program's signature is
/// one line, tens of kilobytes long for a real model.
static void printDiagnostic(Diagnostic &diagnostic) {
  auto print = [](Diagnostic &d, llvm::StringRef severity) {
    if (auto file = dyn_cast<FileLineColLoc>(d.getLocation()))
      llvm::errs() << file.getFilename().getValue() << ":" << file.getLine()
                   << ":" << file.getColumn() << ": ";
    llvm::errs() << severity << ": " << d << "\n";
  };
  switch (diagnostic.getSeverity()) {
  case DiagnosticSeverity::Error:
    print(diagnostic, "error");
    break;
  case DiagnosticSeverity::Warning:
    print(diagnostic, "warning");
    break;
  default:
    print(diagnostic, "note");
  }
  for (Diagnostic &note : diagnostic.getNotes())
    print(note, "note");
}

/// Checks argument `index` against its `titan.id_range`: a sharded table
/// would silently drop an id outside it.
static llvm::Error checkIdRange(func::FuncOp function, unsigned index,
                                const TensorValue &tensor,
                                llvm::StringRef path) {
  auto range = function.getArgAttrOfType<DenseI64ArrayAttr>(
      index, TitanDialect::kIdRangeAttrName);
  if (!range ||
      !std::holds_alternative<std::vector<int64_t>>(tensor.getStorage()))
    return llvm::Error::success();
  std::optional<int64_t> ignore;
  if (range.size() == 3)
    ignore = range[2];
  for (auto [i, id] : llvm::enumerate(tensor.get<int64_t>()))
    if ((id < range[0] || id >= range[1]) && (!ignore || id != *ignore))
      return llvm::createStringError(
          llvm::formatv(
              "{0}: element {1} is id {2}, outside [{3}, {4}){5}, "
              "the rows of the table it indexes",
              path, i, id, range[0], range[1],
              ignore
                  ? llvm::formatv(" (or the ignore index {0})", *ignore).str()
                  : "")
              .str());
  return llvm::Error::success();
}

/// Reads the global arguments of the interpreter's function from `dir`.
static llvm::Expected<std::vector<TensorValue>>
readArguments(const Interpreter &interpreter, llvm::StringRef dir) {
  func::FuncOp function = interpreter.getFunction();
  std::vector<TensorValue> arguments;
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    std::string name = getArgumentName(function, i);
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, name + ".npy");
    if (!llvm::sys::fs::exists(path))
      return llvm::createStringError(
          "missing input file '%s' for argument #%u '%s' (expected %s)",
          path.c_str(), i, name.c_str(),
          interpreter.describeGlobalArgument(i).c_str());
    llvm::Expected<NpyArray> array = readNpy(path);
    if (!array)
      return array.takeError();
    llvm::Expected<TensorValue> tensor =
        tensorFromNpy(*array, interpreter.getArgumentKind(i),
                      ("argument '" + name + "' (" + path + ")").str());
    if (!tensor)
      return tensor.takeError();
    if (llvm::Error error = checkIdRange(function, i, *tensor, path))
      return std::move(error);
    arguments.push_back(std::move(*tensor));
  }
  return arguments;
}

/// Keeps the memory the interpreter frees for its next tensors. Every op
/// allocates its results (and double copies of its operands), up to tens
/// of MB, and frees them soon after; by default glibc maps each block above
/// 128 KiB anew and returns freed memory to the system, so that every op
/// faults its pages in again: half of a run's time on a GPT-2 with its
/// 50257-token vocabulary. Blocks up to 32 MiB now come from the heap,
/// which grows 256 MiB at a time and is not trimmed below 1 GiB.
static void keepFreedMemory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TOP_PAD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

int main(int argc, char **argv) {
  keepFreedMemory();
  llvm::InitLLVM init(argc, argv);
  llvm::cl::HideUnrelatedOptions(evalOptions);
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "titan reference interpreter: runs a titan program on "
      ".npy inputs\n");

  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  // Errors name the op and its location; the whole program is not printed.
  context.printOpOnDiagnostic(false);
  context.getDiagEngine().registerHandler(printDiagnostic);
  // One source manager per file: a parser reads its manager's main file.
  std::vector<std::unique_ptr<llvm::SourceMgr>> sourceMgrs;
  std::vector<OwningOpRef<ModuleOp>> modules;
  std::vector<Interpreter> interpreters;
  for (const std::string &file : programFiles) {
    sourceMgrs.push_back(std::make_unique<llvm::SourceMgr>());
    modules.push_back(parseInputFile(file, *sourceMgrs.back(), &context));
    if (!modules.back())
      return 1;
    FailureOr<Interpreter> interpreter =
        Interpreter::create(*modules.back(), entryName, numRanks);
    if (failed(interpreter))
      return 1;
    interpreters.push_back(std::move(*interpreter));
  }
  std::vector<std::vector<TensorValue>> arguments;
  for (const Interpreter &interpreter : interpreters) {
    llvm::Expected<std::vector<TensorValue>> read =
        readArguments(interpreter, inputsDir);
    if (!read)
      return fail(llvm::toString(read.takeError()));
    arguments.push_back(std::move(*read));
  }
  // Per rank (--rank-outputs) or assembled: folders, with each result's
  // name and value.
  std::vector<
      std::pair<std::string, std::vector<std::pair<std::string, TensorValue>>>>
      outputs;
  auto named = [](func::FuncOp function, std::vector<TensorValue> results) {
    std::vector<std::pair<std::string, TensorValue>> list;
    for (auto [index, result] : llvm::enumerate(results))
      list.emplace_back(getResultName(function, index), std::move(result));
    return list;
  };
  if (interpreters.size() > 1) {
    if (rankOutputs)
      return fail("--rank-outputs runs one program, not a pipeline's");
    SmallVector<const Interpreter *> programs;
    for (const Interpreter &interpreter : interpreters)
      programs.push_back(&interpreter);
    FailureOr<std::vector<std::vector<TensorValue>>> results =
        Interpreter::runPipeline(programs, arguments);
    if (failed(results))
      return 1;
    std::vector<std::pair<std::string, TensorValue>> merged;
    for (auto [pipelineRank, programResults] : llvm::enumerate(*results))
      for (auto &[name, value] : named(interpreters[pipelineRank].getFunction(),
                                       std::move(programResults))) {
        auto same = llvm::find_if(merged, [&, &name = name](const auto &e) {
          return e.first == name;
        });
        if (same == merged.end()) {
          merged.emplace_back(name, std::move(value));
        } else if (!(same->second == value)) {
          return fail("result '" + name + "' differs between pipeline rank " +
                      std::to_string(pipelineRank) + " and an earlier one");
        }
      }
    outputs.emplace_back(outputsDir, std::move(merged));
  } else if (rankOutputs) {
    FailureOr<std::vector<std::vector<TensorValue>>> locals =
        interpreters.front().runLocal(arguments.front());
    if (failed(locals))
      return 1;
    for (auto [rank, results] : llvm::enumerate(*locals)) {
      llvm::SmallString<256> folder(outputsDir);
      llvm::sys::path::append(folder, "rank" + std::to_string(rank));
      outputs.emplace_back(
          std::string(folder),
          named(interpreters.front().getFunction(), std::move(results)));
    }
  } else {
    FailureOr<std::vector<TensorValue>> results =
        interpreters.front().run(arguments.front());
    if (failed(results))
      return 1;
    outputs.emplace_back(outputsDir, named(interpreters.front().getFunction(),
                                           std::move(*results)));
  }
  for (const auto &[folder, results] : outputs) {
    if (std::error_code error = llvm::sys::fs::create_directories(folder))
      return fail("cannot create '" + folder + "': " + error.message());
    for (const auto &[name, result] : results) {
      llvm::SmallString<256> path(folder);
      llvm::sys::path::append(path, name + ".npy");
      if (llvm::Error error = writeNpy(path, tensorToNpy(result)))
        return fail(llvm::toString(std::move(error)));
    }
  }
  return 0;
}
