//===- JobConfig.cpp - the config a rank runs its job by ------------------===//

#include "core/JobConfig.h"

#include "core/Trainer.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"

#include <map>

using namespace titan::rt;
using mlir::titan::TrainConfig;

namespace {

/// Whether `key` ("section.key") is compiled into the program.
bool isCompiledKey(llvm::StringRef key) {
  auto [section, name] = key.split('.');
  if (section == "parallelism" || section == "activation_checkpoint")
    return true;
  if (section == "model")
    return name == "name" || name == "flavor";
  if (section == "optimizer")
    return name != "lr";
  if (section == "validation")
    return name == "enable" || name == "local_batch_size" || name == "seq_len";
  if (section == "training")
    return llvm::is_contained(
        {"local_batch_size", "global_batch_size", "seq_len", "max_norm",
         "dtype", "mixed_precision_param", "mixed_precision_reduce",
         "ignore_index", "enable_cpu_offload"},
        name);
  return false;
}

/// Every "section.key" of `config` with its printed value.
std::map<std::string, std::string> flatten(const TrainConfig &config) {
  std::map<std::string, std::string> values;
  std::string section;
  llvm::SmallVector<llvm::StringRef> lines;
  std::string text = mlir::titan::printTrainConfig(config);
  llvm::StringRef(text).split(lines, '\n');
  for (llvm::StringRef line : lines) {
    if (line.consume_front("[") && line.consume_back("]")) {
      section = line.str();
      continue;
    }
    auto [key, value] = line.split(" = ");
    if (!value.empty())
      values[section + "." + key.str()] = value.str();
  }
  return values;
}

} // namespace

std::vector<std::string>
titan::rt::findCompiledKeyChanges(const TrainConfig &compiled,
                                  const TrainConfig &requested) {
  std::map<std::string, std::string> before = flatten(compiled),
                                     after = flatten(requested);
  std::vector<std::string> changes;
  for (const auto &[key, value] : after) {
    if (!isCompiledKey(key))
      continue;
    auto old = before.find(key);
    std::string was = old == before.end() ? "(unset)" : old->second;
    if (was != value)
      changes.push_back(key + ": " + was + " -> " + value);
  }
  return changes;
}

Status titan::rt::loadJobConfig(const std::string &compiledPath,
                                const std::string &configFile,
                                const std::vector<std::string> &overrides,
                                TrainConfig &config, bool &found) {
  found = false;
  bool hasCompiled = llvm::sys::fs::exists(compiledPath);
  if (!hasCompiled && configFile.empty()) {
    if (!overrides.empty())
      return Status::invalidArgument(
          "--" + llvm::StringRef(overrides.front()).split('=').first.str() +
          ": this executable has no config.toml beside its bin/ folder "
          "(it was compiled from a partitioned program without --config), so "
          "there is no config to override");
    return Status::success();
  }
  found = true;
  const std::string &path = configFile.empty() ? compiledPath : configFile;
  llvm::Expected<TrainConfig> requested =
      mlir::titan::loadTrainConfig(path, overrides);
  if (!requested)
    return Status::invalidArgument(llvm::toString(requested.takeError()));
  if (hasCompiled) {
    llvm::Expected<TrainConfig> compiled =
        mlir::titan::loadTrainConfig(compiledPath);
    if (!compiled)
      return Status::invalidArgument(llvm::toString(compiled.takeError()));
    std::vector<std::string> changes =
        findCompiledKeyChanges(*compiled, *requested);
    if (!changes.empty())
      return Status::invalidArgument(
          "the program was compiled with other values of keys that cannot "
          "change at run time:\n  " +
          llvm::join(changes, "\n  ") +
          "\ncompile again with these values (titan-compile MODEL.pt "
          "--config " +
          path + " ...), or run with the compiled ones");
  }
  config = std::move(*requested);
  return Status::success();
}

void titan::rt::applyJobConfig(const TrainConfig &config, RunOptions &options) {
  options.steps = config.training.steps;
  options.learningRate = config.optimizer.lr;
  options.lrSchedule = mlir::titan::LrSchedule::fromConfig(
      config.lrScheduler.getScheduleSteps(config.training.steps),
      config.lrScheduler.warmupSteps, config.lrScheduler.decayRatio,
      mlir::titan::symbolizeLrDecayType(config.lrScheduler.decayType)
          .value_or(mlir::titan::LrDecayType::Linear),
      config.lrScheduler.minLrFactor);
  options.seed = uint64_t(config.training.seed);
  options.datasetPath = config.training.datasetPath;
  options.validation = config.validation;
  options.tokenizerPath = config.tokenizerPath;
  options.checkpoint = config.checkpoint;
  options.dumpFolder = config.dumpFolder;
  options.logFreq = config.logFreq;
  options.profiling = config.profiling;
}
