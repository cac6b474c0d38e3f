//===- TorchtitanKeys.h - torchtitan's config keys titan lacks --*- C++ -*-===//
//
// torchtitan's whole config schema (torchtitan/config_manager.py of v0.1.0,
// torchtitan/config/job_config.py of v0.2.x), so that its own config files
// and command lines load unchanged. titan's schema (TrainConfig.cpp) holds
// the keys titan honours; this table holds every other torchtitan key with
// what titan does with it: stores it in a titan key (another release's
// spelling), ignores it (it does nothing without a key that has its own
// disposition), notes it (tooling titan replaces or does not need), or
// refuses it (ignoring it would change the numerics or the job). The value
// that asks for nothing is always accepted. docs/config.md tabulates the
// table (ConfigTest checks that it matches).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_LIB_CONFIG_TORCHTITANKEYS_H
#define TITAN_LIB_CONFIG_TORCHTITANKEYS_H

#include "Toml.h"

#include "titan/Config/TrainConfig.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::titan {

/// The type of a config key's value.
enum class ConfigValueType {
  Boolean,
  Integer,
  /// An integer or a floating-point number.
  Number,
  String,
  /// An array of strings (on torchtitan's command line: A,B,C).
  StringList,
  /// An array of numbers.
  NumberList,
  /// An array of arrays of strings (torchtitan's list[list[str]]; on its
  /// command line one argument per inner array, each A,B,C).
  StringListList,
  /// Anything (torchtitan's list[list[str]] and list[str] | str).
  Any,
};

/// What titan does with a torchtitan key its schema lacks.
enum class TorchtitanDisposition {
  /// Stored in the titan key `TorchtitanKey::values` names: the spelling of
  /// another release.
  Mapped,
  /// Accepted, any value: it does nothing in titan (it only acts together
  /// with a key that has its own disposition, or on torchtitan's tooling).
  Ignored,
  /// Accepted; a value other than the quiet ones adds a note to
  /// TrainConfig::warnings.
  Noted,
  /// Refused unless the value is one of the quiet ones.
  Refused,
};

/// One torchtitan key titan's schema lacks.
struct TorchtitanKey {
  /// Qualified with dots: "metrics.enable_tensorboard",
  /// "quantize.linear.float8.filter_fqns".
  const char *name;
  /// The releases that have the key: "v0.1.0", "v0.2.x", "v0.1.0, v0.2.x",
  /// "v0.2.1+"...
  const char *releases;
  ConfigValueType type;
  TorchtitanDisposition disposition;
  /// Mapped: the titan key ("lr_scheduler.min_lr_factor"). Noted and
  /// Refused: the quiet values in TOML, separated by " | " ("false",
  /// "[]", "\"float32\""); empty: none (any value is noted).
  const char *values;
  /// Ignored and Mapped: why (for docs/config.md). Noted: the note.
  /// Refused: the capability titan lacks.
  const char *text;
  /// Refused: the fix.
  const char *fix = "";
};

/// Every torchtitan key of v0.1.0 and v0.2.x that titan's schema lacks.
llvm::ArrayRef<TorchtitanKey> getTorchtitanKeys();

/// The entry of `name` (qualified with dots), or null.
const TorchtitanKey *lookupTorchtitanKey(llvm::StringRef name);

/// The keys of titan's own schema ("section.key") and their types, in
/// schema order (TrainConfig.cpp).
std::vector<std::pair<std::string, ConfigValueType>> getTitanConfigKeys();

/// The type of a key of titan's schema or torchtitan's table, or nothing.
std::optional<ConfigValueType> lookupConfigKeyType(llvm::StringRef name);

/// Every section and nested table ("training.dataloader") of titan's and
/// torchtitan's keys, and every key, for "did you mean" on a command line.
std::vector<std::string> getAllConfigNames();

/// The TomlFallback of titan's config parser: takes torchtitan's keys,
/// stores Mapped ones into titan's schema at once, and remembers the last
/// value of every other one (a command-line override replaces the file's);
/// `finish` then refuses or notes them.
class TorchtitanKeys : public TomlFallback {
public:
  /// `schema` holds the targets of Mapped keys.
  explicit TorchtitanKeys(llvm::ArrayRef<TomlSection> schema)
      : schema(schema) {}

  bool isTable(llvm::StringRef qualified) const override;
  bool isKey(llvm::StringRef qualified) const override;
  std::vector<std::string> getNamesUnder(llvm::StringRef prefix) const override;
  llvm::Error take(llvm::StringRef qualified, const toml::node &value,
                   llvm::StringRef fileName) override;

  /// After the file and every override: the error of the first refused
  /// value, or the notes of the noted ones appended to `config.warnings`.
  llvm::Error finish(TrainConfig &config) const;

private:
  /// What `finish` needs of a taken value.
  struct Taken {
    const TorchtitanKey *key;
    /// "FILE:LINE: ".
    std::string location;
    /// The value as TOML, for messages.
    std::string text;
    bool quiet;
    /// Where it was set: the ordinal of its file (the config, then each
    /// override) and the line, for messages in the order the user wrote
    /// them (toml++ iterates a table by name).
    size_t origin;
    size_t line;
  };
  llvm::ArrayRef<TomlSection> schema;
  /// In the order the keys were first seen.
  std::vector<Taken> taken;
  std::map<std::string, size_t, std::less<>> index;
  /// The ordinal of each file name seen.
  std::map<std::string, size_t, std::less<>> origins;
};

} // namespace mlir::titan

#endif // TITAN_LIB_CONFIG_TORCHTITANKEYS_H
