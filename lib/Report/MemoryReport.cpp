//===- MemoryReport.cpp - the memory plan of a rank, for a person ---------===//
//
// The memory section of the plan report and the memory timeline picture,
// both from `@train_step`'s memory plan (titan-plan-memory) and the
// planner's liveness read back (MemoryPlanner::getTimeline): the regions the
// runtime allocates, and what a rank holds where the arena's use peaks,
// parameters, optimizer state, saved activations, gradients, collective
// buffers, scratch and transient values.
//
//===----------------------------------------------------------------------===//

#include "titan/Report/PlanReport.h"

#include "ReportFormat.h"

#include "titan/Codegen/MemoryPlanner.h"
#include "titan/Dialect/ArgRole.h"
#include "titan/Dialect/Provenance.h"
#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::titan;

namespace {

/// The planned step of a module and its liveness.
struct PlannedStep {
  func::FuncOp function;
  DictionaryAttr plan;
  MemoryTimeline timeline;
  /// Bytes of the state region by argument role (parameters, optimizer
  /// state, buffers) and of the inputs.
  int64_t roleBytes[kNumArgRoles] = {};

  int64_t get(StringRef key) const {
    auto value = plan.getAs<IntegerAttr>(key);
    return value ? value.getInt() : 0;
  }
};

/// Reads the plan of `module`'s @train_step, or emits an error.
FailureOr<PlannedStep> readPlannedStep(ModuleOp module) {
  PlannedStep step;
  step.function = module.lookupSymbol<func::FuncOp>("train_step");
  step.plan = step.function ? step.function->getAttrOfType<DictionaryAttr>(
                                  TitanDialect::kMemoryPlanAttrName)
                            : DictionaryAttr();
  if (!step.plan)
    return module.emitError("the memory report needs a planned @train_step "
                            "(titan-plan-memory)");
  SymbolTable symbols(module);
  MemoryPlanner planner(step.function, symbols, /*alignment=*/1);
  planner.analyze();
  step.timeline = planner.getTimeline();
  for (BlockArgument arg : step.function.getArguments())
    if (std::optional<ArgRole> role =
            getArgRole(step.function, arg.getArgNumber()))
      step.roleBytes[static_cast<int>(*role)] +=
          getStaticNumElements(arg.getType()) *
          getElementByteWidth(getElementTypeOrSelf(arg.getType()));
  return step;
}

/// "forward", "backward of layers.3", ...: where `op` is in the step.
std::string describePlace(Operation *op) {
  std::string text(stringifyPhase(getPhase(op).value_or(Phase::Forward)));
  if (std::optional<StringRef> path = getModulePath(op->getLoc()))
    if (StringRef block = getTransformerBlock(*path); !block.empty())
      text += " of " + block.str();
  return text;
}

} // namespace

FailureOr<MemoryBreakdown>
mlir::titan::computeMemoryBreakdown(ModuleOp module) {
  FailureOr<PlannedStep> step = readPlannedStep(module);
  if (failed(step))
    return failure();
  MemoryBreakdown breakdown;
  breakdown.arenaBytes = step->get("arena_bytes");
  breakdown.stateBytes = step->get("state_bytes");
  breakdown.inputBytes = step->get("input_bytes");
  const MemoryTimeline &timeline = step->timeline;
  breakdown.peakPosition = timeline.getPeakPosition();
  breakdown.peakPlace = describePlace(timeline.ops[breakdown.peakPosition]);
  auto add = [&](StringRef what, int64_t bytes, StringRef region) {
    breakdown.atPeak.push_back({what.str(), bytes, region.str()});
  };
  add("parameters", step->roleBytes[static_cast<int>(ArgRole::Param)], "state");
  add("optimizer state", step->roleBytes[static_cast<int>(ArgRole::State)],
      "state");
  if (int64_t copies = step->roleBytes[static_cast<int>(ArgRole::ParamCopy)])
    add("parameter copies", copies, "state");
  if (int64_t buffers = step->roleBytes[static_cast<int>(ArgRole::Buffer)])
    add("buffers", buffers, "state");
  for (unsigned kind = 0; kind < kNumBufferKinds; ++kind)
    add(getBufferKindName(static_cast<BufferKind>(kind)),
        timeline.liveBytes[breakdown.peakPosition][kind], "arena");
  add("inputs", step->roleBytes[static_cast<int>(ArgRole::Input)], "inputs");
  breakdown.peakArenaBytes = timeline.getTotal(breakdown.peakPosition);
  return breakdown;
}

LogicalResult mlir::titan::writeMemoryReport(ModuleOp module,
                                             const DeviceDescription *device,
                                             llvm::raw_ostream &os) {
  FailureOr<MemoryBreakdown> breakdown = computeMemoryBreakdown(module);
  if (failed(breakdown))
    return failure();
  auto plan =
      module.lookupSymbol<func::FuncOp>("train_step")
          ->getAttrOfType<DictionaryAttr>(TitanDialect::kMemoryPlanAttrName);
  auto get = [&](StringRef key) {
    auto value = plan.getAs<IntegerAttr>(key);
    return value ? value.getInt() : 0;
  };
  auto peakOp = plan.getAs<StringAttr>("peak_op");
  int64_t arena = breakdown->arenaBytes, state = breakdown->stateBytes,
          inputs = breakdown->inputBytes;
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
  os << "      parameters, optimizer moments, buffers and the forward's "
        "copies of the parameters, updated in place\n";
  os << llvm::format("  %-8s %14lld B  %s\n", "inputs", (long long)inputs,
                     formatBytes(inputs).c_str());
  os << "      this rank's part of the batch, the learning rate, the step\n";
  int64_t total = breakdown->getTotalBytes();
  os << llvm::format("  %-8s %14lld B  %s\n", "total", (long long)total,
                     formatBytes(total).c_str());
  if (device)
    os << llvm::formatv(
        "      {0:F1}% of the {1:F1} GiB of one {2}{3}\n",
        100.0 * double(total) / device->memoryBytes,
        device->memoryBytes / double(1ull << 30), device->name,
        double(total) > device->memoryBytes ? ": it does not fit" : "");

  // What a rank holds at the peak.
  os << "  at the peak, op #" << breakdown->peakPosition << " ("
     << breakdown->peakPlace << "), a rank holds:\n";
  int64_t held = 0;
  for (const auto &[what, bytes, region] : breakdown->atPeak) {
    held += bytes;
    os << llvm::format("    %-20s %14lld B  %-10s  %s\n", what.c_str(),
                       (long long)bytes, formatBytes(bytes).c_str(),
                       region.c_str());
  }
  os << llvm::format("    %-20s %14lld B  %s\n", "total", (long long)held,
                     formatBytes(held).c_str());
  os << "    (saved activations: forward values the backward reads; "
        "gradients: backward values the optimizer reads; the arena is "
     << formatBytes(arena - breakdown->peakArenaBytes)
     << " larger than its peak use: alignment and fragmentation)\n";
  return success();
}

LogicalResult mlir::titan::writeMemoryPlot(ModuleOp module,
                                           llvm::raw_ostream &os) {
  FailureOr<PlannedStep> step = readPlannedStep(module);
  if (failed(step))
    return failure();
  const MemoryTimeline &timeline = step->timeline;
  int64_t numOps = timeline.liveBytes.size();
  int64_t state = step->get("state_bytes") + step->get("input_bytes");
  int64_t arena = step->get("arena_bytes");
  int64_t peak = timeline.getPeakPosition();

  // The picture: a stacked area per kind over the ops, on top of the state
  // and inputs. At most kMaxColumns columns: each shows the op of its span
  // where the arena's use is largest, so the peak stays visible.
  constexpr int64_t kMaxColumns = 1200;
  constexpr double kWidth = 960, kHeight = 420, kLeft = 80, kTop = 40,
                   kPlotWidth = 700, kPlotHeight = 320;
  int64_t columns = std::min<int64_t>(numOps, kMaxColumns);
  std::vector<int64_t> picked(columns);
  for (int64_t column = 0; column < columns; ++column) {
    int64_t begin = column * numOps / columns,
            end = std::max(begin + 1, (column + 1) * numOps / columns);
    int64_t best = begin;
    for (int64_t position = begin; position < end; ++position)
      if (timeline.getTotal(position) > timeline.getTotal(best))
        best = position;
    picked[column] = best;
  }
  double maxBytes = double(state + arena) * 1.05;
  auto x = [&](double column) {
    return kLeft + kPlotWidth * column / double(std::max<int64_t>(1, columns));
  };
  auto y = [&](double bytes) {
    return kTop + kPlotHeight * (1 - bytes / maxBytes);
  };
  auto xOfPosition = [&](int64_t position) {
    return kLeft + kPlotWidth * double(position) / double(numOps);
  };

  os << llvm::formatv(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
      "height=\"{1}\" font-family=\"sans-serif\" font-size=\"12\">\n",
      kWidth, kHeight);
  os << llvm::formatv("<text x=\"{0}\" y=\"20\" font-size=\"14\">Memory of "
                      "one rank over the training step (titan-plan-memory)"
                      "</text>\n",
                      kLeft);
  // Layers from the bottom: state and inputs, then the arena's kinds.
  const char *colors[kNumBufferKinds + 1] = {"#4e79a7", "#edc948", "#f28e2b",
                                             "#e15759", "#76b7b2", "#59a14f",
                                             "#bab0ac"};
  auto nameOf = [](unsigned entry) -> StringRef {
    return entry ? getBufferKindName(static_cast<BufferKind>(entry - 1))
                 : "state and inputs";
  };
  std::vector<double> below(columns, double(state));
  os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" "
                      "fill=\"{4}\"><title>state and inputs: {5}</title>"
                      "</rect>\n",
                      kLeft, y(state), kPlotWidth, y(0) - y(state), colors[0],
                      formatBytes(state));
  for (unsigned kind = 0; kind < kNumBufferKinds; ++kind) {
    std::string top, bottom;
    for (int64_t column = 0; column < columns; ++column) {
      double low = below[column];
      double high = low + double(timeline.liveBytes[picked[column]][kind]);
      for (double edge : {double(column), double(column + 1)}) {
        top += llvm::formatv("{0:F1},{1:F1} ", x(edge), y(high)).str();
        bottom =
            llvm::formatv("{0:F1},{1:F1} ", x(edge), y(low)).str() + bottom;
      }
      below[column] = high;
    }
    os << llvm::formatv("<polygon points=\"{0}{1}\" fill=\"{2}\"><title>{3}"
                        "</title></polygon>\n",
                        top, bottom, colors[kind + 1], nameOf(kind + 1));
  }
  // The arena's size, the peak and the phases.
  os << llvm::formatv("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:F1}\" "
                      "y2=\"{2:F1}\" stroke=\"black\" "
                      "stroke-dasharray=\"6,3\"/>\n",
                      kLeft, kLeft + kPlotWidth, y(state + arena));
  os << llvm::formatv("<text x=\"{0}\" y=\"{1:F1}\" text-anchor=\"end\">"
                      "planned {2}</text>\n",
                      kLeft + kPlotWidth, y(state + arena) - 4,
                      formatBytes(state + arena));
  double peakX = xOfPosition(peak);
  double peakY = y(double(state + timeline.getTotal(peak)));
  os << llvm::formatv("<circle cx=\"{0:F1}\" cy=\"{1:F1}\" r=\"4\" "
                      "fill=\"black\"/>\n<text x=\"{0:F1}\" y=\"{2:F1}\" "
                      "text-anchor=\"middle\">peak {3} at op #{4} ({5})"
                      "</text>\n",
                      peakX, peakY, peakY - 10,
                      formatBytes(state + timeline.getTotal(peak)), peak,
                      describePlace(timeline.ops[peak]));
  for (auto [start, name] : {std::pair{timeline.backwardStart, "backward"},
                             std::pair{timeline.optimizerStart, "optimizer"}}) {
    if (start >= numOps)
      continue;
    double at = xOfPosition(start);
    os << llvm::formatv("<line x1=\"{0:F1}\" x2=\"{0:F1}\" y1=\"{1}\" "
                        "y2=\"{2}\" stroke=\"gray\"/>\n<text x=\"{3:F1}\" "
                        "y=\"{4}\" fill=\"gray\">{5}</text>\n",
                        at, kTop, kTop + kPlotHeight, at + 3,
                        kTop + kPlotHeight - 4, name);
  }
  // Axes and legend.
  os << llvm::formatv("<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" "
                      "stroke=\"black\"/>\n<line x1=\"{0}\" x2=\"{3}\" "
                      "y1=\"{2}\" y2=\"{2}\" stroke=\"black\"/>\n",
                      kLeft, kTop, kTop + kPlotHeight, kLeft + kPlotWidth);
  for (int tick = 0; tick <= 4; ++tick) {
    double bytes = maxBytes * tick / 4;
    os << llvm::formatv("<text x=\"{0}\" y=\"{1:F1}\" text-anchor=\"end\">"
                        "{2}</text>\n",
                        kLeft - 6, y(bytes) + 4, formatBytes(int64_t(bytes)));
  }
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\">ops "
                      "of the step in program order ({2})</text>\n",
                      kLeft + kPlotWidth / 2, kTop + kPlotHeight + 24, numOps);
  for (unsigned entry = 0; entry <= kNumBufferKinds; ++entry) {
    double top = kTop + 20 * entry;
    os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"12\" height=\"12\" "
                        "fill=\"{2}\"/>\n<text x=\"{3}\" y=\"{4}\">{5}"
                        "</text>\n",
                        kLeft + kPlotWidth + 20, top, colors[entry],
                        kLeft + kPlotWidth + 38, top + 11, nameOf(entry));
  }
  os << "</svg>\n";
  return success();
}
