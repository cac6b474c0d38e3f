//===- CommandLine.cpp - config arguments, titan's and torchtitan's -------===//
//
// torchtitan parses its command line with tyro: a key is --section.key
// (hyphens and underscores interchangeable), its value the next argument or
// after '='; a boolean with a default is a flag, set by --section.key and
// cleared by --section.no-key (tyro puts "no-" after the last dot); a
// list[str] is one argument, A,B,C; a list[list[str]]
// (module_fqns_per_model_part) is every following argument up to the next
// option, one inner list A,B,C each (one only after '='). --job.config_file
// names the TOML file.
//
//===----------------------------------------------------------------------===//

#include "titan/Config/CommandLine.h"

#include "Toml.h"
#include "TorchtitanKeys.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir::titan;

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// `text` as a TOML basic string.
std::string quote(llvm::StringRef text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      quoted += '\\';
    quoted += c;
  }
  return quoted + "\"";
}

/// A command-line value of a key of `type` as the TOML value of an
/// override: strings quoted (tyro takes "2" for a string key as a string),
/// lists from A,B,C (or already TOML: [...]); anything else as written,
/// for parseTrainConfig to check.
std::string toToml(llvm::StringRef value, ConfigValueType type) {
  switch (type) {
  case ConfigValueType::String:
    return quote(value);
  case ConfigValueType::StringList:
  case ConfigValueType::NumberList: {
    if (value.ltrim().starts_with("["))
      return value.str();
    llvm::SmallVector<llvm::StringRef> items;
    value.split(items, ',', -1, false);
    std::string array = "[";
    for (llvm::StringRef item : items) {
      if (array.size() > 1)
        array += ", ";
      array +=
          type == ConfigValueType::StringList ? quote(item) : item.trim().str();
    }
    return array + "]";
  }
  default:
    return value.str();
  }
}

/// The arguments of a list[list[str]] key (A,B,C each) as a TOML array of
/// arrays of strings; a single argument already in TOML ([[...]]) as is.
std::string toTomlLists(llvm::ArrayRef<std::string> arguments) {
  if (arguments.size() == 1 &&
      llvm::StringRef(arguments[0]).ltrim().starts_with("["))
    return arguments[0];
  std::string array = "[";
  for (const std::string &argument : arguments) {
    if (array.size() > 1)
      array += ", ";
    array += toToml(argument, ConfigValueType::StringList);
  }
  return array + "]";
}

/// tyro's spellings of a boolean value.
std::optional<bool> parseBoolean(llvm::StringRef text) {
  if (text.equals_insensitive("true"))
    return true;
  if (text.equals_insensitive("false"))
    return false;
  return std::nullopt;
}

} // namespace

llvm::Expected<ConfigCommandLine>
mlir::titan::parseConfigCommandLine(llvm::ArrayRef<const char *> argv) {
  ConfigCommandLine result;
  auto setConfigFile = [&](llvm::StringRef flag,
                           llvm::StringRef file) -> llvm::Error {
    if (!result.configFile.empty() && result.configFile != file)
      return error(flag + " " + file + ": the config file is already '" +
                   result.configFile +
                   "' (give one --config or "
                   "--job.config_file)");
    result.configFile = file.str();
    return llvm::Error::success();
  };
  for (size_t i = 0; i < argv.size(); ++i) {
    llvm::StringRef arg(argv[i]);
    if (i == 0) {
      result.remaining.push_back(arg.str());
      continue;
    }
    if (arg == "--") {
      // The end of options: the rest is not ours.
      result.remaining.insert(result.remaining.end(), argv.begin() + i,
                              argv.end());
      break;
    }
    auto [flag, inlineValue] = arg.split('=');
    bool hasInlineValue = arg.contains('=');
    // The value of a flag that takes one: after '=' or the next argument.
    auto takeValue = [&](llvm::StringRef name) -> llvm::Expected<std::string> {
      if (hasInlineValue)
        return inlineValue.str();
      if (i + 1 >= argv.size() ||
          llvm::StringRef(argv[i + 1]).starts_with("--"))
        return error(name + " needs a value");
      return std::string(argv[++i]);
    };

    // titan's own: --config FILE, --set section.key=value (one dash too,
    // as LLVM's option parser takes them).
    llvm::StringRef titanFlag = flag;
    if (titanFlag.consume_front("--") || titanFlag.consume_front("-")) {
      if (titanFlag == "config" || titanFlag == "set") {
        llvm::Expected<std::string> value = takeValue("--" + titanFlag.str());
        if (!value)
          return value.takeError();
        if (titanFlag == "set")
          result.overrides.push_back(*value);
        else if (llvm::Error e = setConfigFile("--config", *value))
          return std::move(e);
        continue;
      }
    }

    // torchtitan's: --section.key.
    llvm::StringRef spelled = flag;
    if (!spelled.consume_front("--") || !spelled.contains('.') ||
        spelled.starts_with("-")) {
      result.remaining.push_back(arg.str());
      continue;
    }
    // tyro accepts hyphens for underscores; titan's and torchtitan's names
    // have no hyphens.
    std::string name = spelled.str();
    llvm::replace(name, '-', '_');
    if (name == "job.config_file") {
      llvm::Expected<std::string> file = takeValue(flag);
      if (!file)
        return file.takeError();
      if (llvm::Error e = setConfigFile(flag, *file))
        return std::move(e);
      continue;
    }
    std::optional<ConfigValueType> type = lookupConfigKeyType(name);
    // --section.no-key clears a boolean.
    auto [parent, last] = llvm::StringRef(name).rsplit('.');
    if (!type && last.starts_with("no_")) {
      std::string positive = (parent + "." + last.drop_front(3)).str();
      if (std::optional<ConfigValueType> positiveType =
              lookupConfigKeyType(positive)) {
        if (*positiveType != ConfigValueType::Boolean)
          return error(flag + ": '" + positive +
                       "' is not a boolean; give it a value (--" + positive +
                       " VALUE)");
        if (hasInlineValue)
          return error(arg + ": a negated flag takes no value");
        result.overrides.push_back(positive + "=false");
        continue;
      }
    }
    if (!type && llvm::StringRef(name).starts_with("no_")) {
      // argparse's place for "no-"; tyro's is after the last dot.
      std::string positive = name.substr(3);
      std::optional<ConfigValueType> positiveType =
          lookupConfigKeyType(positive);
      if (positiveType == ConfigValueType::Boolean) {
        auto [positiveParent, positiveLast] =
            llvm::StringRef(positive).rsplit('.');
        return error(flag +
                     ": torchtitan negates a flag after its last dot: "
                     "--" +
                     positiveParent + ".no-" + positiveLast);
      }
    }
    if (!type) {
      // "did you mean" among the names beside it, or among all names.
      std::vector<std::string> names = getAllConfigNames();
      std::vector<llvm::StringRef> candidates;
      for (const std::string &known : names) {
        auto [knownParent, knownLast] = llvm::StringRef(known).rsplit('.');
        if (!knownLast.empty() && knownParent == parent)
          candidates.push_back(known);
      }
      if (candidates.empty())
        candidates.assign(names.begin(), names.end());
      std::string suggestion = suggestName(name, candidates);
      if (size_t at = suggestion.find('\''); at != std::string::npos)
        suggestion.insert(at + 1, "--");
      return error("unknown config key " + flag + suggestion);
    }
    if (*type == ConfigValueType::Boolean) {
      // A bare flag sets it; "=VALUE" or a following true / false gives it.
      std::optional<bool> value = true;
      if (hasInlineValue) {
        value = parseBoolean(inlineValue);
        if (!value)
          return error(arg + ": expected true or false");
      } else if (i + 1 < argv.size()) {
        if (std::optional<bool> next = parseBoolean(argv[i + 1])) {
          value = next;
          ++i;
        }
      }
      result.overrides.push_back(name + "=" + (*value ? "true" : "false"));
      continue;
    }
    if (*type == ConfigValueType::StringListList) {
      // argparse's nargs="*": the value after '=', or the arguments up to
      // the next option (none: the empty list).
      std::vector<std::string> parts;
      if (hasInlineValue)
        parts.push_back(inlineValue.str());
      else
        while (i + 1 < argv.size() &&
               !llvm::StringRef(argv[i + 1]).starts_with("-"))
          parts.push_back(argv[++i]);
      result.overrides.push_back(name + "=" + toTomlLists(parts));
      continue;
    }
    llvm::Expected<std::string> value = takeValue(flag);
    if (!value)
      return value.takeError();
    result.overrides.push_back(name + "=" + toToml(*value, *type));
  }
  return result;
}
