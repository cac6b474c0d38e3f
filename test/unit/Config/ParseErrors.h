//===- ParseErrors.h - what a config parse says, for the tests --*- C++ -*-===//

#ifndef TITAN_TEST_UNIT_CONFIG_PARSEERRORS_H
#define TITAN_TEST_UNIT_CONFIG_PARSEERRORS_H

#include "titan/Config/TrainConfig.h"

#include <string>

namespace mlir::titan {

/// The message of a failed parse of `text` (named cfg.toml) with
/// `overrides`, or "" when it parses.
inline std::string errorOf(llvm::StringRef text,
                           llvm::ArrayRef<std::string> overrides = {}) {
  llvm::Expected<TrainConfig> config =
      parseTrainConfig(text, "cfg.toml", overrides);
  if (config)
    return "";
  return llvm::toString(config.takeError());
}

} // namespace mlir::titan

#endif // TITAN_TEST_UNIT_CONFIG_PARSEERRORS_H
