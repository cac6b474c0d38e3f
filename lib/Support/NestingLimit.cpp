//===- NestingLimit.cpp - how deeply MLIR text may nest -------------------===//

#include "titan/Support/NestingLimit.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

using namespace mlir::titan;

llvm::Error mlir::titan::checkMlirNestingDepth(llvm::MemoryBufferRef buffer,
                                               unsigned limit) {
  llvm::StringRef text = buffer.getBuffer();
  // Bytecode is not text (its reader bounds its own nesting).
  if (text.starts_with("ML\xefR"))
    return llvm::Error::success();
  unsigned depth = 0, line = 1;
  size_t lineStart = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    switch (c) {
    case '\n':
      ++line;
      lineStart = i + 1;
      break;
    case '"':
      // A string literal ends at the next unescaped quote (or the line).
      for (++i; i < text.size() && text[i] != '"' && text[i] != '\n'; ++i)
        if (text[i] == '\\')
          ++i;
      if (i < text.size() && text[i] == '\n')
        --i;
      break;
    case '/':
      if (text.substr(i).starts_with("//"))
        i = std::min(text.find('\n', i), text.size()) - 1;
      break;
    case '-':
      if (text.substr(i).starts_with("->"))
        ++i;
      break;
    case '{':
    case '(':
    case '[':
    case '<':
      if (++depth > limit)
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "%s:%u:%zu: the input nests deeper than %u levels (regions, "
            "brackets of types and attributes); titan refuses such input "
            "instead of overflowing the stack: flatten it",
            buffer.getBufferIdentifier().str().c_str(), line, i - lineStart + 1,
            limit);
      break;
    case '}':
    case ')':
    case ']':
    case '>':
      if (depth > 0)
        --depth;
      break;
    default:
      break;
    }
  }
  return llvm::Error::success();
}
