//===- Npy.h - NumPy .npy files ---------------------------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Reading and writing NumPy's .npy format (versions 1.0, 2.0 and 3.0):
// little-endian f32, f16, i32 and u8 arrays in C order. Anything else (a
// big-endian or Fortran-order array, another dtype, a header that does not
// parse, data shorter than the shape says) is an error with one clear line.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_RUNTIME_NPY_H
#define HESPER_RUNTIME_NPY_H

#include "hesper/runtime/Runtime.h"

namespace hesper::rt {

enum class DType { F32, F16, I32, U8 };
const char *dtypeName(DType t); ///< "f32", "f16", "i32", "u8"
size_t dtypeBytes(DType t);

/// A host array: raw little-endian bytes in C order.
struct NpyArray {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
  int64_t numElements() const;
};

Result<NpyArray> readNpy(const std::string &path);
/// Parses an in-memory .npy image; `what` names it in error messages.
Result<NpyArray> parseNpy(const uint8_t *bytes, size_t size,
                          const std::string &what);
Status writeNpy(const std::string &path, const NpyArray &array);
std::vector<uint8_t> serializeNpy(const NpyArray &array);

} // namespace hesper::rt

#endif // HESPER_RUNTIME_NPY_H
