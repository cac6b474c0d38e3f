//===- Placement.cpp - DTensor placements ---------------------------------===//

#include "titan/Placement/Placement.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir::titan;

llvm::StringRef mlir::titan::stringifyReduce(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
    return "sum";
  case ReduceKind::Avg:
    return "avg";
  case ReduceKind::Max:
    return "max";
  case ReduceKind::Min:
    return "min";
  }
  llvm_unreachable("unknown ReduceKind");
}

std::optional<ReduceKind> mlir::titan::parseReduce(llvm::StringRef text) {
  return llvm::StringSwitch<std::optional<ReduceKind>>(text)
      .Case("sum", ReduceKind::Sum)
      .Case("avg", ReduceKind::Avg)
      .Case("max", ReduceKind::Max)
      .Case("min", ReduceKind::Min)
      .Default(std::nullopt);
}

std::string Placement::str() const {
  switch (kind) {
  case Kind::Replicate:
    return "R";
  case Kind::Shard:
    return "S(" + std::to_string(dim) + ")";
  case Kind::Partial:
    return "P(" + stringifyReduce(reduce).str() + ")";
  }
  llvm_unreachable("unknown Placement kind");
}

std::optional<Placement> Placement::parse(llvm::StringRef text) {
  text = text.trim();
  if (text == "R")
    return replicate();
  if (!text.consume_back(")"))
    return std::nullopt;
  if (text.consume_front("S(")) {
    int64_t dim;
    if (text.trim().getAsInteger(10, dim) || dim < 0)
      return std::nullopt;
    return shard(dim);
  }
  if (text.consume_front("P(")) {
    if (std::optional<ReduceKind> op = parseReduce(text.trim()))
      return partial(*op);
  }
  return std::nullopt;
}

std::string
mlir::titan::formatPlacements(llvm::ArrayRef<Placement> placements) {
  std::string text = "[";
  for (auto [index, placement] : llvm::enumerate(placements))
    text += (index ? ", " : "") + placement.str();
  return text + "]";
}

std::optional<ReduceKind>
mlir::titan::getPartialKind(llvm::ArrayRef<Placement> placements) {
  for (const Placement &p : placements)
    if (p.isPartial())
      return p.getReduce();
  return std::nullopt;
}
