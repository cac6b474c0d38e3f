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

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <toml++/toml.h>

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

} // namespace mlir::titan

#endif // TITAN_LIB_CONFIG_TOML_H
