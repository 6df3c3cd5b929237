//===- GgufInternal.h - Shared parts of the GGUF reader ---------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Internal to the runtime: what the container parser (GgufFile.cpp) takes
// from the type table (GgufTypes.cpp) beyond the public Gguf.h.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_RUNTIME_LIB_FORMATS_GGUF_GGUFINTERNAL_H
#define HESPER_RUNTIME_LIB_FORMATS_GGUF_GGUFINTERNAL_H

#include <cstdint>

namespace hesper::rt::detail {

/// Names of ggml's other type numbers, for messages about files that use
/// them. Numbers ggml has retired, and numbers past the table, are unknown
/// (nullptr).
const char *otherGgmlTypeName(uint32_t t);

/// Whether ggml type number `t` is one of GgmlType's (one the reader
/// supports).
bool isSupportedGgmlType(uint32_t t);

} // namespace hesper::rt::detail

#endif // HESPER_RUNTIME_LIB_FORMATS_GGUF_GGUFINTERNAL_H
