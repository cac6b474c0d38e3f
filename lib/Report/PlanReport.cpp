//===- PlanReport.cpp - human-readable parallel plan report ---------------===//

#include "titan/Report/PlanReport.h"

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>
#include <map>

using namespace mlir;
using namespace mlir::titan;

namespace {

/// Bytes of a static tensor type.
int64_t bytesOf(Type type) {
  return getStaticNumElements(type) *
         getElementByteWidth(getElementTypeOrSelf(type));
}

/// Bytes one rank sends in a collective (ring algorithms), and the group.
std::pair<double, int64_t> sentBytes(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::pair<double, int64_t>>(op)
      .Case([](AllGatherOp g) {
        int64_t n = g.getGroupSize();
        return std::pair{double(n - 1) / n * bytesOf(g.getType()), n};
      })
      .Case([](ReduceScatterOp r) {
        int64_t n = r.getGroupSize();
        return std::pair{double(n - 1) / n * bytesOf(r.getInput().getType()),
                         n};
      })
      .Case([](AllReduceOp r) {
        int64_t n = r.getGroupSize();
        return std::pair{2.0 * (n - 1) / n * bytesOf(r.getType()), n};
      })
      .Case([](AllToAllOp a) {
        int64_t n = a.getGroupSize();
        return std::pair{double(n - 1) / n * bytesOf(a.getInput().getType()),
                         n};
      })
      .Case([](BroadcastOp b) {
        return std::pair{double(bytesOf(b.getType())), b.getGroupSize()};
      })
      .Default([](Operation *) {
        return std::pair{0.0, int64_t(1)};
      });
}

/// "1.5 MB" style.
std::string humanBytes(double bytes) {
  const char *units[] = {"B", "KB", "MB", "GB", "TB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  return llvm::formatv("{0:F1} {1}", bytes, units[unit]).str();
}

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string text = "[";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(shape, os);
  os << "]";
  return text;
}

/// The parameter a collective moves, when its operand comes straight from a
/// function argument (an FSDP all-gather) or its result goes straight to a
/// returned value named after one (a gradient reduce-scatter).
std::string parameterOf(Operation *op, func::FuncOp function) {
  auto nameOfArg = [&](Value value) -> std::string {
    auto arg = dyn_cast<BlockArgument>(value);
    if (!arg)
      return "";
    auto name = function.getArgAttrOfType<StringAttr>(
        arg.getArgNumber(), TitanDialect::kNameAttrName);
    return name ? name.getValue().str() : "";
  };
  for (Value operand : op->getOperands())
    if (std::string name = nameOfArg(operand); !name.empty())
      return name;
  return "";
}

/// "layers.3" for "layers.3.attention.wq.weight", else "".
std::string blockOf(StringRef fqn) {
  if (!fqn.starts_with("layers."))
    return "";
  auto [index, rest] = fqn.drop_front(7).split('.');
  return ("layers." + index).str();
}

} // namespace

LogicalResult mlir::titan::writePlanReport(ModuleOp module,
                                           llvm::raw_ostream &os) {
  auto function = module.lookupSymbol<func::FuncOp>("train_step");
  MeshOp mesh;
  for (MeshOp m : module.getOps<MeshOp>())
    mesh = m;
  if (!function || !mesh)
    return emitError(module.getLoc())
           << "the plan report needs a partitioned @train_step "
              "(titan-compile --emit=spmd)";

  os << "== titan plan report ==\nmesh @" << mesh.getSymName() << ": ";
  llvm::interleave(
      llvm::zip(mesh.getAxisNames(), mesh.getAxisSizes()), os,
      [&](auto axis) {
        os << cast<StringAttr>(std::get<0>(axis)).getValue() << "="
           << std::get<1>(axis);
      },
      " x ");
  os << " (" << mesh.getNumDevices() << " ranks)\n\n";

  // Parameters.
  os << llvm::formatv("{0,-42} {1,-16} {2,-22} {3}\n", "parameter",
                      "global shape", "placements", "per rank");
  int64_t paramBytes = 0, localBytes = 0;
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    auto role =
        function.getArgAttrOfType<StringAttr>(i, TitanDialect::kRoleAttrName);
    if (!role || role.getValue() != "param")
      continue;
    auto name =
        function.getArgAttrOfType<StringAttr>(i, TitanDialect::kNameAttrName);
    auto placements = function.getArgAttrOfType<PlacementsAttr>(
        i, TitanDialect::kPlacementsAttrName);
    auto local = cast<RankedTensorType>(function.getArgument(i).getType());
    SmallVector<int64_t> global(local.getShape());
    std::string text = "[";
    if (placements) {
      for (auto [axis, p] : llvm::enumerate(placements.getPlacements()))
        if (p.isShard())
          global[p.getDim()] *= mesh.getAxisSizes()[axis];
      llvm::raw_string_ostream ts(text);
      llvm::interleaveComma(placements.getPlacements(), ts,
                            [&](const Placement &p) { ts << p.str(); });
    }
    text += "]";
    int64_t elements = 1;
    for (int64_t d : global)
      elements *= d;
    paramBytes += elements * getElementByteWidth(local.getElementType());
    localBytes += bytesOf(local);
    os << llvm::formatv("{0,-42} {1,-16} {2,-22} {3}\n",
                        name ? name.getValue() : "?", shapeString(global), text,
                        shapeString(local.getShape()));
  }
  os << llvm::formatv("parameters: {0} in all, {1} per rank\n\n",
                      humanBytes(paramBytes), humanBytes(localBytes));

  // Collectives.
  struct Tally {
    int64_t count = 0;
    double bytes = 0;
  };
  std::map<std::string, Tally> byKind;
  llvm::MapVector<std::string, Tally, llvm::StringMap<unsigned>> byBlock;
  Tally total;
  function.walk([&](Operation *op) {
    if (!isa<AllGatherOp, ReduceScatterOp, AllReduceOp, AllToAllOp,
             BroadcastOp>(op))
      return;
    auto [bytes, group] = sentBytes(op);
    std::string axes;
    if (auto named = op->getAttrOfType<ArrayAttr>("axes"))
      for (Attribute axis : named)
        axes +=
            (axes.empty() ? "" : ",") + cast<StringAttr>(axis).getValue().str();
    std::string kind = op->getName().stripDialect().str() + " [" + axes + "]";
    byKind[kind].count++;
    byKind[kind].bytes += bytes;
    total.count++;
    total.bytes += bytes;
    std::string param = parameterOf(op, function);
    std::string block = blockOf(param);
    Tally &tally = byBlock[block.empty() ? (param.empty() ? "activations, "
                                                            "gradients, loss"
                                                          : "other parameters")
                                         : block];
    tally.count++;
    tally.bytes += bytes;
  });
  os << "collectives one rank runs per step (bytes sent, ring estimates):\n";
  os << llvm::formatv("  {0,-32} {1,6} {2,12}\n", "kind [mesh axes]", "count",
                      "sent");
  for (const auto &[kind, tally] : byKind)
    os << llvm::formatv("  {0,-32} {1,6} {2,12}\n", kind, tally.count,
                        humanBytes(tally.bytes));
  os << llvm::formatv("  {0,-32} {1,6} {2,12}\n\n", "total", total.count,
                      humanBytes(total.bytes));
  os << "collectives that move parameters, per transformer block:\n";
  // Blocks in layer order, then the rest.
  auto layerIndex = [](StringRef block) {
    int64_t index;
    if (block.consume_front("layers.") && !block.getAsInteger(10, index))
      return index;
    return std::numeric_limits<int64_t>::max();
  };
  SmallVector<std::pair<std::string, Tally>> blocks(byBlock.begin(),
                                                    byBlock.end());
  llvm::stable_sort(blocks, [&](const auto &a, const auto &b) {
    return layerIndex(a.first) < layerIndex(b.first);
  });
  for (const auto &[block, tally] : blocks)
    os << llvm::formatv("  {0,-32} {1,6} {2,12}\n", block, tally.count,
                        humanBytes(tally.bytes));
  return success();
}
