//===- RunnerUtils.cpp - Printing for programs without MLIR's utilities --===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// See RunnerUtils.h. Memrefs come as upstream's calling conventions pass
// them: an unranked memref as (rank, pointer to its ranked descriptor), a
// ranked descriptor as {allocated, aligned, offset, sizes[rank],
// strides[rank]}, and a _mlir_ciface_ function takes a pointer to the
// unranked pair. Numbers are printed by C++ streams' default formatting
// (six significant digits for floats), as upstream's utilities print them.
//
//===----------------------------------------------------------------------===//

#include "RunnerUtils.h"

#include "hesper/base/Half.h"

#include <cstdint>
#include <iostream>

namespace {

/// The descriptor of a ranked memref, its sizes and strides after the
/// offset.
struct Descriptor {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizesAndStrides[1];
};

/// The pair an unranked memref is passed as.
struct Unranked {
  int64_t rank;
  void *descriptor;
};

/// One element as the stream prints it: i8 as a character (as MLIR's
/// printMemrefI8 does), other integers as numbers, halves widened to
/// float.
template <typename T> void printElement(std::ostream &os, const T &v) {
  if constexpr (sizeof(T) == 1)
    os << static_cast<char>(v);
  else
    os << v;
}
struct Half {
  uint16_t bits;
};
struct BFloat {
  uint16_t bits;
};
template <> void printElement(std::ostream &os, const Half &v) {
  os << hesper::halfBitsToFloat(v.bits);
}
template <> void printElement(std::ostream &os, const BFloat &v) {
  os << hesper::bfloat16BitsToFloat(v.bits);
}

/// The elements of dimension `dim` on from `at`, nested in brackets: the
/// innermost separated by a comma and rank + 1 spaces, outer ones by a
/// comma, a newline and one space per open bracket.
template <typename T>
void printNested(std::ostream &os, const T *data, int64_t rank, int64_t dim,
                 const int64_t *sizes, const int64_t *strides, int64_t at) {
  if (rank == 0) {
    os << "[";
    printElement(os, data[at]);
    os << "]";
    return;
  }
  os << "[";
  for (int64_t i = 0; i < sizes[dim]; ++i) {
    if (i > 0) {
      os << ",";
      if (dim + 1 == rank)
        os << std::string(rank + 1, ' ');
      else
        os << " \n" << std::string(dim + 1, ' ');
    }
    int64_t element = at + i * strides[dim];
    if (dim + 1 == rank)
      printElement(os, data[element]);
    else
      printNested(os, data, rank, dim + 1, sizes, strides, element);
  }
  os << "]";
}

template <typename T> void printMemref(int64_t rank, void *descriptor) {
  auto *d = static_cast<const Descriptor *>(descriptor);
  const int64_t *sizes = d->sizesAndStrides;
  const int64_t *strides = d->sizesAndStrides + rank;
  std::ostream &os = std::cout;
  os << "Unranked Memref base@ = " << d->aligned << " rank = " << rank
     << " offset = " << d->offset << " sizes = [";
  for (int64_t i = 0; i < rank; ++i)
    os << (i ? ", " : "") << sizes[i];
  os << "] strides = [";
  for (int64_t i = 0; i < rank; ++i)
    os << (i ? ", " : "") << strides[i];
  os << "] data = \n";
  bool empty = false;
  for (int64_t i = 0; i < rank; ++i)
    empty |= sizes[i] <= 0;
  if (empty)
    os << "[]";
  else
    printNested(os, static_cast<const T *>(d->aligned), rank, 0, sizes,
                strides, d->offset);
  os << "\n";
}

template <typename T> void printMemrefC(void *unranked) {
  auto *u = static_cast<const Unranked *>(unranked);
  printMemref<T>(u->rank, u->descriptor);
}

// The element types MLIR's utilities print memrefs of: the suffix of
// printMemref<suffix>, and the element's C++ type.
#define HESPER_MEMREF_ELEMENTS(X)                                              \
  X(F32, float)                                                                \
  X(F64, double)                                                               \
  X(F16, Half)                                                                 \
  X(BF16, BFloat)                                                              \
  X(I8, int8_t)                                                                \
  X(I16, int16_t)                                                              \
  X(I32, int32_t)                                                              \
  X(I64, int64_t)                                                              \
  X(Ind, int64_t)

// The entry points, C calling convention.
#define HESPER_PRINT_MEMREF(SUFFIX, T)                                         \
  void printMemref##SUFFIX(int64_t rank, void *descriptor) {                   \
    printMemref<T>(rank, descriptor);                                          \
  }                                                                            \
  void cifacePrintMemref##SUFFIX(void *unranked) { printMemrefC<T>(unranked); }
HESPER_MEMREF_ELEMENTS(HESPER_PRINT_MEMREF)
#undef HESPER_PRINT_MEMREF

// vector.print's calls.
void printI64(int64_t v) { std::cout << v; }
void printU64(uint64_t v) { std::cout << v; }
void printF32(float v) { std::cout << v; }
void printF64(double v) { std::cout << v; }
void printF16(uint16_t v) { std::cout << hesper::halfBitsToFloat(v); }
void printBF16(uint16_t v) { std::cout << hesper::bfloat16BitsToFloat(v); }
void printString(const char *s) { std::cout << s; }
void printOpen() { std::cout << "( "; }
void printClose() { std::cout << " )"; }
void printComma() { std::cout << ", "; }
void printNewline() { std::cout << "\n"; }

} // namespace

std::vector<std::pair<const char *, void *>>
hesper::exec::runnerUtilSymbols(bool memrefs, bool scalars) {
  auto fn = [](auto *f) { return reinterpret_cast<void *>(f); };
  std::vector<std::pair<const char *, void *>> symbols;
  if (scalars)
    symbols = {
        {"printI64", fn(printI64)},         {"printU64", fn(printU64)},
        {"printF32", fn(printF32)},         {"printF64", fn(printF64)},
        {"printF16", fn(printF16)},         {"printBF16", fn(printBF16)},
        {"printString", fn(printString)},   {"printOpen", fn(printOpen)},
        {"printClose", fn(printClose)},     {"printComma", fn(printComma)},
        {"printNewline", fn(printNewline)},
    };
  if (!memrefs)
    return symbols;
#define HESPER_MEMREF_SYMBOLS(SUFFIX, T)                                       \
  symbols.push_back({"printMemref" #SUFFIX, fn(printMemref##SUFFIX)});         \
  symbols.push_back(                                                           \
      {"_mlir_ciface_printMemref" #SUFFIX, fn(cifacePrintMemref##SUFFIX)});
  HESPER_MEMREF_ELEMENTS(HESPER_MEMREF_SYMBOLS)
#undef HESPER_MEMREF_SYMBOLS
  return symbols;
}
