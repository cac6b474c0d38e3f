//===- ArgRole.h - what a function argument is (titan.role) -----*- C++ -*-===//
//
// The arguments of titan's programs carry `titan.role`: a parameter, an
// optimizer state, a buffer or an input. Passes, reports and tools read and
// write it through these helpers, never through string literals.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_ARGROLE_H
#define TITAN_DIALECT_ARGROLE_H

#include "titan/Dialect/FunctionAttributes.h"
#include "titan/Dialect/TitanDialect.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringSwitch.h"

#include <optional>

namespace mlir::titan {

/// What a function argument is.
enum class ArgRole {
  /// A trainable parameter.
  Param,
  /// Optimizer state (AdamW's moments).
  State,
  /// Not trained, e.g. a RoPE table.
  Buffer,
  /// Data: tokens, labels, the learning rate, the step.
  Input,
  /// A parameter rounded to the narrower float type the forward computes
  /// in, which the optimizer writes with the parameter
  /// (titan-keep-param-copies); not checkpointed: the runtime fills it from
  /// the parameter whenever it loads one.
  ParamCopy,
};

/// The number of argument roles.
inline constexpr unsigned kNumArgRoles = 5;

/// The spelling of `role` in `titan.role`: "param", "state", "buffer",
/// "input" or "param_copy".
inline StringRef stringifyArgRole(ArgRole role) {
  switch (role) {
  case ArgRole::Param:
    return "param";
  case ArgRole::State:
    return "state";
  case ArgRole::Buffer:
    return "buffer";
  case ArgRole::Input:
    return "input";
  case ArgRole::ParamCopy:
    return "param_copy";
  }
  llvm_unreachable("unknown argument role");
}

/// The role spelled `name` (the inverse of stringifyArgRole), or nullopt.
inline std::optional<ArgRole> symbolizeArgRole(StringRef name) {
  return llvm::StringSwitch<std::optional<ArgRole>>(name)
      .Case("param", ArgRole::Param)
      .Case("state", ArgRole::State)
      .Case("buffer", ArgRole::Buffer)
      .Case("input", ArgRole::Input)
      .Case("param_copy", ArgRole::ParamCopy)
      .Default(std::nullopt);
}

/// The `titan.role` attribute of `role`.
inline StringAttr getArgRoleAttr(MLIRContext *context, ArgRole role) {
  return StringAttr::get(context, stringifyArgRole(role));
}

/// The role of argument `index` of `function`, or nullopt when it has none.
inline std::optional<ArgRole> getArgRole(FunctionOpInterface function,
                                         unsigned index) {
  auto role =
      function.getArgAttrOfType<StringAttr>(index, TitanDialect::kRoleAttrName);
  if (!role)
    return std::nullopt;
  return symbolizeArgRole(role.getValue());
}

/// Sets the role of each argument i of `function` to `role(i)`, rebuilding
/// the argument attributes once (see setEachArgAttr).
inline void setEachArgRole(FunctionOpInterface function,
                           function_ref<ArgRole(unsigned)> role) {
  MLIRContext *context = function.getContext();
  setEachArgAttr(function, TitanDialect::kRoleAttrName,
                 [&](unsigned i) { return getArgRoleAttr(context, role(i)); });
}

/// The values @train_step names after a parameter `<fqn>`: its arguments
/// (the parameter, its AdamW moments, its narrow copy) and its results (the
/// updated parameter, moments and copy, the gradient with --emit-grads).
enum class ParamSlot {
  /// The parameter, `<fqn>` (an argument).
  Param,
  /// AdamW's first moment, `exp_avg.<fqn>` (an argument and a result).
  ExpAvg,
  /// AdamW's second moment, `exp_avg_sq.<fqn>` (an argument and a result).
  ExpAvgSq,
  /// The updated parameter, `param.<fqn>` (a result).
  Updated,
  /// The gradient, `grad.<fqn>` (a result).
  Grad,
  /// The parameter in the forward's narrower float type, `copy.<fqn>` (an
  /// argument and a result of a rank's program; titan-keep-param-copies).
  Copy,
};

/// The prefix of `slot`'s names: "", "exp_avg.", "exp_avg_sq.", "param.",
/// "grad." or "copy.".
inline StringRef getParamSlotPrefix(ParamSlot slot) {
  switch (slot) {
  case ParamSlot::Param:
    return "";
  case ParamSlot::ExpAvg:
    return "exp_avg.";
  case ParamSlot::ExpAvgSq:
    return "exp_avg_sq.";
  case ParamSlot::Updated:
    return "param.";
  case ParamSlot::Grad:
    return "grad.";
  case ParamSlot::Copy:
    return "copy.";
  }
  llvm_unreachable("unknown parameter slot");
}

/// The name of `slot` of parameter `fqn` ("exp_avg.layers.0.wq.weight").
inline std::string getParamSlotName(ParamSlot slot, StringRef fqn) {
  return (getParamSlotPrefix(slot) + fqn).str();
}

/// The slots whose names have a prefix, in the order they are tried.
inline constexpr ParamSlot kPrefixedParamSlots[] = {
    ParamSlot::ExpAvgSq, ParamSlot::ExpAvg, ParamSlot::Updated, ParamSlot::Grad,
    ParamSlot::Copy};

/// The slot and parameter FQN that `name` names, if it has a slot's prefix
/// ("exp_avg_sq.w" is (ExpAvgSq, "w")); a name without one is the
/// parameter's own only if it is one, which the caller knows. The FQN is a
/// view into `name`, which must outlive it.
inline std::optional<std::pair<ParamSlot, StringRef>>
parsePrefixedParamSlot(StringRef name) {
  for (ParamSlot slot : kPrefixedParamSlots)
    if (name.starts_with(getParamSlotPrefix(slot)))
      return std::pair(slot, name.drop_front(getParamSlotPrefix(slot).size()));
  return std::nullopt;
}

} // namespace mlir::titan

#endif // TITAN_DIALECT_ARGROLE_H
