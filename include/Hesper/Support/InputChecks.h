//===- InputChecks.h - Inputs the upstream parser cannot take --*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Text that crashes MLIR 22's own parser, found before the parser sees it so
// that the tools answer with a diagnostic instead of a crash. Each entry is
// an upstream bug; remove it when Debian's MLIR has the fix.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_SUPPORT_INPUTCHECKS_H
#define HESPER_SUPPORT_INPUTCHECKS_H

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

namespace hesper {

/// Returns false, after printing `file:line:col: error: ...` to `os`, when
/// `buffer` holds text that MLIR 22's parser crashes on:
///   - `array<index ...>`: parseDenseArrayAttr has no element width for
///     `index` (it aborts on any dense array of index);
///   - brackets nested more than 1000 deep: the parser recurses once per
///     level, without a limit, and overflows the stack (found by the .mlir
///     fuzz harness: 18,779 nested function-type parentheses).
bool checkParserCrashes(llvm::MemoryBufferRef buffer, llvm::raw_ostream &os);

} // namespace hesper

#endif // HESPER_SUPPORT_INPUTCHECKS_H
