//===- Phase.h - which part of a training step an op belongs to -*- C++ -*-===//
//
// titan-build-train-step stamps every op of @train_step with its phase: the
// forward (up to the loss), the backward (the VJPs) or the optimizer
// (clipping, AdamW). The stamp lives in the op's location, as a FusedLoc
// whose metadata names the phase ("titan.phase.backward"), not in an
// attribute: it is a fact about where an op came from, so it must not keep
// CSE from merging a backward op with the identical forward one, and ops
// built from an op's location (partitions, collectives) inherit it. Reports
// and later passes (recompute selection, pipeline partitioning) read the
// phase from the IR instead of guessing it.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_PHASE_H
#define TITAN_DIALECT_PHASE_H

#include "titan/Dialect/TitanDialect.h"

#include "mlir/IR/Location.h"
#include "llvm/ADT/StringSwitch.h"

#include <optional>

namespace mlir::titan {

/// The part of a training step an op belongs to.
enum class Phase { Forward, Backward, Optimizer };

/// The spelling of `phase` in `titan.phase`: "forward", "backward" or
/// "optimizer".
inline StringRef stringifyPhase(Phase phase) {
  switch (phase) {
  case Phase::Forward:
    return "forward";
  case Phase::Backward:
    return "backward";
  case Phase::Optimizer:
    return "optimizer";
  }
  llvm_unreachable("unknown phase");
}

/// The phase spelled `name` (the inverse of stringifyPhase), or nullopt.
inline std::optional<Phase> symbolizePhase(StringRef name) {
  return llvm::StringSwitch<std::optional<Phase>>(name)
      .Case("forward", Phase::Forward)
      .Case("backward", Phase::Backward)
      .Case("optimizer", Phase::Optimizer)
      .Default(std::nullopt);
}

/// The prefix of the location metadata that names a phase.
inline constexpr llvm::StringLiteral kPhaseLocPrefix = "titan.phase.";

/// The phase stamped on `op`'s location (the first one found when locations
/// were fused), if any.
inline std::optional<Phase> getPhase(Operation *op) {
  std::optional<Phase> phase;
  op->getLoc()->walk([&](Location loc) {
    auto fused = dyn_cast<FusedLoc>(loc);
    auto name = fused ? dyn_cast_or_null<StringAttr>(fused.getMetadata())
                      : StringAttr();
    if (!name || !name.getValue().starts_with(kPhaseLocPrefix))
      return WalkResult::advance();
    phase = symbolizePhase(name.getValue().drop_front(kPhaseLocPrefix.size()));
    return WalkResult::interrupt();
  });
  return phase;
}

/// Stamps `op`'s location with `phase`.
inline void setPhase(Operation *op, Phase phase) {
  if (getPhase(op) == phase)
    return;
  MLIRContext *context = op->getContext();
  op->setLoc(FusedLoc::get(
      context, {op->getLoc()},
      StringAttr::get(context, kPhaseLocPrefix + stringifyPhase(phase))));
}

/// Stamps `op` with the phase of `from`, if it has one.
inline void copyPhase(Operation *from, Operation *op) {
  if (std::optional<Phase> phase = getPhase(from))
    setPhase(op, *phase);
}

} // namespace mlir::titan

#endif // TITAN_DIALECT_PHASE_H
