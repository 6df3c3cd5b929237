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

#include <cstdint>
#include <cstring>
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

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31, exponent = (h >> 10) & 0x1f,
           mantissa = h & 0x3ff, bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else { // subnormal: normalize it
    int shift = 0;
    while (!(mantissa & 0x400)) {
      mantissa <<= 1;
      ++shift;
    }
    bits = sign | ((113 - shift) << 23) | ((mantissa & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

float bfloatToFloat(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

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
  os << halfToFloat(v.bits);
}
template <> void printElement(std::ostream &os, const BFloat &v) {
  os << bfloatToFloat(v.bits);
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

// The entry points, C calling convention.
#define HESPER_PRINT_MEMREF(SUFFIX, T)                                         \
  void printMemref##SUFFIX(int64_t rank, void *descriptor) {                   \
    printMemref<T>(rank, descriptor);                                          \
  }                                                                            \
  void cifacePrintMemref##SUFFIX(void *unranked) { printMemrefC<T>(unranked); }
HESPER_PRINT_MEMREF(F32, float)
HESPER_PRINT_MEMREF(F64, double)
HESPER_PRINT_MEMREF(F16, Half)
HESPER_PRINT_MEMREF(BF16, BFloat)
HESPER_PRINT_MEMREF(I8, int8_t)
HESPER_PRINT_MEMREF(I16, int16_t)
HESPER_PRINT_MEMREF(I32, int32_t)
HESPER_PRINT_MEMREF(I64, int64_t)
HESPER_PRINT_MEMREF(Ind, int64_t)
#undef HESPER_PRINT_MEMREF

// vector.print's calls.
void printI64(int64_t v) { std::cout << v; }
void printU64(uint64_t v) { std::cout << v; }
void printF32(float v) { std::cout << v; }
void printF64(double v) { std::cout << v; }
void printF16(uint16_t v) { std::cout << halfToFloat(v); }
void printBF16(uint16_t v) { std::cout << bfloatToFloat(v); }
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
#define HESPER_MEMREF_SYMBOLS(SUFFIX)                                          \
  symbols.push_back({"printMemref" #SUFFIX, fn(printMemref##SUFFIX)});         \
  symbols.push_back(                                                           \
      {"_mlir_ciface_printMemref" #SUFFIX, fn(cifacePrintMemref##SUFFIX)});
  HESPER_MEMREF_SYMBOLS(F32)
  HESPER_MEMREF_SYMBOLS(F64)
  HESPER_MEMREF_SYMBOLS(F16)
  HESPER_MEMREF_SYMBOLS(BF16)
  HESPER_MEMREF_SYMBOLS(I8)
  HESPER_MEMREF_SYMBOLS(I16)
  HESPER_MEMREF_SYMBOLS(I32)
  HESPER_MEMREF_SYMBOLS(I64)
  HESPER_MEMREF_SYMBOLS(Ind)
#undef HESPER_MEMREF_SYMBOLS
  return symbols;
}
