//===- RunnerUtils.h - Printing for programs without MLIR's utilities -*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Execution. The functions gpu dialect programs call to
// print (printMemrefF32 and the other element types, their _mlir_ciface_
// forms, and vector.print's printI64, printF32, printOpen, ...), for a
// hesper-run that has no MLIR runner utilities to load: a release built
// by `make dist`, or --builtin-runner-utils. They print what MLIR's own
// print (the memref header line, nested brackets, the same separators and
// number formatting; i8 elements as characters), except that an empty
// memref prints [].
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_LIB_EXECUTION_RUNNERUTILS_H
#define HESPER_LIB_EXECUTION_RUNNERUTILS_H

#include <utility>
#include <vector>

namespace hesper::exec {

/// The printing functions by name, for a JIT's symbol table: the memref
/// printers (`memrefs`, MLIR's libmlir_runner_utils) and vector.print's
/// (`scalars`, libmlir_c_runner_utils).
std::vector<std::pair<const char *, void *>> runnerUtilSymbols(bool memrefs,
                                                               bool scalars);

} // namespace hesper::exec

#endif // HESPER_LIB_EXECUTION_RUNNERUTILS_H
