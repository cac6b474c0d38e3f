//===- Toml.cpp - TOML parsing behind a guard -----------------------------===//

#include "Toml.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
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

/// What toml++ reads next outside strings and comments.
enum class Expect { Key, Value, AfterKey, AfterValue };

/// A bare token outside strings: toml++ reads a bare key over
/// [A-Za-z0-9_-] and a bare value (number, boolean, date) up to a value
/// terminator, testing each character as it goes.
enum class Token { None, Key, Value };

bool isBareKeyChar(char c) { return llvm::isAlnum(c) || c == '_' || c == '-'; }

bool isValueTerminator(char c) {
  return isTomlSpace(c) || c == ']' || c == '}' || c == ',' || c == '#';
}

/// The byte offset of the first non-ASCII character that toml++ would test
/// for whitespace (see checkTomlCharacters), or npos. It follows toml++'s
/// reading of the document far enough to know where a quote opens a string:
/// only where a key or value starts (in the middle of a malformed value
/// toml++ reads on, testing each character).
size_t findUnsafeNonAscii(llvm::StringRef text) {
  Lexical state = Lexical::Outside;
  Expect expect = Expect::Key;
  Token token = Token::None;
  // What the string being read is: a key or a value.
  Expect afterString = Expect::AfterValue;
  // Open arrays ('['), inline tables ('{') and a table header ('h').
  llvm::SmallVector<char> open;
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
      if ((token == Token::Key && isBareKeyChar(c)) ||
          (token == Token::Value && !isValueTerminator(c)))
        break;
      if (token != Token::None) {
        expect = token == Token::Key ? Expect::AfterKey : Expect::AfterValue;
        token = Token::None;
      }
      if (c == '#') {
        state = Lexical::Comment;
      } else if (c == '\n') {
        // Arrays span lines; anything else ends with its line.
        if (open.empty() || open.back() != '[') {
          open.clear();
          expect = Expect::Key;
        }
      } else if (isTomlSpace(c)) {
        // Spaces separate tokens and nothing else.
      } else if (c == '"' || c == '\'') {
        // Elsewhere toml++ stops at the quote with an error.
        if (expect != Expect::Key && expect != Expect::Value)
          break;
        bool multi = rest.starts_with(c == '"' ? "\"\"\"" : "'''");
        if (multi)
          i += 2;
        state = c == '"' ? (multi ? Lexical::MultiBasic : Lexical::Basic)
                         : (multi ? Lexical::MultiLiteral : Lexical::Literal);
        afterString =
            expect == Expect::Key ? Expect::AfterKey : Expect::AfterValue;
      } else if (expect == Expect::Key) {
        if (isBareKeyChar(c)) {
          token = Token::Key;
        } else if (c == '[' && open.empty()) {
          open.push_back('h');
          if (rest.starts_with("[["))
            ++i;
        }
      } else if (expect == Expect::Value) {
        if (c == '[' || c == '{') {
          open.push_back(c);
          expect = c == '[' ? Expect::Value : Expect::Key;
        } else if (!open.empty() && ((c == ']' && open.back() == '[') ||
                                     (c == '}' && open.back() == '{'))) {
          open.pop_back();
          expect = Expect::AfterValue;
        } else {
          token = Token::Value;
        }
      } else if (expect == Expect::AfterKey) {
        if (c == '=' || c == '.') {
          expect = c == '=' ? Expect::Value : Expect::Key;
        } else if (c == ']' && !open.empty() && open.back() == 'h') {
          open.pop_back();
          if (rest.starts_with("]]"))
            ++i;
          expect = Expect::AfterValue;
        }
      } else if (!open.empty()) {
        if (c == ',')
          expect = open.back() == '[' ? Expect::Value : Expect::Key;
        else if ((c == ']' && open.back() == '[') ||
                 (c == '}' && open.back() == '{'))
          open.pop_back();
      }
      break;
    case Lexical::Comment:
      if (c == '\n') {
        state = Lexical::Outside;
        --i; // the newline ends a line outside the comment too
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
        expect = afterString;
      } else if (c == '\n' && !multi) {
        state = Lexical::Outside;
        --i;
      }
      break;
    }
    case Lexical::Literal:
      if (c == '\'') {
        state = Lexical::Outside;
        expect = afterString;
      } else if (c == '\n') {
        state = Lexical::Outside;
        --i;
      }
      break;
    case Lexical::MultiLiteral:
      if (rest.starts_with("'''")) {
        i += std::min<size_t>(rest.find_first_not_of('\''), 5) - 1;
        state = Lexical::Outside;
        expect = afterString;
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

std::string
mlir::titan::suggestName(llvm::StringRef name,
                         llvm::ArrayRef<llvm::StringRef> candidates) {
  // A name that begins exactly one candidate means it (a device's family,
  // "h100" of "h100-sxm"; a name cut short), however far the rest is.
  llvm::StringRef extended;
  unsigned extensions = 0;
  if (name.size() >= 3)
    for (llvm::StringRef candidate : candidates)
      if (candidate.size() > name.size() &&
          candidate.starts_with_insensitive(name)) {
        extended = candidate;
        ++extensions;
      }
  if (extensions == 1)
    return (" (did you mean '" + extended + "'?)").str();
  llvm::StringRef best;
  unsigned bestDistance = 4;
  for (llvm::StringRef candidate : candidates) {
    unsigned distance = name.edit_distance(candidate, true, bestDistance);
    if (distance < bestDistance) {
      bestDistance = distance;
      best = candidate;
    }
  }
  return best.empty() ? "" : (" (did you mean '" + best + "'?)").str();
}

std::string mlir::titan::tomlLocation(llvm::StringRef file,
                                      const toml::node &node) {
  const toml::source_region &source = node.source();
  if (!source.begin)
    return file.str() + ": ";
  return llvm::formatv("{0}:{1}: ", file, source.begin.line).str();
}

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

mlir::titan::TomlFallback::~TomlFallback() = default;

/// Whether every element of `array` is a string.
static bool isArrayOfStrings(const toml::array &array) {
  return llvm::all_of(
      array, [](const toml::node &element) { return element.is_string(); });
}

/// The strings of an array of strings.
static std::vector<std::string> toStrings(const toml::array &array) {
  std::vector<std::string> strings;
  for (const toml::node &element : array)
    strings.push_back(*element.value<std::string>());
  return strings;
}

llvm::Error mlir::titan::assignTomlValue(const TomlTarget &target,
                                         const toml::node &node,
                                         llvm::StringRef key,
                                         llvm::StringRef file) {
  auto typeError = [&](llvm::StringRef expected) {
    return error(tomlLocation(file, node) + "'" + key + "' must be " +
                 expected);
  };
  if (auto *text = std::get_if<std::string *>(&target)) {
    if (!node.is_string())
      return typeError("a string");
    **text = *node.value<std::string>();
  } else if (auto *integer = std::get_if<int64_t *>(&target)) {
    if (!node.is_integer())
      return typeError("an integer");
    **integer = *node.value<int64_t>();
  } else if (auto *maybeInteger =
                 std::get_if<std::optional<int64_t> *>(&target)) {
    if (!node.is_integer())
      return typeError("an integer");
    **maybeInteger = *node.value<int64_t>();
  } else if (auto *number = std::get_if<double *>(&target)) {
    if (!node.is_number())
      return typeError("a number");
    **number = *node.value<double>();
  } else if (auto *maybe = std::get_if<std::optional<double> *>(&target)) {
    if (!node.is_number())
      return typeError("a number");
    **maybe = *node.value<double>();
  } else if (auto *flag = std::get_if<bool *>(&target)) {
    if (!node.is_boolean())
      return typeError("true or false");
    **flag = *node.value<bool>();
  } else if (auto *maybeFlag = std::get_if<std::optional<bool> *>(&target)) {
    if (!node.is_boolean())
      return typeError("true or false");
    **maybeFlag = *node.value<bool>();
  } else if (auto *numbers = std::get_if<std::vector<double> *>(&target)) {
    const toml::array *array = node.as_array();
    if (!array || !llvm::all_of(*array, [](const toml::node &element) {
          return element.is_number();
        }))
      return typeError("an array of numbers");
    (*numbers)->clear();
    for (const toml::node &element : *array)
      (*numbers)->push_back(*element.value<double>());
  } else if (auto *strings = std::get_if<std::vector<std::string> *>(&target)) {
    const toml::array *array = node.as_array();
    if (!array || !isArrayOfStrings(*array))
      return typeError("an array of strings");
    **strings = toStrings(*array);
  } else if (auto *lists = std::get_if<std::vector<std::vector<std::string>> *>(
                 &target)) {
    const toml::array *array = node.as_array();
    if (!array || !llvm::all_of(*array, [](const toml::node &element) {
          const toml::array *inner = element.as_array();
          return inner && isArrayOfStrings(*inner);
        }))
      return typeError("an array of arrays of strings");
    (*lists)->clear();
    for (const toml::node &element : *array)
      (*lists)->push_back(toStrings(*element.as_array()));
  }
  return llvm::Error::success();
}

/// " (did you mean 'x'?)" over `known` and the fallback's names under
/// `prefix`.
static std::string suggestWithFallback(llvm::StringRef name,
                                       llvm::ArrayRef<llvm::StringRef> known,
                                       const TomlFallback *fallback,
                                       llvm::StringRef prefix) {
  std::vector<std::string> extra;
  if (fallback)
    extra = fallback->getNamesUnder(prefix);
  std::vector<llvm::StringRef> candidates(known.begin(), known.end());
  candidates.insert(candidates.end(), extra.begin(), extra.end());
  return suggestName(name, candidates);
}

/// Gives `fallback` the key `qualified` (a key, or a table of keys, of the
/// fallback), or the error of an unknown key with the names beside it
/// (`known` and the fallback's under `prefix`).
static llvm::Error takeFallback(llvm::StringRef prefix, llvm::StringRef name,
                                const toml::node &value,
                                llvm::ArrayRef<llvm::StringRef> known,
                                TomlFallback *fallback, llvm::StringRef file) {
  std::string qualified = (prefix + "." + name).str();
  if (fallback && fallback->isKey(qualified))
    return fallback->take(qualified, value, file);
  if (fallback && fallback->isTable(qualified)) {
    const toml::table *table = value.as_table();
    if (!table)
      return error(tomlLocation(file, value) + "'" + qualified +
                   "' must be a table ([" + qualified + "])");
    for (const auto &[keyName, keyValue] : *table)
      if (llvm::Error e = takeFallback(qualified, keyName.str(), keyValue, {},
                                       fallback, file))
        return e;
    return llvm::Error::success();
  }
  return error(tomlLocation(file, value) + "unknown key '" + qualified + "'" +
               suggestWithFallback(name, known, fallback, prefix));
}

llvm::Error mlir::titan::applyTomlSchema(const toml::table &root,
                                         llvm::ArrayRef<TomlSection> sections,
                                         llvm::StringRef file,
                                         TomlFallback *fallback) {
  std::vector<llvm::StringRef> sectionNames;
  for (const TomlSection &section : sections)
    sectionNames.push_back(section.name);
  for (const auto &[sectionName, sectionNode] : root) {
    llvm::StringRef name(sectionName.str());
    auto section = llvm::find_if(
        sections, [&](const TomlSection &s) { return name == s.name; });
    bool fallbackSection =
        section == sections.end() && fallback && fallback->isTable(name);
    if (section == sections.end() && !fallbackSection)
      return error(tomlLocation(file, sectionNode) + "unknown section [" +
                   name + "]" +
                   suggestWithFallback(name, sectionNames, fallback, ""));
    const toml::table *table = sectionNode.as_table();
    if (!table)
      return error(tomlLocation(file, sectionNode) + "'" + name +
                   "' must be a section ([" + name + "])");
    std::vector<llvm::StringRef> keyNames;
    if (!fallbackSection)
      for (const TomlKey &key : section->keys)
        keyNames.push_back(key.name);
    for (const auto &[keyName, value] : *table) {
      llvm::StringRef keyText(keyName.str());
      const TomlKey *key = nullptr;
      if (!fallbackSection) {
        auto found = llvm::find_if(
            section->keys, [&](const TomlKey &k) { return keyText == k.name; });
        if (found != section->keys.end())
          key = &*found;
      }
      llvm::Error e =
          key ? assignTomlValue(key->target, value,
                                (name + "." + keyText).str(), file)
              : takeFallback(name, keyText, value, keyNames, fallback, file);
      if (e)
        return e;
    }
  }
  return llvm::Error::success();
}
