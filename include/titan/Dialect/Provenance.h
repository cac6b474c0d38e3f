//===- Provenance.h - where an op of a training step came from --*- C++ -*-===//
//
// Two facts about every op of @train_step, recorded in its location:
//
// - its phase: titan-build-train-step stamps the forward (up to the loss),
//   the backward (the VJPs) and the optimizer (clipping, AdamW);
// - its module path: the importer records the path of the module whose
//   method an op was inlined from ("layers.3.attention.wq"); VJPs are built
//   at their forward op's location, and titan-build-train-step stamps each
//   parameter's optimizer ops with the parameter's module. The transformer
//   block of an op is its module path up to the first numeric component
//   ("layers.3").
//
// Each fact is a FusedLoc whose metadata is a string with a fixed prefix
// ("titan.phase.backward", "titan.module.layers.3.attention.wq"), not an
// attribute: it says where an op came from, so it must not keep CSE from
// merging a backward op with the identical forward one, and ops built at an
// op's location (VJPs, partitions, collectives) inherit it. The plan report,
// and later recompute selection and pipeline partitioning, read these facts
// from the IR instead of guessing them.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_PROVENANCE_H
#define TITAN_DIALECT_PROVENANCE_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringSwitch.h"

#include <optional>

namespace mlir::titan {

/// The part of a training step an op belongs to.
enum class Phase { Forward, Backward, Optimizer };

/// The spelling of `phase` in its stamp: "forward", "backward" or
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
/// The prefix of the location metadata that names a module path.
inline constexpr llvm::StringLiteral kModuleLocPrefix = "titan.module.";

/// The value of the first stamp in `loc` whose metadata starts with
/// `prefix` (outermost first: a later stamp overrides an earlier one), with
/// the prefix dropped.
inline std::optional<StringRef> findLocStamp(Location loc, StringRef prefix) {
  std::optional<StringRef> value;
  loc->walk([&](Location nested) {
    auto fused = dyn_cast<FusedLoc>(nested);
    auto name = fused ? dyn_cast_or_null<StringAttr>(fused.getMetadata())
                      : StringAttr();
    if (!name || !name.getValue().starts_with(prefix))
      return WalkResult::advance();
    value = name.getValue().drop_front(prefix.size());
    return WalkResult::interrupt();
  });
  return value;
}

/// `loc` stamped with `prefix` + `value`, unless that stamp is already the
/// one it reads.
inline Location addLocStamp(Location loc, StringRef prefix, StringRef value) {
  if (findLocStamp(loc, prefix) == value)
    return loc;
  MLIRContext *context = loc->getContext();
  return FusedLoc::get(context, {loc},
                       StringAttr::get(context, prefix + value));
}

/// The phase stamped on `op`'s location, if any.
inline std::optional<Phase> getPhase(Operation *op) {
  if (std::optional<StringRef> name =
          findLocStamp(op->getLoc(), kPhaseLocPrefix))
    return symbolizePhase(*name);
  return std::nullopt;
}

/// Stamps `op`'s location with `phase`.
inline void setPhase(Operation *op, Phase phase) {
  op->setLoc(addLocStamp(op->getLoc(), kPhaseLocPrefix, stringifyPhase(phase)));
}

/// The path of the module `loc` was inlined from ("layers.3.attention.wq"),
/// if recorded; ops of the model's own forward have none.
inline std::optional<StringRef> getModulePath(Location loc) {
  return findLocStamp(loc, kModuleLocPrefix);
}

/// `loc` stamped with module path `path`.
inline Location addModulePath(Location loc, StringRef path) {
  return addLocStamp(loc, kModuleLocPrefix, path);
}

/// Stamps `op` with the phase of `from`, if it has one.
inline void copyPhase(Operation *from, Operation *op) {
  if (std::optional<Phase> phase = getPhase(from))
    setPhase(op, *phase);
}

/// Stamps `op` with the module path of `from`, if it has one.
inline void copyModulePath(Operation *from, Operation *op) {
  if (std::optional<StringRef> path = getModulePath(from->getLoc()))
    op->setLoc(addModulePath(op->getLoc(), *path));
}

/// The transformer block of a module path or parameter FQN: the path up to
/// its first numeric component ("layers.3" of "layers.3.attention.wq" and
/// of "layers.3", "transformer.h.3" of "transformer.h.3.attn.c_attn.weight"),
/// or "" when it lies in no block.
inline StringRef getTransformerBlock(StringRef path) {
  for (size_t begin = 0; begin < path.size();) {
    size_t end = std::min(path.find('.', begin), path.size());
    unsigned index;
    if (!path.slice(begin, end).getAsInteger(10, index))
      return path.take_front(end);
    begin = end + 1;
  }
  return "";
}

} // namespace mlir::titan

#endif // TITAN_DIALECT_PROVENANCE_H
