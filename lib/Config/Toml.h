//===- Toml.h - TOML parsing behind a guard ----------------------*- C++
//-*-===//
//
// The one place titan's config readers call toml++. Debian's toml++ 3.3
// reaches __builtin_unreachable() (undefined behaviour) when it asks whether
// some non-ASCII characters are whitespace, which it does for a character
// outside a string or comment and for one that follows a backslash in a
// basic string (found by test/fuzz/TrainConfigFuzzer.cpp; upstream
// tomlplusplus issues 190 and 295). TOML allows non-ASCII characters only in
// strings and comments, so parseToml refuses them everywhere else, naming
// the line, before toml++ reads the text.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_LIB_CONFIG_TOML_H
#define TITAN_LIB_CONFIG_TOML_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <toml++/toml.h>

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace mlir::titan {

/// Checks that `text` has non-ASCII characters only in comments and strings,
/// and not right after a backslash nor first on a line that a line-ending
/// backslash continues in a multi-line basic string (toml++ would take them
/// for possible whitespace). Errors read "FILE:LINE: ...".
llvm::Error checkTomlCharacters(llvm::StringRef text, llvm::StringRef fileName);

/// Parses `text` as TOML after checkTomlCharacters. Errors read
/// "FILE:LINE: description".
llvm::Expected<toml::table> parseToml(llvm::StringRef text,
                                      llvm::StringRef fileName);

/// Where a key's value goes: a string, an integer, an integer that may be
/// absent, a number (integers too), a number that may be absent, a boolean,
/// an array of numbers, an array of strings or an array of arrays of
/// strings. An absent optional is a key the config does not write.
using TomlTarget =
    std::variant<std::string *, int64_t *, std::optional<int64_t> *, double *,
                 std::optional<double> *, bool *, std::optional<bool> *,
                 std::vector<double> *, std::vector<std::string> *,
                 std::vector<std::vector<std::string>> *>;

/// One known key of a section.
struct TomlKey {
  const char *name;
  TomlTarget target;
};

/// One known section and its keys.
struct TomlSection {
  const char *name;
  std::vector<TomlKey> keys;
};

/// Keys that `sections` lack but a config may still hold (torchtitan's keys
/// that titan has no field for, lib/Config/TorchtitanKeys.h). Names are
/// qualified with dots: "compile", "training.dataloader",
/// "quantize.linear.float8.filter_fqns".
class TomlFallback {
public:
  virtual ~TomlFallback();
  /// Whether `qualified` names a table (a section or a table nested in one)
  /// that holds keys of the fallback.
  virtual bool isTable(llvm::StringRef qualified) const = 0;
  /// Whether `qualified` names a key of the fallback.
  virtual bool isKey(llvm::StringRef qualified) const = 0;
  /// The names right under `prefix` ("" for sections), for "did you mean".
  virtual std::vector<std::string>
  getNamesUnder(llvm::StringRef prefix) const = 0;
  /// Takes the value of the key `qualified` (isKey), from `fileName`.
  virtual llvm::Error take(llvm::StringRef qualified, const toml::node &value,
                           llvm::StringRef fileName) = 0;
};

/// Stores every key of `root` into the targets of `sections`, and gives
/// `fallback` the keys it knows that `sections` lack. Errors read
/// "FILE:LINE: ..." and name the key: an unknown section or key (with "did
/// you mean" for a close known name), a key outside a section, a value of
/// the wrong type.
llvm::Error applyTomlSchema(const toml::table &root,
                            llvm::ArrayRef<TomlSection> sections,
                            llvm::StringRef fileName,
                            TomlFallback *fallback = nullptr);

/// Stores `value` into `target`, checking its type; errors name `key` (the
/// key as the config spells it) and "FILE:LINE: ".
llvm::Error assignTomlValue(const TomlTarget &target, const toml::node &value,
                            llvm::StringRef key, llvm::StringRef fileName);

/// "FILE:LINE: " of `node` ("FILE: " if it has no position).
std::string tomlLocation(llvm::StringRef fileName, const toml::node &node);

/// " (did you mean 'x'?)" for the one name in `candidates` that `name` (3
/// characters or more) begins, else for the name closest to `name` (within
/// 3 edits), or "".
std::string suggestName(llvm::StringRef name,
                        llvm::ArrayRef<llvm::StringRef> candidates);

} // namespace mlir::titan

#endif // TITAN_LIB_CONFIG_TOML_H
