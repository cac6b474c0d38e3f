//===- LaunchEnvironment.cpp - torchrun's environment of a rank -----------===//

#include "comm/Connect.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace titan::rt {

namespace {

/// The value of the environment variable `name`, or null when it is unset
/// or empty.
const char *getVariable(const char *name) {
  const char *value = std::getenv(name);
  return value && *value ? value : nullptr;
}

/// "RANK is 'x': expected ...".
Status malformed(const char *name, const char *value,
                 const std::string &expected) {
  return Status::invalidArgument(std::string(name) + " is '" + value +
                                 "': expected " + expected);
}

/// Parses the integer variable `name` into `value` when it is set; it must
/// lie in [minimum, maximum].
Status readInteger(const char *name, int64_t minimum, int64_t maximum,
                   int64_t &value) {
  const char *text = getVariable(name);
  if (!text)
    return Status::success();
  char *end = nullptr;
  errno = 0;
  long long parsed = std::strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0' || parsed < minimum || parsed > maximum)
    return malformed(name, text,
                     "an integer in [" + std::to_string(minimum) + ", " +
                         std::to_string(maximum) + "]");
  value = parsed;
  return Status::success();
}

/// Parses the boolean variable `name` (True/False as torchrun writes it,
/// or true/false/1/0) into `value` when it is set.
Status readBoolean(const char *name, bool &value) {
  const char *text = getVariable(name);
  if (!text)
    return Status::success();
  std::string word = text;
  if (word == "True" || word == "true" || word == "1")
    value = true;
  else if (word == "False" || word == "false" || word == "0")
    value = false;
  else
    return malformed(name, text, "True or False");
  return Status::success();
}

/// Parses the duration variable `name` (seconds, > 0) into `value` when it
/// is set.
Status readSeconds(const char *name, std::chrono::milliseconds &value) {
  const char *text = getVariable(name);
  if (!text)
    return Status::success();
  char *end = nullptr;
  errno = 0;
  double seconds = std::strtod(text, &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(seconds) || seconds <= 0 ||
      seconds > 1e9)
    return malformed(name, text, "a positive number of seconds");
  value = std::chrono::milliseconds(
      std::max<int64_t>(1, std::llround(seconds * 1000)));
  return Status::success();
}

/// Whether the variable `name` is set (and not empty).
bool isSet(const char *name) { return getVariable(name) != nullptr; }

} // namespace

Status readLaunchEnvironment(LaunchEnvironment &env) {
  LaunchEnvironment result;
  if (isSet("RANK") != isSet("WORLD_SIZE"))
    return Status::invalidArgument(
        std::string(isSet("RANK") ? "RANK is set but WORLD_SIZE is not"
                                  : "WORLD_SIZE is set but RANK is not") +
        ": a launcher sets both (titan-run and torchrun do)");
  const int64_t maxRanks = int64_t(1) << 31;
  TITANRT_RETURN_IF_ERROR(
      readInteger("WORLD_SIZE", 1, maxRanks, result.worldSize));
  TITANRT_RETURN_IF_ERROR(readInteger("RANK", 0, maxRanks, result.rank));
  if (result.rank >= result.worldSize)
    return Status::invalidArgument(
        "RANK is " + std::to_string(result.rank) + " but WORLD_SIZE is " +
        std::to_string(result.worldSize) + ": RANK must be below WORLD_SIZE");

  // Without them, the rank is alone on its node.
  result.localRank = result.rank;
  result.localWorldSize = result.worldSize;
  TITANRT_RETURN_IF_ERROR(readInteger("LOCAL_WORLD_SIZE", 1, result.worldSize,
                                      result.localWorldSize));
  TITANRT_RETURN_IF_ERROR(
      readInteger("LOCAL_RANK", 0, maxRanks, result.localRank));
  if (result.localRank >= result.localWorldSize)
    return Status::invalidArgument(
        "LOCAL_RANK is " + std::to_string(result.localRank) +
        " but LOCAL_WORLD_SIZE is " + std::to_string(result.localWorldSize) +
        ": LOCAL_RANK must be below LOCAL_WORLD_SIZE");

  if (result.worldSize > 1) {
    for (const char *name : {"MASTER_ADDR", "MASTER_PORT"})
      if (!isSet(name))
        return Status::invalidArgument(
            std::string(name) +
            " is not set: with WORLD_SIZE > 1 every rank needs the address "
            "of the rendezvous store (MASTER_ADDR and MASTER_PORT; titan-run "
            "and torchrun set them)");
  }
  if (const char *address = getVariable("MASTER_ADDR"))
    result.masterAddr = address;
  int64_t port = result.masterPort;
  TITANRT_RETURN_IF_ERROR(readInteger("MASTER_PORT", 1, 65535, port));
  result.masterPort = static_cast<int>(port);

  TITANRT_RETURN_IF_ERROR(
      readBoolean("TORCHELASTIC_USE_AGENT_STORE", result.useAgentStore));
  TITANRT_RETURN_IF_ERROR(readInteger("TORCHELASTIC_RESTART_COUNT", 0, maxRanks,
                                      result.restartCount));
  if (const char *runId = getVariable("TORCHELASTIC_RUN_ID"))
    result.runId = runId;
  TITANRT_RETURN_IF_ERROR(
      readSeconds("TITAN_COMM_TIMEOUT", result.collectiveTimeout));
  if (const char *address = getVariable("TITAN_COMM_ADDR"))
    result.commAddr = address;
  env = std::move(result);
  return Status::success();
}

} // namespace titan::rt
