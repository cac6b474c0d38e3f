//===- Toml.cpp - TOML parsing behind a guard -----------------------------===//

#include "Toml.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir::titan;

namespace {

/// Where the scanner is: outside strings, in a comment, or in one of TOML's
/// four kinds of string.
enum class Lexical {
  Outside,
  Comment,
  Basic,
  MultiBasic,
  Literal,
  MultiLiteral
};

bool isAscii(char c) { return static_cast<unsigned char>(c) < 0x80; }

/// Whitespace and newlines as toml++ skips them after a line-ending
/// backslash.
bool isTomlSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/// The byte offset of the first non-ASCII character that toml++ would test
/// for whitespace (see checkTomlCharacters), or npos.
size_t findUnsafeNonAscii(llvm::StringRef text) {
  Lexical state = Lexical::Outside;
  // Outside strings, the last character other than a space or tab.
  char previous = '\n';
  // In a multi-line basic string, after a line-ending backslash: toml++
  // skips whitespace and newlines up to the next character.
  bool trimming = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    llvm::StringRef rest = text.drop_front(i);
    switch (state) {
    case Lexical::Outside:
      if (!isAscii(c))
        return i;
      if (c == '#') {
        state = Lexical::Comment;
      } else if ((c == '"' || c == '\'') &&
                 llvm::StringRef("\n=[,{.").contains(previous)) {
        // A quote opens a string only where a key or value may start; in
        // the middle of a malformed value toml++ takes it for part of the
        // value and tests each character after it for whitespace.
        bool multi = rest.starts_with(c == '"' ? "\"\"\"" : "'''");
        if (multi)
          i += 2;
        state = c == '"' ? (multi ? Lexical::MultiBasic : Lexical::Basic)
                         : (multi ? Lexical::MultiLiteral : Lexical::Literal);
      } else if (c != ' ' && c != '\t') {
        previous = c;
      }
      break;
    case Lexical::Comment:
      if (c == '\n') {
        state = Lexical::Outside;
        previous = '\n';
      }
      break;
    case Lexical::Basic:
    case Lexical::MultiBasic: {
      bool multi = state == Lexical::MultiBasic;
      if (trimming) {
        if (isTomlSpace(c))
          break;
        trimming = false;
        if (!isAscii(c))
          return i;
      }
      if (c == '\\') {
        if (i + 1 < text.size() && !isAscii(text[i + 1]))
          return i + 1;
        if (multi && i + 1 < text.size() && isTomlSpace(text[i + 1]))
          trimming = true;
        else
          ++i;
      } else if (c == '"' && (!multi || rest.starts_with("\"\"\""))) {
        // A multi-line string may end with up to two more quotes.
        if (multi)
          i += std::min<size_t>(rest.find_first_not_of('"'), 5) - 1;
        state = Lexical::Outside;
        previous = c;
      } else if (c == '\n' && !multi) {
        state = Lexical::Outside;
        previous = c;
      }
      break;
    }
    case Lexical::Literal:
      if (c == '\'' || c == '\n') {
        state = Lexical::Outside;
        previous = c;
      }
      break;
    case Lexical::MultiLiteral:
      if (rest.starts_with("'''")) {
        i += std::min<size_t>(rest.find_first_not_of('\''), 5) - 1;
        state = Lexical::Outside;
        previous = c;
      }
      break;
    }
  }
  return llvm::StringRef::npos;
}

} // namespace

llvm::Error mlir::titan::checkTomlCharacters(llvm::StringRef text,
                                             llvm::StringRef fileName) {
  size_t offset = findUnsafeNonAscii(text);
  if (offset == llvm::StringRef::npos)
    return llvm::Error::success();
  size_t line = text.take_front(offset).count('\n') + 1;
  return llvm::createStringError(
      llvm::formatv("{0}:{1}: a non-ASCII character outside a string or "
                    "comment, after a backslash, or first on a line that a "
                    "line-ending backslash continues (write it as an escape "
                    "such as \\u00e9 in a \"string\")",
                    fileName, line)
          .str());
}

llvm::Expected<toml::table> mlir::titan::parseToml(llvm::StringRef text,
                                                   llvm::StringRef fileName) {
  if (llvm::Error err = checkTomlCharacters(text, fileName))
    return std::move(err);
  toml::parse_result parsed =
      toml::parse(std::string_view(text.data(), text.size()), fileName.str());
  if (!parsed)
    return llvm::createStringError(
        llvm::formatv("{0}:{1}: {2}", fileName,
                      parsed.error().source().begin.line,
                      parsed.error().description())
            .str());
  return std::move(parsed).table();
}
