//===- LaunchReport.cpp - what a rank's step launches ---------------------===//
//
// The launches section of the plan report: after titan-fuse-kernels, a
// rank's step is runtime calls (GEMMs, attention, norms, the loss, AdamW,
// collectives) and launches of compiled kernels. The compiled kernels are
// memory-bound; the bytes they read and write (each launch's operands and
// results) are what kernel fusion shrinks.
//
//===----------------------------------------------------------------------===//

#include "titan/Report/PlanReport.h"

#include "ReportFormat.h"

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
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

} // namespace

LogicalResult mlir::titan::writeLaunchReport(ModuleOp module,
                                             llvm::raw_ostream &os) {
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!step)
    return module.emitError("the launch report needs @train_step");
  llvm::MapVector<StringRef, FamilyUse> families;
  llvm::SmallDenseSet<StringRef> kernels;
  llvm::MapVector<StringRef, int64_t> calls;
  int64_t addends = 0;
  step.walk([&](Operation *op) {
    if (auto launch = dyn_cast<LaunchOp>(op)) {
      // Its operands and results, as the cost model counts an op's bytes.
      FamilyUse &use = families[getFamily(launch.getKernel())];
      ++use.launches;
      use.bytes += defaultBytesAccessed(op);
      kernels.insert(launch.getKernel());
      return;
    }
    if (!isa<TitanDialect>(op->getDialect()) || isa<ReshapeOp>(op))
      return;
    ++calls[op->getName().getStringRef()];
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
     << " read and written (each launch's operands and results)\n";
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
  return success();
}
