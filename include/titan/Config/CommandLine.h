//===- CommandLine.h - config arguments, titan's and torchtitan's -*- C++
//-*-===//
//
// The config part of a command line, in titan's syntax (--config FILE,
// --set section.key=value) and in torchtitan's (--job.config_file FILE,
// --section.key VALUE, --section.key=VALUE, a boolean as a bare flag
// --section.key or its negation --section.no-key, a list as A,B,C, a list
// of lists as one A,B,C argument per inner list, hyphens and underscores
// alike in names), so that a torchtitan command line works unchanged.
// Tools hand the remaining arguments to their own parser (docs/config.md).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CONFIG_COMMANDLINE_H
#define TITAN_CONFIG_COMMANDLINE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir::titan {

/// The config arguments of a command line.
struct ConfigCommandLine {
  /// --config FILE or --job.config_file FILE; empty if neither.
  std::string configFile;
  /// "section.key=value" in command-line order (--set's and torchtitan's),
  /// as parseTrainConfig takes them: strings quoted, lists as TOML arrays.
  std::vector<std::string> overrides;
  /// Every other argument, in order, argv[0] first; "--" and everything
  /// after it are left here untouched.
  std::vector<std::string> remaining;
};

/// Splits `argv` (argv[0] is the program) into the config file, the
/// overrides and the rest. An argument "--a.b" (or "--a.b=v") is a config
/// key; whether a bare one is a boolean flag or takes the next argument as
/// its value depends on the key's type in titan's schema and torchtitan's
/// (lib/Config/TorchtitanKeys.h); a list of lists
/// (parallelism.module_fqns_per_model_part) takes every following argument
/// up to the next one that starts with '-', as tyro does. Errors name the
/// argument: an unknown key (with "did you mean"), a missing value, a negated
/// non-boolean, two different config files.
llvm::Expected<ConfigCommandLine>
parseConfigCommandLine(llvm::ArrayRef<const char *> argv);

} // namespace mlir::titan

#endif // TITAN_CONFIG_COMMANDLINE_H
