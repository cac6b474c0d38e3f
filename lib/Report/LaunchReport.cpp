//===- LaunchReport.cpp - what a rank's step launches ---------------------===//
//
// The launches section of the plan report: after titan-fuse-kernels, a
// rank's step is runtime calls (GEMMs, attention, norms, the loss, AdamW,
// collectives) and launches of compiled kernels. The compiled kernels are
// memory-bound; the bytes they move are what kernel fusion shrinks: each
// launch's results, the part of each operand its kernel reads (a kernel
// that reads an operand only through subviews, a third of a fused qkv
// projection, reads those; one that gathers from it, an embedding's table,
// one element per iteration), and its scratch buffers, written and read
// back once. With a device, the compute of the compiled step is timed as
// it runs: each launch by the bytes it moves, each runtime call as the cost
// model times its op (the per-op prediction of the step-time section times
// every op's own pass over memory, as if nothing were fused).
//
//===----------------------------------------------------------------------===//

#include "titan/Report/PlanReport.h"

#include "ReportFormat.h"

#include "titan/CostModel/OpTime.h"
#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Format.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::titan;

namespace {

/// A kernel's family: its symbol without the uniquing suffix
/// (kernel_mul_8 -> kernel_mul).
StringRef getFamily(StringRef kernel) {
  StringRef family = kernel.rtrim("0123456789");
  return family.ends_with("_") && family.size() < kernel.size()
             ? family.drop_back()
             : kernel;
}

/// Launches and bytes of one family of compiled kernels.
struct FamilyUse {
  int64_t launches = 0;
  int64_t bytes = 0;
};

/// The bytes of `operand`, argument `argument` of a lowered kernel, that
/// the kernel reads: when it reads it only through subviews and through
/// loads in loop nests (an embedding's gather of rows), those subviews and
/// one element per iteration of each nest (at most the whole); else the
/// whole.
int64_t getBytesRead(Value operand, BlockArgument argument) {
  int64_t whole = getStaticByteSize(operand.getType());
  int64_t elementBytes = getElementByteWidth(getElementTypeOrSelf(operand));
  int64_t read = 0;
  for (Operation *user : argument.getUsers()) {
    if (auto subview = dyn_cast<memref::SubViewOp>(user);
        subview && subview.getType().hasStaticShape()) {
      read += subview.getType().getNumElements() * elementBytes;
      continue;
    }
    auto nest = isa<memref::LoadOp>(user)
                    ? user->getParentOfType<linalg::GenericOp>()
                    : linalg::GenericOp();
    SmallVector<int64_t> extents =
        nest ? nest.getStaticLoopRanges() : SmallVector<int64_t>();
    if (!nest || llvm::any_of(extents, ShapedType::isDynamic))
      return whole;
    int64_t iterations = 1;
    for (int64_t extent : extents)
      iterations *= extent;
    read += iterations * elementBytes;
  }
  return std::min(read, whole);
}

/// The bytes `launch` moves: its operands as its kernel reads them, its
/// results, and its scratch buffers twice.
int64_t getBytesMoved(LaunchOp launch, SymbolTable &symbols) {
  auto kernel = symbols.lookup<func::FuncOp>(launch.getKernel());
  bool lowered = kernel && !kernel.isExternal() &&
                 kernel.getNumArguments() >= launch->getNumOperands() &&
                 llvm::all_of(kernel.getArgumentTypes(),
                              [](Type type) { return isa<MemRefType>(type); });
  if (!lowered)
    return defaultBytesAccessed(launch);
  int64_t bytes = 0;
  for (unsigned i = 0; i < launch->getNumOperands(); ++i)
    bytes += getBytesRead(launch->getOperand(i), kernel.getArgument(i));
  for (Value result : launch->getResults())
    bytes += getStaticByteSize(result.getType());
  if (auto scratch =
          launch->getAttrOfType<ArrayAttr>(TitanDialect::kScratchAttrName))
    for (auto buffer : scratch.getAsRange<BufferAttr>())
      bytes += 2 * buffer.getBytes();
  return bytes;
}

} // namespace

LogicalResult mlir::titan::writeLaunchReport(ModuleOp module,
                                             const DeviceDescription *device,
                                             llvm::raw_ostream &os) {
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!step)
    return module.emitError("the launch report needs @train_step");
  SymbolTable symbols(module);
  llvm::MapVector<StringRef, FamilyUse> families;
  llvm::SmallDenseSet<StringRef> kernels;
  llvm::MapVector<StringRef, int64_t> calls;
  int64_t addends = 0;
  // The predicted compute seconds of the launches and of the runtime's
  // calls (collectives aside).
  double launchSeconds = 0, callSeconds = 0;
  step.walk([&](Operation *op) {
    if (auto launch = dyn_cast<LaunchOp>(op)) {
      FamilyUse &use = families[getFamily(launch.getKernel())];
      ++use.launches;
      int64_t moved = getBytesMoved(launch, symbols);
      use.bytes += moved;
      kernels.insert(launch.getKernel());
      if (device)
        launchSeconds += predictComputeSeconds(
            *device, ComputeClass::Vector, ElementType::F32, 0, double(moved));
      return;
    }
    if (!isa<TitanDialect>(op->getDialect()) || isa<ReshapeOp>(op))
      return;
    ++calls[op->getName().getStringRef()];
    if (device && !isa<CollectiveOpInterface>(op))
      if (std::optional<double> seconds = predictOpSeconds(*device, op))
        callSeconds += *seconds;
    if (auto matmul = dyn_cast<MatmulOp>(op); matmul && matmul.getAddend())
      ++addends;
    else if (auto grad = dyn_cast<RmsNormGradOp>(op); grad && grad.getAddend())
      ++addends;
  });

  int64_t launches = 0, bytes = 0;
  for (const FamilyUse &use : llvm::make_second_range(families)) {
    launches += use.launches;
    bytes += use.bytes;
  }
  os << "\n== Launches per rank (titan-fuse-kernels: compiled kernels and "
        "the runtime's calls) ==\n";
  os << "  compiled kernels  " << launches << " launches of " << kernels.size()
     << " kernels, " << formatBytes(bytes)
     << " read and written (each launch's results, the parts of its "
        "operands its kernel reads, its scratch written and read)\n";
  SmallVector<std::pair<StringRef, FamilyUse>> largest(families.begin(),
                                                       families.end());
  llvm::stable_sort(largest, [](const auto &a, const auto &b) {
    return a.second.bytes > b.second.bytes;
  });
  for (const auto &[family, use] : ArrayRef(largest).take_front(5))
    os << llvm::format("    %-32s %6lld %-8s  %s\n", family.str().c_str(),
                       (long long)use.launches,
                       use.launches == 1 ? "launch" : "launches",
                       formatBytes(use.bytes).c_str());
  SmallVector<std::pair<StringRef, int64_t>> byCount(calls.begin(),
                                                     calls.end());
  llvm::stable_sort(byCount, [](const auto &a, const auto &b) {
    return a.second > b.second;
  });
  os << "  runtime calls     ";
  llvm::interleave(
      byCount, os,
      [&](const auto &call) { os << call.second << " " << call.first; }, ", ");
  os << "\n  (" << addends
     << " of them add a sum's other term, titan-fuse-addends)\n";
  if (device)
    os << "  predicted compute as compiled: "
       << humanSeconds(launchSeconds + callSeconds) << " per step ("
       << humanSeconds(callSeconds) << " in the runtime's calls, "
       << humanSeconds(launchSeconds)
       << " in the launches, timed by the bytes they move; device "
       << device->name << ")\n";
  return success();
}
