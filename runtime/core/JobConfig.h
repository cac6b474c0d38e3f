//===- JobConfig.h - the config a rank runs its job by ----------*- C++ -*-===//
//
// titan-compile writes the config an executable was compiled with as
// OUT/config.toml. A rank reads it (or the file `--job.config_file` names)
// with the command line's overrides in torchtitan's syntax
// (`--training.steps 100`), and runs the job by it: steps, learning-rate
// schedule, data, checkpoints, metrics. What was compiled into the program
// (the model, the batch and sequence, the parallel layout, activation
// checkpointing, the optimizer's constants) cannot change at run time: a
// difference is an error naming the key and the fix (compile again).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CORE_JOBCONFIG_H
#define TITAN_RUNTIME_CORE_JOBCONFIG_H

#include "core/Status.h"

#include "titan/Config/TrainConfig.h"

#include <string>
#include <vector>

namespace titan::rt {

struct RunOptions;

/// Reads the job's config: `configFile` when not empty (checked against
/// `compiledPath`, the executable's config.toml), else `compiledPath`, with
/// `overrides` ("section.key=value") applied. `found` is false when neither
/// file exists (an executable built without a config).
Status loadJobConfig(const std::string &compiledPath,
                     const std::string &configFile,
                     const std::vector<std::string> &overrides,
                     mlir::titan::TrainConfig &config, bool &found);

/// The keys whose values differ between `compiled` and `requested` among
/// those compiled into the program, as "section.key: compiled -> requested".
std::vector<std::string>
findCompiledKeyChanges(const mlir::titan::TrainConfig &compiled,
                       const mlir::titan::TrainConfig &requested);

/// Sets the run's options from the job's config.
void applyJobConfig(const mlir::titan::TrainConfig &config,
                    RunOptions &options);

} // namespace titan::rt

#endif // TITAN_RUNTIME_CORE_JOBCONFIG_H
