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

/// Where a key's value goes: a string, an integer, a number (integers
/// too), a number that may be absent, a boolean or an array of numbers.
using TomlTarget =
    std::variant<std::string *, int64_t *, double *, std::optional<double> *,
                 bool *, std::vector<double> *>;

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

/// Stores every key of `root` into the targets of `sections`. Errors read
/// "FILE:LINE: ..." and name the key: an unknown section or key (with "did
/// you mean" for a close known name), a key outside a section, a value of
/// the wrong type.
llvm::Error applyTomlSchema(const toml::table &root,
                            llvm::ArrayRef<TomlSection> sections,
                            llvm::StringRef fileName);

/// " (did you mean 'x'?)" for the name in `candidates` closest to `name`
/// (within 3 edits), or "".
std::string suggestName(llvm::StringRef name,
                        llvm::ArrayRef<llvm::StringRef> candidates);

} // namespace mlir::titan

#endif // TITAN_LIB_CONFIG_TOML_H
