//===- InputChecks.cpp - Inputs the upstream parser cannot take -----------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Support/InputChecks.h"

#include "llvm/ADT/StringExtras.h"

bool hesper::checkParserCrashes(llvm::MemoryBufferRef buffer,
                                llvm::raw_ostream &os) {
  llvm::StringRef text = buffer.getBuffer();
  size_t at = 0;
  while ((at = text.find("array<", at)) != llvm::StringRef::npos) {
    size_t p = at + 6;
    while (p < text.size() && llvm::isSpace(text[p]))
      ++p;
    bool isIndex = text.substr(p).starts_with("index") &&
                   (p + 5 >= text.size() || !llvm::isAlnum(text[p + 5]));
    if (isIndex) {
      llvm::StringRef before = text.take_front(at);
      size_t line = before.count('\n') + 1;
      size_t lineStart = before.rfind('\n');
      size_t column =
          at - (lineStart == llvm::StringRef::npos ? 0 : lineStart + 1) + 1;
      os << buffer.getBufferIdentifier() << ":" << line << ":" << column
         << ": error: 'array<index ...>' is not accepted: MLIR 22's parser "
            "crashes on dense arrays of index (an upstream bug); write "
            "array<i64: ...>\n";
      return false;
    }
    at = p;
  }
  return true;
}
