//===- MemoryReport.cpp - the memory plan of a rank, for a person ---------===//

#include "titan/Report/PlanReport.h"

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using namespace mlir::titan;

/// "12.34 MiB", "2.0 KiB", "512 B".
static std::string formatBytes(int64_t bytes) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (bytes >= (int64_t(1) << 30))
    os << llvm::format("%.2f GiB", bytes / double(int64_t(1) << 30));
  else if (bytes >= (1 << 20))
    os << llvm::format("%.2f MiB", bytes / double(1 << 20));
  else if (bytes >= (1 << 10))
    os << llvm::format("%.2f KiB", bytes / double(1 << 10));
  else
    os << bytes << " B";
  return text;
}

LogicalResult mlir::titan::writeMemoryReport(ModuleOp module,
                                             llvm::raw_ostream &os) {
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  auto plan = step ? step->getAttrOfType<DictionaryAttr>(
                         TitanDialect::kMemoryPlanAttrName)
                   : DictionaryAttr();
  if (!plan)
    return module.emitError("the memory report needs a planned @train_step "
                            "(titan-plan-memory)");
  auto get = [&](StringRef key) {
    auto value = plan.getAs<IntegerAttr>(key);
    return value ? value.getInt() : 0;
  };
  auto peakOp = plan.getAs<StringAttr>("peak_op");
  int64_t arena = get("arena_bytes"), state = get("state_bytes"),
          inputs = get("input_bytes");
  os << "\n== Memory per rank (titan-plan-memory; the runtime allocates "
        "exactly this) ==\n";
  os << llvm::format("  %-8s %14lld B  %s\n", "arena", (long long)arena,
                     formatBytes(arena).c_str());
  os << "      activations, gradients, collective buffers and kernel "
        "scratch, reused over time;\n      "
     << formatBytes(get("peak_live_bytes")) << " live at the peak, op #"
     << get("peak_op_index") << " ("
     << (peakOp ? peakOp.getValue() : StringRef("?")) << "), of which "
     << formatBytes(get("peak_collective_bytes"))
     << " are collective buffers\n";
  os << llvm::format("  %-8s %14lld B  %s\n", "state", (long long)state,
                     formatBytes(state).c_str());
  os << "      parameters, optimizer moments and buffers, updated in place\n";
  os << llvm::format("  %-8s %14lld B  %s\n", "inputs", (long long)inputs,
                     formatBytes(inputs).c_str());
  os << "      this rank's part of the batch, the learning rate, the step\n";
  os << llvm::format("  %-8s %14lld B  %s\n", "total",
                     (long long)(arena + state + inputs),
                     formatBytes(arena + state + inputs).c_str());
  return success();
}
