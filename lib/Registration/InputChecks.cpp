//===- InputChecks.cpp - Inputs the upstream parser cannot take -----------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Support/InputChecks.h"

#include "llvm/ADT/StringExtras.h"

/// Prints `file:line:col: error: ` for offset `at` of `buffer`.
static llvm::raw_ostream &errorAt(llvm::MemoryBufferRef buffer, size_t at,
                                  llvm::raw_ostream &os) {
  llvm::StringRef before = buffer.getBuffer().take_front(at);
  size_t line = before.count('\n') + 1;
  size_t lineStart = before.rfind('\n');
  size_t column =
      at - (lineStart == llvm::StringRef::npos ? 0 : lineStart + 1) + 1;
  return os << buffer.getBufferIdentifier() << ":" << line << ":" << column
            << ": error: ";
}

/// The parser recurses once per nesting level of types and attributes and
/// has no limit: some tens of thousands of levels overflow the stack.
/// Brackets are counted outside strings and `//` comments; `>` of `->` is
/// an arrow, not a closer.
static bool checkNesting(llvm::MemoryBufferRef buffer, llvm::raw_ostream &os) {
  constexpr int kMaxDepth = 1000;
  llvm::StringRef text = buffer.getBuffer();
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      size_t end = text.find('\n', i);
      i = end == llvm::StringRef::npos ? text.size() : end;
      continue;
    }
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"' && text[i] != '\n'; ++i)
        if (text[i] == '\\')
          ++i;
      continue;
    }
    if (c == '(' || c == '[' || c == '{' || c == '<') {
      if (++depth > kMaxDepth) {
        errorAt(buffer, i, os)
            << "brackets nested more than " << kMaxDepth
            << " levels deep: MLIR's parser recurses once per level and "
               "would overflow the stack\n";
        return false;
      }
    } else if ((c == ')' || c == ']' || c == '}' ||
                (c == '>' && (i == 0 || text[i - 1] != '-'))) &&
               depth > 0) {
      --depth;
    }
  }
  return true;
}

bool hesper::checkParserCrashes(llvm::MemoryBufferRef buffer,
                                llvm::raw_ostream &os) {
  if (!checkNesting(buffer, os))
    return false;
  llvm::StringRef text = buffer.getBuffer();
  size_t at = 0;
  while ((at = text.find("array<", at)) != llvm::StringRef::npos) {
    size_t p = at + 6;
    while (p < text.size() && llvm::isSpace(text[p]))
      ++p;
    bool isIndex = text.substr(p).starts_with("index") &&
                   (p + 5 >= text.size() || !llvm::isAlnum(text[p + 5]));
    if (isIndex) {
      errorAt(buffer, at, os)
          << "'array<index ...>' is not accepted: MLIR 22's parser crashes "
             "on dense arrays of index (an upstream bug); write "
             "array<i64: ...>\n";
      return false;
    }
    at = p;
  }
  return true;
}
