//===- Tokenizer.cpp - bytes and Hugging Face byte-level BPE -------------===//
//
// The byte-level BPE of Hugging Face's `tokenizers` for the GPT-2, Llama 3
// and Qwen2 tokenizer.json files, written from the published algorithm:
//
//   text -> split on added tokens (not normalized ones) -> NFC (if the
//   normalizer says so) -> split on normalized added tokens -> pre-tokens
//   (the regex splits, as hand-written matchers) -> bytes -> BPE (lowest
//   merge rank first, leftmost on ties) -> ids.
//
// ByteLevel maps every byte to a printable character (GPT-2's
// bytes_to_unicode) before BPE; the vocabulary and merges are spelled in
// those characters. This file maps the vocabulary back to raw bytes once at
// load and runs BPE on the bytes themselves.
//
//===----------------------------------------------------------------------===//

#include "data/Tokenizer.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <functional>
#include <queue>

namespace titan::rt {

namespace {

//===----------------------------------------------------------------------===//
// Unicode: UTF-8, character classes, NFC
//===----------------------------------------------------------------------===//

struct CodePointRange {
  uint32_t first, last;
};
struct CombiningClassRange {
  uint32_t first, last;
  uint8_t ccc;
};
struct Decomposition {
  uint32_t codePoint, offset, length;
};
struct Composition {
  uint32_t first, second, composite;
};

#include "UnicodeTables.inc"

/// The code point of a byte that is not valid UTF-8.
constexpr uint32_t kInvalid = 0xFFFFFFFF;

/// The classes the pre-tokenizer regexes distinguish.
enum class CharClass : uint8_t { Letter, Number, Space, Other };

struct Char {
  uint32_t cp;
  uint32_t len;
  CharClass cls;
};

/// Decodes the UTF-8 character at `s[i]` (i < s.size()): a byte that does
/// not start a valid sequence (overlong, surrogate, past U+10FFFF or cut
/// short) is one character kInvalid.
inline uint32_t decodeUtf8(std::string_view s, size_t i, uint32_t &len) {
  unsigned char b0 = s[i];
  len = 1;
  if (b0 < 0x80)
    return b0;
  size_t n = s.size() - i;
  auto cont = [&](size_t k) {
    return k < n && (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
  };
  auto byte = [&](size_t k) {
    return static_cast<uint32_t>(static_cast<unsigned char>(s[i + k]) & 0x3F);
  };
  if (b0 >= 0xC2 && b0 <= 0xDF && cont(1)) {
    len = 2;
    return ((b0 & 0x1F) << 6) | byte(1);
  }
  if (b0 >= 0xE0 && b0 <= 0xEF && cont(1) && cont(2)) {
    uint32_t cp = ((b0 & 0x0F) << 12) | (byte(1) << 6) | byte(2);
    if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))
      return kInvalid;
    len = 3;
    return cp;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4 && cont(1) && cont(2) && cont(3)) {
    uint32_t cp =
        ((b0 & 0x07) << 18) | (byte(1) << 12) | (byte(2) << 6) | byte(3);
    if (cp < 0x10000 || cp > 0x10FFFF)
      return kInvalid;
    len = 4;
    return cp;
  }
  return kInvalid;
}

void appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

template <size_t N>
bool inRanges(const CodePointRange (&ranges)[N], uint32_t cp) {
  const CodePointRange *it = std::upper_bound(
      std::begin(ranges), std::end(ranges), cp,
      [](uint32_t c, const CodePointRange &r) { return c < r.first; });
  return it != std::begin(ranges) && cp <= (it - 1)->last;
}

/// Unicode's White_Space property: what `\s` matches in Oniguruma (the
/// regex engine of `tokenizers`) and what Rust's char::is_whitespace tests.
bool isWhiteSpace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

CharClass classifySlow(uint32_t cp) {
  if (cp == kInvalid)
    return CharClass::Other;
  if (isWhiteSpace(cp))
    return CharClass::Space;
  if (inRanges(LetterRanges, cp))
    return CharClass::Letter;
  if (inRanges(NumberRanges, cp))
    return CharClass::Number;
  return CharClass::Other;
}

/// The class of every code point of the Basic Multilingual Plane.
const std::array<CharClass, 0x10000> &bmpClasses() {
  static const auto *table = [] {
    auto *t = new std::array<CharClass, 0x10000>();
    for (uint32_t cp = 0; cp < 0x10000; ++cp)
      (*t)[cp] = classifySlow(cp);
    return t;
  }();
  return *table;
}

inline CharClass classify(uint32_t cp) {
  if (cp < 0x10000)
    return bmpClasses()[cp];
  return classifySlow(cp);
}

inline Char charAt(std::string_view s, size_t i) {
  Char c;
  c.cp = decodeUtf8(s, i, c.len);
  c.cls = classify(c.cp);
  return c;
}

uint8_t combiningClass(uint32_t cp) {
  if (cp < 0x300 || cp == kInvalid)
    return 0;
  const CombiningClassRange *it = std::upper_bound(
      std::begin(CombiningClasses), std::end(CombiningClasses), cp,
      [](uint32_t c, const CombiningClassRange &r) { return c < r.first; });
  if (it == std::begin(CombiningClasses) || cp > (it - 1)->last)
    return 0;
  return (it - 1)->ccc;
}

constexpr uint32_t kHangulBase = 0xAC00, kHangulCount = 11172;
constexpr uint32_t kJamoL = 0x1100, kJamoV = 0x1161, kJamoT = 0x11A7;
constexpr uint32_t kJamoLCount = 19, kJamoVCount = 21, kJamoTCount = 28;

void decompose(uint32_t cp, std::vector<uint32_t> &out) {
  if (cp >= kHangulBase && cp < kHangulBase + kHangulCount) {
    uint32_t s = cp - kHangulBase;
    out.push_back(kJamoL + s / (kJamoVCount * kJamoTCount));
    out.push_back(kJamoV + (s % (kJamoVCount * kJamoTCount)) / kJamoTCount);
    if (s % kJamoTCount)
      out.push_back(kJamoT + s % kJamoTCount);
    return;
  }
  if (cp >= 0xC0 && cp != kInvalid) {
    const Decomposition *it = std::lower_bound(
        std::begin(Decompositions), std::end(Decompositions), cp,
        [](const Decomposition &d, uint32_t c) { return d.codePoint < c; });
    if (it != std::end(Decompositions) && it->codePoint == cp) {
      out.insert(out.end(), DecompositionData + it->offset,
                 DecompositionData + it->offset + it->length);
      return;
    }
  }
  out.push_back(cp);
}

/// The primary composite of `first` and `second`, or kInvalid.
uint32_t compose(uint32_t first, uint32_t second) {
  if (first >= kJamoL && first < kJamoL + kJamoLCount && second >= kJamoV &&
      second < kJamoV + kJamoVCount)
    return kHangulBase +
           ((first - kJamoL) * kJamoVCount + (second - kJamoV)) * kJamoTCount;
  if (first >= kHangulBase && first < kHangulBase + kHangulCount &&
      (first - kHangulBase) % kJamoTCount == 0 && second > kJamoT &&
      second < kJamoT + kJamoTCount)
    return first + (second - kJamoT);
  const Composition *it = std::lower_bound(
      std::begin(Compositions), std::end(Compositions),
      std::make_pair(first, second),
      [](const Composition &c, const std::pair<uint32_t, uint32_t> &key) {
        return std::make_pair(c.first, c.second) < key;
      });
  if (it != std::end(Compositions) && it->first == first &&
      it->second == second)
    return it->composite;
  return kInvalid;
}

//===----------------------------------------------------------------------===//
// Pre-tokenizer regexes as code
//===----------------------------------------------------------------------===//

/// The regexes of Split pre-tokenizers this file implements.
enum class Pattern { Gpt2, Llama3, Qwen2 };

// The patterns as tokenizer.json spells them (JSON-unescaped).
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// Without the final `|\s+`: the whitespace it would match is left between
// matches, which Isolated keeps as a split of its own, so the splits are
// the same.
constexpr std::string_view kGpt2PatternShort =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr std::string_view kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::optional<Pattern> patternFromRegex(std::string_view regex) {
  if (regex == kGpt2Pattern || regex == kGpt2PatternShort)
    return Pattern::Gpt2;
  if (regex == kLlama3Pattern)
    return Pattern::Llama3;
  if (regex == kQwen2Pattern)
    return Pattern::Qwen2;
  return std::nullopt;
}

std::optional<Pattern> patternFromName(std::string_view name) {
  if (name == "gpt2")
    return Pattern::Gpt2;
  if (name == "llama3")
    return Pattern::Llama3;
  if (name == "qwen2")
    return Pattern::Qwen2;
  return std::nullopt;
}

const char *patternName(Pattern p) {
  switch (p) {
  case Pattern::Gpt2:
    return "gpt2";
  case Pattern::Llama3:
    return "llama3";
  case Pattern::Qwen2:
    return "qwen2";
  }
  return "?";
}

/// The end of the run of characters of class `cls` that starts at `i`.
inline size_t runEnd(std::string_view s, size_t i, CharClass cls) {
  while (i < s.size()) {
    Char c = charAt(s, i);
    if (c.cls != cls)
      break;
    i += c.len;
  }
  return i;
}

/// `\s+(?!\S)|\s+` at `i` (a space character): the whole run of whitespace
/// when it ends the text or is one character, else all of it but its last
/// character (which the next match takes with what follows).
inline size_t whitespaceEnd(std::string_view s, size_t i) {
  size_t last = i, count = 0;
  while (i < s.size()) {
    Char c = charAt(s, i);
    if (c.cls != CharClass::Space)
      break;
    last = i;
    i += c.len;
    ++count;
  }
  if (i == s.size() || count == 1)
    return i;
  return last;
}

/// The end of GPT-2's match at `i`:
///   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|
///   \s+(?!\S)|\s+
size_t matchGpt2(std::string_view s, size_t i) {
  Char c0 = charAt(s, i);
  size_t p1 = i + c0.len;
  if (c0.cp == '\'' && p1 < s.size()) {
    char a = s[p1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd')
      return p1 + 1;
    if (p1 + 1 < s.size()) {
      char b = s[p1 + 1];
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') ||
          (a == 'l' && b == 'l'))
        return p1 + 2;
    }
  }
  if (c0.cp == ' ' && p1 < s.size()) {
    Char c1 = charAt(s, p1);
    if (c1.cls != CharClass::Space)
      return runEnd(s, p1, c1.cls);
  }
  if (c0.cls != CharClass::Space)
    return runEnd(s, i, c0.cls);
  return whitespaceEnd(s, i);
}

inline bool isNewline(uint32_t cp) { return cp == '\r' || cp == '\n'; }

/// The end of Llama 3's match at `i` (Qwen2's with `maxDigits` 1):
///   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
///   ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
size_t matchLlama3(std::string_view s, size_t i, int maxDigits) {
  Char c0 = charAt(s, i);
  size_t p1 = i + c0.len;
  // (?i:'s|'t|'re|'ve|'m|'ll|'d): case folding also matches U+017F (long s)
  // for s.
  if (c0.cp == '\'' && p1 < s.size()) {
    Char c1 = charAt(s, p1);
    uint32_t a = c1.cp < 0x80 ? (c1.cp | 0x20) : c1.cp;
    if (a == 's' || a == 't' || a == 'm' || a == 'd' || c1.cp == 0x17F)
      return p1 + c1.len;
    if (c1.cp < 0x80 && p1 + 1 < s.size()) {
      char b = static_cast<char>(s[p1 + 1] | 0x20);
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') ||
          (a == 'l' && b == 'l'))
        return p1 + 2;
    }
  }
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (c0.cls == CharClass::Letter)
    return runEnd(s, i, CharClass::Letter);
  if (!isNewline(c0.cp) && c0.cls != CharClass::Number && p1 < s.size()) {
    Char c1 = charAt(s, p1);
    if (c1.cls == CharClass::Letter)
      return runEnd(s, p1, CharClass::Letter);
  }
  // \p{N}{1,3}
  if (c0.cls == CharClass::Number) {
    size_t end = p1;
    for (int n = 1; n < maxDigits && end < s.size(); ++n) {
      Char c = charAt(s, end);
      if (c.cls != CharClass::Number)
        break;
      end += c.len;
    }
    return end;
  }
  // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
  size_t start = std::string_view::npos;
  if (c0.cp == ' ' && p1 < s.size() && charAt(s, p1).cls == CharClass::Other)
    start = p1;
  else if (c0.cls == CharClass::Other)
    start = i;
  if (start != std::string_view::npos) {
    size_t end = runEnd(s, start, CharClass::Other);
    while (end < s.size() && (s[end] == '\r' || s[end] == '\n'))
      ++end;
    return end;
  }
  // \s*[\r\n]+: through the last newline of the whitespace run.
  size_t end = i, lastNewline = std::string_view::npos;
  while (end < s.size()) {
    Char c = charAt(s, end);
    if (c.cls != CharClass::Space)
      break;
    if (isNewline(c.cp))
      lastNewline = end;
    end += c.len;
  }
  if (lastNewline != std::string_view::npos)
    return lastNewline + 1;
  // \s+(?!\S)|\s+
  return whitespaceEnd(s, i);
}

/// Calls `f` on each pre-token of `s` under `pattern`.
template <typename F>
void forEachPreToken(Pattern pattern, std::string_view s, F &&f) {
  size_t i = 0;
  while (i < s.size()) {
    size_t end = s.size();
    switch (pattern) {
    case Pattern::Gpt2:
      end = matchGpt2(s, i);
      break;
    case Pattern::Llama3:
      end = matchLlama3(s, i, 3);
      break;
    case Pattern::Qwen2:
      end = matchLlama3(s, i, 1);
      break;
    }
    assert(end > i && "every pattern matches every character");
    f(s.substr(i, end - i));
    i = end;
  }
}

//===----------------------------------------------------------------------===//
// Byte-level mapping
//===----------------------------------------------------------------------===//

/// GPT-2's bytes_to_unicode: the printable bytes map to themselves, the
/// others (control characters, space, 0x7F-0xA0, 0xAD) to U+0100 onwards in
/// byte order.
std::array<uint32_t, 256> byteToCodePoint() {
  std::array<uint32_t, 256> table{};
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
                     (b >= 0xAE && b <= 0xFF);
    table[b] = printable ? b : next++;
  }
  return table;
}

/// The raw bytes of a token spelled in byte-level characters, or nullopt
/// when it has a character outside the 256 of the table.
std::optional<std::string>
byteLevelToBytes(std::string_view token,
                 const std::unordered_map<uint32_t, uint8_t> &charToByte) {
  std::string bytes;
  bytes.reserve(token.size());
  for (size_t i = 0; i < token.size();) {
    uint32_t len;
    uint32_t cp = decodeUtf8(token, i, len);
    auto it = charToByte.find(cp);
    if (it == charToByte.end())
      return std::nullopt;
    bytes += static_cast<char>(it->second);
    i += len;
  }
  return bytes;
}

//===----------------------------------------------------------------------===//
// Added tokens
//===----------------------------------------------------------------------===//

struct AddedToken {
  std::string content;
  int64_t id = 0;
  bool singleWord = false, lstrip = false, rstrip = false;
  bool normalized = false, special = false;
};

/// A byte trie of added tokens: the longest one at a position.
class TokenTrie {
public:
  bool empty() const { return nodes.size() == 1; }

  void insert(std::string_view text, int32_t token) {
    if (text.empty())
      return;
    firstBytes[static_cast<unsigned char>(text[0])] = true;
    int32_t node = 0;
    for (char ch : text) {
      auto c = static_cast<unsigned char>(ch);
      int32_t child = -1;
      for (auto [b, n] : nodes[node].children)
        if (b == c)
          child = n;
      if (child < 0) {
        child = static_cast<int32_t>(nodes.size());
        nodes[node].children.push_back({c, child});
        nodes.emplace_back();
      }
      node = child;
    }
    nodes[node].token = token;
  }

  /// The length of the longest token that starts at `s[i]` and sets
  /// `token`; 0 when none does.
  size_t longestAt(std::string_view s, size_t i, int32_t &token) const {
    if (!firstBytes[static_cast<unsigned char>(s[i])])
      return 0;
    size_t best = 0;
    int32_t node = 0;
    for (size_t j = i; j < s.size(); ++j) {
      auto c = static_cast<unsigned char>(s[j]);
      int32_t child = -1;
      for (auto [b, n] : nodes[node].children)
        if (b == c)
          child = n;
      if (child < 0)
        break;
      node = child;
      if (nodes[node].token >= 0) {
        best = j + 1 - i;
        token = nodes[node].token;
      }
    }
    return best;
  }

private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> children;
    int32_t token = -1;
  };
  std::vector<Node> nodes{1};
  std::array<bool, 256> firstBytes{};
};

bool isWordChar(uint32_t cp) {
  CharClass c = classify(cp);
  return c == CharClass::Letter || c == CharClass::Number || cp == '_';
}

/// The code point that ends `s` (non-empty).
uint32_t lastCodePoint(std::string_view s, size_t &start) {
  start = s.size() - 1;
  while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80 &&
         s.size() - start < 4)
    --start;
  uint32_t len;
  uint32_t cp = decodeUtf8(s, start, len);
  if (start + len != s.size()) {
    start = s.size() - 1;
    return kInvalid;
  }
  return cp;
}

} // namespace

//===----------------------------------------------------------------------===//
// Tokenizer, ByteTokenizer
//===----------------------------------------------------------------------===//

Tokenizer::~Tokenizer() = default;

void ByteTokenizer::encode(std::string_view text, std::vector<int64_t> &ids) {
  ids.reserve(ids.size() + text.size());
  for (char c : text)
    ids.push_back(static_cast<unsigned char>(c));
}

std::string ByteTokenizer::decode(const std::vector<int64_t> &ids) const {
  std::string text;
  for (int64_t id : ids)
    if (id >= 0 && id < 256)
      text += static_cast<char>(id);
  return text;
}

//===----------------------------------------------------------------------===//
// NFC
//===----------------------------------------------------------------------===//

std::string normalizeNfc(std::string_view text) {
  // Below U+0300 no character changes under NFC or combines with the one
  // before it.
  bool simple = true;
  for (size_t i = 0; i < text.size() && simple;) {
    uint32_t len;
    uint32_t cp = decodeUtf8(text, i, len);
    simple = cp < 0x300;
    i += len;
  }
  if (simple)
    return std::string(text);

  // Canonical decomposition (invalid bytes are kept as kInvalid | byte).
  std::vector<uint32_t> cps;
  cps.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t len;
    uint32_t cp = decodeUtf8(text, i, len);
    if (cp == kInvalid)
      cps.push_back(0x80000000u | static_cast<unsigned char>(text[i]));
    else
      decompose(cp, cps);
    i += len;
  }
  auto ccc = [](uint32_t cp) {
    return (cp & 0x80000000u) ? uint8_t(0) : combiningClass(cp);
  };
  // Canonical ordering: a stable sort of each run of non-starters by class.
  for (size_t i = 0; i < cps.size();) {
    if (ccc(cps[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cps.size() && ccc(cps[j]) != 0)
      ++j;
    std::stable_sort(cps.begin() + i, cps.begin() + j,
                     [&](uint32_t a, uint32_t b) { return ccc(a) < ccc(b); });
    i = j;
  }
  // Canonical composition.
  std::vector<uint32_t> out;
  out.reserve(cps.size());
  size_t starter = std::string::npos;
  int lastClass = 256;
  for (uint32_t cp : cps) {
    int cls = ccc(cp);
    if (starter != std::string::npos && !(out[starter] & 0x80000000u) &&
        !(cp & 0x80000000u) && (lastClass < cls || lastClass == 0)) {
      uint32_t composite = compose(out[starter], cp);
      if (composite != kInvalid) {
        out[starter] = composite;
        continue;
      }
    }
    if (cls == 0)
      starter = out.size();
    lastClass = cls;
    out.push_back(cp);
  }
  std::string result;
  result.reserve(text.size());
  for (uint32_t cp : out) {
    if (cp & 0x80000000u)
      result += static_cast<char>(cp & 0xFF);
    else
      appendUtf8(result, cp);
  }
  return result;
}

std::vector<std::string_view> splitPreTokens(std::string_view pattern,
                                             std::string_view text) {
  std::vector<std::string_view> pieces;
  std::optional<Pattern> p = patternFromName(pattern);
  if (!p)
    return pieces;
  forEachPreToken(*p, text, [&](std::string_view s) { pieces.push_back(s); });
  return pieces;
}

//===----------------------------------------------------------------------===//
// BpeTokenizer
//===----------------------------------------------------------------------===//

struct BpeTokenizer::Impl {
  /// One step of the pre-tokenizer: a Split, or the final ByteLevel.
  struct Step {
    bool byteLevel = false;
    bool addPrefixSpace = false;
    Pattern pattern = Pattern::Gpt2;
    bool split = true;
  };

  std::vector<Step> steps;
  bool nfc = false;

  /// The vocabulary as byte-level spellings and as raw bytes.
  std::unordered_map<std::string, int64_t> vocab;
  std::unordered_map<std::string, int64_t> rawVocab;
  /// id -> raw bytes (or an added token's text), for decode.
  std::unordered_map<int64_t, std::string> idToText;
  std::array<int32_t, 256> byteIds{};
  /// (left id << 32 | right id) -> (rank << 32 | merged id).
  std::unordered_map<uint64_t, uint64_t> merges;
  bool ignoreMerges = false;
  std::optional<int64_t> unkId;
  bool fuseUnk = false;

  std::vector<AddedToken> added;
  std::unordered_map<std::string, int64_t> addedIds;
  TokenTrie rawTrie, normalizedTrie;

  /// BPE results per pre-token (raw bytes), ids in `cacheIds`.
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>> cache;
  std::vector<int32_t> cacheIds;
  std::string scratchKey;

  void splitAdded(const TokenTrie &trie, std::string_view s,
                  const std::function<void(std::string_view, int32_t)> &f);
  void encodeNormalized(std::string_view s, std::vector<int64_t> &ids);
  void preTokenize(std::string_view s, size_t step, std::vector<int64_t> &ids);
  void bpe(std::string_view word, std::vector<int64_t> &ids);
  void mergeWord(std::string_view word, std::vector<int32_t> &out) const;
};

/// Splits `s` on the added tokens of `trie` as `tokenizers`'
/// AddedVocabulary does: leftmost-longest matches, single_word, lstrip and
/// rstrip; `f(piece, -1)` for the text between them, `f(text, index)` for a
/// token.
void BpeTokenizer::Impl::splitAdded(
    const TokenTrie &trie, std::string_view s,
    const std::function<void(std::string_view, int32_t)> &f) {
  if (trie.empty()) {
    f(s, -1);
    return;
  }
  size_t done = 0, i = 0;
  while (i < s.size()) {
    int32_t index = -1;
    size_t len = trie.longestAt(s, i, index);
    if (len == 0) {
      ++i;
      continue;
    }
    size_t start = i, stop = i + len;
    const AddedToken &token = added[index];
    if (token.singleWord) {
      size_t before;
      bool startOk =
          start == 0 || !isWordChar(lastCodePoint(s.substr(0, start), before));
      bool stopOk = stop == s.size() || !isWordChar(charAt(s, stop).cp);
      if (!startOk || !stopOk) {
        i = stop;
        continue;
      }
    }
    if (token.lstrip) {
      size_t newStart = start;
      while (newStart > 0) {
        size_t before;
        uint32_t cp = lastCodePoint(s.substr(0, newStart), before);
        if (cp == kInvalid || !isWhiteSpace(cp))
          break;
        newStart = before;
      }
      start = std::max(newStart, done);
    }
    if (token.rstrip) {
      while (stop < s.size()) {
        Char c = charAt(s, stop);
        if (!isWhiteSpace(c.cp))
          break;
        stop += c.len;
      }
    }
    if (done < start)
      f(s.substr(done, start - done), -1);
    f(s.substr(start, stop - start), index);
    done = i = stop;
  }
  if (done < s.size())
    f(s.substr(done), -1);
}

void BpeTokenizer::Impl::encodeNormalized(std::string_view s,
                                          std::vector<int64_t> &ids) {
  splitAdded(normalizedTrie, s, [&](std::string_view piece, int32_t index) {
    if (index >= 0)
      ids.push_back(added[index].id);
    else
      preTokenize(piece, 0, ids);
  });
}

void BpeTokenizer::Impl::preTokenize(std::string_view s, size_t step,
                                     std::vector<int64_t> &ids) {
  if (s.empty())
    return;
  if (step == steps.size()) {
    bpe(s, ids);
    return;
  }
  const Step &st = steps[step];
  std::string prefixed;
  if (st.byteLevel && st.addPrefixSpace && s[0] != ' ') {
    prefixed.reserve(s.size() + 1);
    prefixed += ' ';
    prefixed += s;
    s = prefixed;
  }
  if (!st.split) {
    preTokenize(s, step + 1, ids);
    return;
  }
  forEachPreToken(st.pattern, s, [&](std::string_view piece) {
    preTokenize(piece, step + 1, ids);
  });
}

void BpeTokenizer::Impl::bpe(std::string_view word, std::vector<int64_t> &ids) {
  std::string &key = scratchKey;
  key.assign(word);
  if (ignoreMerges) {
    auto it = rawVocab.find(key);
    if (it != rawVocab.end()) {
      ids.push_back(it->second);
      return;
    }
  }
  constexpr size_t kMaxCachedWord = 256;
  constexpr size_t kMaxCacheEntries = 1 << 20;
  bool cacheable = word.size() <= kMaxCachedWord;
  if (cacheable) {
    auto it = cache.find(key);
    if (it != cache.end()) {
      ids.insert(ids.end(), cacheIds.begin() + it->second.first,
                 cacheIds.begin() + it->second.first + it->second.second);
      return;
    }
  }
  std::vector<int32_t> out;
  mergeWord(word, out);
  ids.insert(ids.end(), out.begin(), out.end());
  if (cacheable) {
    if (cache.size() >= kMaxCacheEntries) {
      cache.clear();
      cacheIds.clear();
    }
    cache.emplace(key, std::make_pair(static_cast<uint32_t>(cacheIds.size()),
                                      static_cast<uint32_t>(out.size())));
    cacheIds.insert(cacheIds.end(), out.begin(), out.end());
  }
}

/// BPE on one pre-token: start from its bytes' ids; merge the pair of
/// lowest rank, leftmost first, until no pair has a merge.
void BpeTokenizer::Impl::mergeWord(std::string_view word,
                                   std::vector<int32_t> &out) const {
  struct Symbol {
    int32_t id;
    int32_t prev, next;
    bool alive;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  bool pendingUnk = false;
  for (char ch : word) {
    int32_t id = byteIds[static_cast<unsigned char>(ch)];
    if (id < 0) {
      // Not in the vocabulary: the unknown token (consecutive ones fused
      // when fuse_unk), or nothing.
      if (!unkId || (fuseUnk && pendingUnk))
        continue;
      id = static_cast<int32_t>(*unkId);
      pendingUnk = true;
    } else {
      pendingUnk = false;
    }
    int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, index - 1, index + 1, true});
  }
  if (symbols.empty())
    return;
  symbols.back().next = -1;

  struct Candidate {
    uint32_t rank;
    int32_t pos;
    int32_t newId;
    bool operator>(const Candidate &o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>,
                      std::greater<Candidate>>
      queue;
  auto lookup = [&](int32_t left, int32_t right, uint64_t &value) {
    auto it =
        merges.find((static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
                    static_cast<uint32_t>(right));
    if (it == merges.end())
      return false;
    value = it->second;
    return true;
  };
  auto push = [&](int32_t pos) {
    int32_t next = symbols[pos].next;
    uint64_t value;
    if (next >= 0 && lookup(symbols[pos].id, symbols[next].id, value))
      queue.push({static_cast<uint32_t>(value >> 32), pos,
                  static_cast<int32_t>(value & 0xFFFFFFFF)});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i)
    push(i);
  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol &left = symbols[top.pos];
    if (!left.alive || left.next < 0)
      continue;
    Symbol &right = symbols[left.next];
    uint64_t value;
    if (!lookup(left.id, right.id, value) ||
        static_cast<int32_t>(value & 0xFFFFFFFF) != top.newId ||
        static_cast<uint32_t>(value >> 32) != top.rank)
      continue;
    left.id = top.newId;
    right.alive = false;
    left.next = right.next;
    if (left.next >= 0)
      symbols[left.next].prev = top.pos;
    if (left.prev >= 0)
      push(left.prev);
    push(top.pos);
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next)
    out.push_back(symbols[i].id);
}

BpeTokenizer::BpeTokenizer() : impl(std::make_unique<Impl>()) {}
BpeTokenizer::~BpeTokenizer() = default;

void BpeTokenizer::encode(std::string_view text, std::vector<int64_t> &ids) {
  Impl &m = *impl;
  m.splitAdded(m.rawTrie, text, [&](std::string_view piece, int32_t index) {
    if (index >= 0) {
      ids.push_back(m.added[index].id);
    } else if (m.nfc) {
      std::string normalized = normalizeNfc(piece);
      m.encodeNormalized(normalized, ids);
    } else {
      m.encodeNormalized(piece, ids);
    }
  });
}

std::string BpeTokenizer::decode(const std::vector<int64_t> &ids) const {
  std::string text;
  for (int64_t id : ids) {
    auto it = impl->idToText.find(id);
    if (it != impl->idToText.end())
      text += it->second;
  }
  return text;
}

std::optional<int64_t> BpeTokenizer::tokenToId(std::string_view token) const {
  auto a = impl->addedIds.find(std::string(token));
  if (a != impl->addedIds.end())
    return a->second;
  auto v = impl->vocab.find(std::string(token));
  if (v != impl->vocab.end())
    return v->second;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Loading tokenizer.json
//===----------------------------------------------------------------------===//

namespace {

/// Error messages for one file.
struct Errors {
  const std::string &name;

  Status malformed(const std::string &what) const {
    return Status::invalidArgument("tokenizer '" + name + "': " + what);
  }
  Status unsupported(const std::string &what) const {
    return Status::unsupported(
        "tokenizer '" + name + "': " + what +
        " is not supported (titan reads the byte-level BPE tokenizer.json "
        "files of the GPT-2, Llama 3 and Qwen2 families; docs/data.md)");
  }
};

std::string typeOf(const llvm::json::Object &o) {
  if (std::optional<llvm::StringRef> t = o.getString("type"))
    return t->str();
  return "";
}

bool isNull(const llvm::json::Value *v) {
  return !v || v->kind() == llvm::json::Value::Null;
}

Status parseNormalizer(const llvm::json::Value *v, const Errors &err,
                       bool &nfc) {
  if (isNull(v))
    return Status::success();
  const llvm::json::Object *o = v->getAsObject();
  if (!o)
    return err.malformed("\"normalizer\" is not an object");
  std::string type = typeOf(*o);
  if (type == "NFC") {
    nfc = true;
    return Status::success();
  }
  if (type == "Sequence") {
    const llvm::json::Array *list = o->getArray("normalizers");
    if (!list)
      return err.malformed("normalizer Sequence without \"normalizers\"");
    for (const llvm::json::Value &item : *list)
      TITANRT_RETURN_IF_ERROR(parseNormalizer(&item, err, nfc));
    return Status::success();
  }
  return err.unsupported("normalizer '" + type + "' (only none and NFC are)");
}

Status parsePreTokenizer(const llvm::json::Value *v, const Errors &err,
                         std::vector<BpeTokenizer::Impl::Step> &steps) {
  if (isNull(v))
    return err.unsupported(
        "a BPE without a ByteLevel pre-tokenizer (SentencePiece-style, as "
        "Llama 2's)");
  const llvm::json::Object *o = v->getAsObject();
  if (!o)
    return err.malformed("\"pre_tokenizer\" is not an object");
  std::string type = typeOf(*o);
  if (type == "Sequence") {
    const llvm::json::Array *list = o->getArray("pretokenizers");
    if (!list)
      return err.malformed("pre_tokenizer Sequence without \"pretokenizers\"");
    for (const llvm::json::Value &item : *list) {
      const llvm::json::Object *io = item.getAsObject();
      if (io && typeOf(*io) == "Sequence")
        return err.unsupported("a pre_tokenizer Sequence in a Sequence");
      TITANRT_RETURN_IF_ERROR(parsePreTokenizer(&item, err, steps));
    }
    return Status::success();
  }
  BpeTokenizer::Impl::Step step;
  if (type == "ByteLevel") {
    step.byteLevel = true;
    step.addPrefixSpace = o->getBoolean("add_prefix_space").value_or(true);
    step.split = o->getBoolean("use_regex").value_or(true);
    step.pattern = Pattern::Gpt2;
    steps.push_back(step);
    return Status::success();
  }
  if (type == "Split") {
    const llvm::json::Object *pattern = o->getObject("pattern");
    std::optional<llvm::StringRef> regex =
        pattern ? pattern->getString("Regex") : std::nullopt;
    if (!regex) {
      if (pattern && pattern->getString("String"))
        return err.unsupported("a Split on a String pattern");
      return err.malformed("Split without a \"pattern\" {\"Regex\": ...}");
    }
    std::optional<llvm::StringRef> behavior = o->getString("behavior");
    if (!behavior || *behavior != "Isolated")
      return err.unsupported("Split behavior '" + behavior.value_or("").str() +
                             "' (only Isolated is)");
    if (o->getBoolean("invert").value_or(false))
      return err.unsupported("Split with invert true");
    std::optional<Pattern> p = patternFromRegex(*regex);
    if (!p)
      return err.unsupported(
          "Split regex '" + regex->str() +
          "' (only the regexes of GPT-2, Llama 3 and Qwen2 are: titan "
          "implements each as code)");
    step.pattern = *p;
    steps.push_back(step);
    return Status::success();
  }
  return err.unsupported("pre_tokenizer '" + type +
                         "' (only ByteLevel, Split and Sequence are)");
}

/// The text of a special token in tokenizer_config.json: a string or
/// {"content": string}; nullopt when absent or null.
std::optional<std::string> configToken(const llvm::json::Object &config,
                                       llvm::StringRef key) {
  const llvm::json::Value *v = config.get(key);
  if (isNull(v))
    return std::nullopt;
  if (std::optional<llvm::StringRef> s = v->getAsString())
    return s->str();
  if (const llvm::json::Object *o = v->getAsObject())
    if (std::optional<llvm::StringRef> s = o->getString("content"))
      return s->str();
  return std::nullopt;
}

} // namespace

Status BpeTokenizer::parse(std::string_view json, std::string_view configJson,
                           const std::string &name,
                           std::unique_ptr<BpeTokenizer> &tokenizer) {
  Errors err{name};
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse(llvm::StringRef(json.data(), json.size()));
  if (!parsed)
    return err.malformed(
        "malformed JSON: " + llvm::toString(parsed.takeError()) +
        " (a tokenizer.json of Hugging Face's tokenizers is "
        "needed; tiktoken and SentencePiece .model files "
        "are not read)");
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return err.malformed("the top level is not a JSON object");
  const llvm::json::Object *model = root->getObject("model");
  if (!model)
    return err.malformed("no \"model\" object");
  std::string type = typeOf(*model);
  if (type.empty() && model->get("merges"))
    type = "BPE"; // Old files leave out the type of a BPE model.
  if (type != "BPE")
    return err.unsupported("model type '" + type + "' (only BPE is)");

  std::unique_ptr<BpeTokenizer> tok(new BpeTokenizer());
  Impl &m = *tok->impl;

  for (const char *key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const llvm::json::Value *v = model->get(key);
    std::optional<llvm::StringRef> s = v ? v->getAsString() : std::nullopt;
    if (!isNull(v) && (!s || !s->empty()))
      return err.unsupported(std::string("model.") + key);
  }
  if (model->getBoolean("byte_fallback").value_or(false))
    return err.unsupported("model.byte_fallback true");
  if (const llvm::json::Value *d = model->get("dropout"); !isNull(d)) {
    std::optional<double> p = d->getAsNumber();
    if (!p || *p != 0.0)
      return err.unsupported("model.dropout (random merges)");
  }
  m.ignoreMerges = model->getBoolean("ignore_merges").value_or(false);
  m.fuseUnk = model->getBoolean("fuse_unk").value_or(false);

  TITANRT_RETURN_IF_ERROR(parseNormalizer(root->get("normalizer"), err, m.nfc));
  TITANRT_RETURN_IF_ERROR(
      parsePreTokenizer(root->get("pre_tokenizer"), err, m.steps));
  size_t byteLevels = 0;
  for (const Impl::Step &s : m.steps)
    byteLevels += s.byteLevel;
  if (byteLevels != 1 || !m.steps.back().byteLevel)
    return err.unsupported(
        "a pre_tokenizer that does not end in its one ByteLevel (the byte "
        "mapping)");
  for (const Impl::Step &s : m.steps)
    if (s.split)
      tok->patternNames.push_back(patternName(s.pattern));

  // The vocabulary.
  const llvm::json::Object *vocab = model->getObject("vocab");
  if (!vocab)
    return err.malformed("model.vocab is not an object");
  std::array<uint32_t, 256> byteChars = byteToCodePoint();
  std::unordered_map<uint32_t, uint8_t> charToByte;
  for (uint32_t b = 0; b < 256; ++b)
    charToByte[byteChars[b]] = static_cast<uint8_t>(b);
  int64_t maxId = -1;
  m.vocab.reserve(vocab->size());
  m.rawVocab.reserve(vocab->size());
  for (const auto &[key, value] : *vocab) {
    std::optional<int64_t> id = value.getAsInteger();
    if (!id || *id < 0 || *id > INT32_MAX)
      return err.malformed("model.vocab['" + key.str() +
                           "'] is not a token id");
    m.vocab[key.str()] = *id;
    if (std::optional<std::string> raw =
            byteLevelToBytes(key.str(), charToByte)) {
      m.rawVocab[*raw] = *id;
      m.idToText[*id] = *raw;
    } else {
      m.idToText[*id] = key.str();
    }
    maxId = std::max(maxId, *id);
  }
  for (uint32_t b = 0; b < 256; ++b) {
    auto it = m.rawVocab.find(std::string(1, static_cast<char>(b)));
    m.byteIds[b] =
        it == m.rawVocab.end() ? -1 : static_cast<int32_t>(it->second);
  }
  if (const llvm::json::Value *unk = model->get("unk_token"); !isNull(unk)) {
    std::optional<llvm::StringRef> s = unk->getAsString();
    auto it = s ? m.vocab.find(s->str()) : m.vocab.end();
    if (it == m.vocab.end())
      return err.malformed("model.unk_token is not in model.vocab");
    m.unkId = it->second;
  }

  // The merges: "a b" strings or [a, b] pairs; rank = position.
  const llvm::json::Array *merges = model->getArray("merges");
  if (!merges)
    return err.malformed("model.merges is not an array");
  m.merges.reserve(merges->size() * 2);
  for (size_t rank = 0; rank < merges->size(); ++rank) {
    const llvm::json::Value &entry = (*merges)[rank];
    std::string left, right;
    if (std::optional<llvm::StringRef> s = entry.getAsString()) {
      auto [a, b] = s->split(' ');
      if (!s->contains(' ') || b.contains(' '))
        return err.malformed("merge '" + s->str() + "' is not \"a b\"");
      left = a.str();
      right = b.str();
    } else if (const llvm::json::Array *pair = entry.getAsArray();
               pair && pair->size() == 2 && (*pair)[0].getAsString() &&
               (*pair)[1].getAsString()) {
      left = (*pair)[0].getAsString()->str();
      right = (*pair)[1].getAsString()->str();
    } else {
      return err.malformed("merge " + std::to_string(rank) +
                           " is neither \"a b\" nor [a, b]");
    }
    auto l = m.vocab.find(left), r = m.vocab.find(right),
         merged = m.vocab.find(left + right);
    if (l == m.vocab.end() || r == m.vocab.end() || merged == m.vocab.end())
      return err.malformed("merge '" + left + " " + right +
                           "' names a token that is not in model.vocab");
    m.merges[(static_cast<uint64_t>(l->second) << 32) |
             static_cast<uint64_t>(r->second)] =
        (static_cast<uint64_t>(rank) << 32) |
        static_cast<uint64_t>(merged->second);
  }

  // Added tokens.
  if (const llvm::json::Value *list = root->get("added_tokens");
      !isNull(list)) {
    const llvm::json::Array *array = list->getAsArray();
    if (!array)
      return err.malformed("\"added_tokens\" is not an array");
    for (const llvm::json::Value &item : *array) {
      const llvm::json::Object *o = item.getAsObject();
      std::optional<int64_t> id = o ? o->getInteger("id") : std::nullopt;
      std::optional<llvm::StringRef> content =
          o ? o->getString("content") : std::nullopt;
      if (!id || !content || *id < 0)
        return err.malformed("an added token without \"id\" and \"content\"");
      AddedToken t;
      t.content = content->str();
      t.id = *id;
      t.singleWord = o->getBoolean("single_word").value_or(false);
      t.lstrip = o->getBoolean("lstrip").value_or(false);
      t.rstrip = o->getBoolean("rstrip").value_or(false);
      t.special = o->getBoolean("special").value_or(false);
      t.normalized = o->getBoolean("normalized").value_or(!t.special);
      m.added.push_back(std::move(t));
    }
  }

  // BOS and EOS: tokenizer_config.json's bos_token and eos_token when there
  // is one (a token it names that the tokenizer lacks is added, as
  // torchtitan's add_special_tokens does), else known names.
  int64_t nextId = maxId;
  for (const AddedToken &t : m.added)
    nextId = std::max(nextId, t.id);
  ++nextId;
  auto findToken = [&](const std::string &text) -> std::optional<int64_t> {
    for (const AddedToken &t : m.added)
      if (t.content == text)
        return t.id;
    auto it = m.vocab.find(text);
    if (it != m.vocab.end())
      return it->second;
    return std::nullopt;
  };
  if (!configJson.empty()) {
    std::string configName =
        (llvm::sys::path::parent_path(name) + "/tokenizer_config.json").str();
    llvm::Expected<llvm::json::Value> config = llvm::json::parse(
        llvm::StringRef(configJson.data(), configJson.size()));
    if (!config)
      return Status::invalidArgument(
          "tokenizer config '" + configName +
          "': malformed JSON: " + llvm::toString(config.takeError()));
    const llvm::json::Object *co = config->getAsObject();
    if (!co)
      return Status::invalidArgument("tokenizer config '" + configName +
                                     "': the top level is not an object");
    for (auto [key, slot] : {std::pair{"bos_token", &tok->bos},
                             std::pair{"eos_token", &tok->eos}}) {
      std::optional<std::string> text = configToken(*co, key);
      if (!text)
        continue;
      std::optional<int64_t> id = findToken(*text);
      if (!id) {
        AddedToken t;
        t.content = *text;
        t.id = nextId++;
        t.special = true;
        m.added.push_back(t);
        id = t.id;
      }
      *slot = id;
    }
  } else {
    for (const char *text : {"<|begin_of_text|>", "<s>", "<bos>"})
      if (!tok->bos)
        tok->bos = findToken(text);
    for (const char *text :
         {"<|end_of_text|>", "</s>", "<|endoftext|>", "<eos>"})
      if (!tok->eos)
        tok->eos = findToken(text);
  }

  for (size_t i = 0; i < m.added.size(); ++i) {
    const AddedToken &t = m.added[i];
    (t.normalized ? m.normalizedTrie : m.rawTrie)
        .insert(t.content, static_cast<int32_t>(i));
    m.addedIds[t.content] = t.id;
    m.idToText[t.id] = t.content;
    maxId = std::max(maxId, t.id);
  }
  tok->vocabSize_ = maxId + 1;
  tokenizer = std::move(tok);
  return Status::success();
}

Status BpeTokenizer::load(const std::string &path,
                          std::unique_ptr<BpeTokenizer> &tokenizer) {
  std::string file = path;
  if (llvm::sys::fs::is_directory(path)) {
    llvm::SmallString<256> joined(path);
    llvm::sys::path::append(joined, "tokenizer.json");
    file = std::string(joined);
    if (!llvm::sys::fs::exists(file))
      return Status::io("tokenizer_path '" + path +
                        "' is a folder without tokenizer.json (titan reads "
                        "Hugging Face tokenizer.json files)");
  } else if (!llvm::sys::fs::exists(path)) {
    return Status::io("tokenizer_path '" + path + "' does not exist");
  }
  auto buffer = llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return Status::io("cannot read tokenizer '" + file +
                      "': " + buffer.getError().message());
  llvm::SmallString<256> configPath(llvm::sys::path::parent_path(file));
  llvm::sys::path::append(configPath, "tokenizer_config.json");
  std::unique_ptr<llvm::MemoryBuffer> config;
  if (llvm::sys::fs::exists(configPath)) {
    auto c = llvm::MemoryBuffer::getFile(configPath, false, false);
    if (!c)
      return Status::io("cannot read tokenizer config '" +
                        std::string(configPath) +
                        "': " + c.getError().message());
    config = std::move(*c);
  }
  llvm::StringRef text = (*buffer)->getBuffer();
  llvm::StringRef configText = config ? config->getBuffer() : "";
  return parse(std::string_view(text.data(), text.size()),
               std::string_view(configText.data(), configText.size()), file,
               tokenizer);
}

Status loadTokenizer(const std::string &path,
                     std::unique_ptr<Tokenizer> &tokenizer) {
  if (path.empty()) {
    tokenizer = std::make_unique<ByteTokenizer>();
    return Status::success();
  }
  std::unique_ptr<BpeTokenizer> bpe;
  TITANRT_RETURN_IF_ERROR(BpeTokenizer::load(path, bpe));
  tokenizer = std::move(bpe);
  return Status::success();
}

} // namespace titan::rt
