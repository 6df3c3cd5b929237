//===- GgufTypes.cpp - GGUF value types and ggml tensor types -------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The type table of the GGUF reader: names of the metadata value types,
// GgufValue's numeric views, and for every ggml tensor type the reader
// supports its name, block size (elements per block) and block bytes. The
// container parser (GgufFile.cpp) checks tensors against it; the block
// decoders (GgufDequant.cpp) walk rows with it.
//
//===----------------------------------------------------------------------===//

#include "GgufInternal.h"

#include "hesper/runtime/Gguf.h"

#include <limits>

namespace hesper::rt {

//===----------------------------------------------------------------------===//
// Metadata value types
//===----------------------------------------------------------------------===//

const char *ggufTypeName(GgufType t) {
  switch (t) {
  case GgufType::U8:
    return "u8";
  case GgufType::I8:
    return "i8";
  case GgufType::U16:
    return "u16";
  case GgufType::I16:
    return "i16";
  case GgufType::U32:
    return "u32";
  case GgufType::I32:
    return "i32";
  case GgufType::F32:
    return "f32";
  case GgufType::Bool:
    return "bool";
  case GgufType::String:
    return "string";
  case GgufType::Array:
    return "array";
  case GgufType::U64:
    return "u64";
  case GgufType::I64:
    return "i64";
  case GgufType::F64:
    return "f64";
  }
  return "?";
}

bool GgufValue::isInteger() const {
  switch (type) {
  case GgufType::U8:
  case GgufType::I8:
  case GgufType::U16:
  case GgufType::I16:
  case GgufType::U32:
  case GgufType::I32:
  case GgufType::U64:
  case GgufType::I64:
    return true;
  default:
    return false;
  }
}

std::optional<double> GgufValue::asNumber() const {
  switch (type) {
  case GgufType::U8:
  case GgufType::U16:
  case GgufType::U32:
  case GgufType::U64:
    return static_cast<double>(u);
  case GgufType::I8:
  case GgufType::I16:
  case GgufType::I32:
  case GgufType::I64:
  case GgufType::Bool:
    return static_cast<double>(i);
  case GgufType::F32:
  case GgufType::F64:
    return f;
  case GgufType::String:
  case GgufType::Array:
    break;
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// ggml tensor types
//===----------------------------------------------------------------------===//

const char *ggmlTypeName(GgmlType t) {
  switch (t) {
  case GgmlType::F32:
    return "f32";
  case GgmlType::F16:
    return "f16";
  case GgmlType::Q4_0:
    return "q4_0";
  case GgmlType::Q4_1:
    return "q4_1";
  case GgmlType::Q5_0:
    return "q5_0";
  case GgmlType::Q5_1:
    return "q5_1";
  case GgmlType::IQ4_NL:
    return "iq4_nl";
  case GgmlType::IQ4_XS:
    return "iq4_xs";
  case GgmlType::Q8_0:
    return "q8_0";
  case GgmlType::Q2_K:
    return "q2_K";
  case GgmlType::Q3_K:
    return "q3_K";
  case GgmlType::Q4_K:
    return "q4_K";
  case GgmlType::Q5_K:
    return "q5_K";
  case GgmlType::Q6_K:
    return "q6_K";
  case GgmlType::BF16:
    return "bf16";
  case GgmlType::TQ1_0:
    return "tq1_0";
  case GgmlType::TQ2_0:
    return "tq2_0";
  case GgmlType::I2_S:
    return "i2_s";
  }
  return "?";
}

int64_t ggmlBlockSize(GgmlType t) {
  switch (t) {
  case GgmlType::F32:
  case GgmlType::F16:
  case GgmlType::BF16:
    return 1;
  case GgmlType::Q4_0:
  case GgmlType::Q4_1:
  case GgmlType::Q5_0:
  case GgmlType::Q5_1:
  case GgmlType::IQ4_NL:
  case GgmlType::Q8_0:
    return 32;
  case GgmlType::Q2_K:
  case GgmlType::Q3_K:
  case GgmlType::Q4_K:
  case GgmlType::Q5_K:
  case GgmlType::Q6_K:
  case GgmlType::TQ1_0:
  case GgmlType::TQ2_0:
  case GgmlType::IQ4_XS:
    return 256;
  case GgmlType::I2_S:
    return 128;
  }
  return 0;
}

int64_t ggmlBlockBytes(GgmlType t) {
  switch (t) {
  case GgmlType::F32:
    return 4;
  case GgmlType::F16:
  case GgmlType::BF16:
    return 2;
  case GgmlType::Q4_0:
  case GgmlType::IQ4_NL:
    return 2 + 16;
  case GgmlType::Q4_1:
    return 2 + 2 + 16;
  case GgmlType::Q5_0:
    return 2 + 4 + 16;
  case GgmlType::Q5_1:
    return 2 + 2 + 4 + 16;
  case GgmlType::Q8_0:
    return 2 + 32;
  case GgmlType::IQ4_XS:
    return 2 + 2 + 4 + 128;
  case GgmlType::Q2_K:
    return 16 + 64 + 2 + 2;
  case GgmlType::Q3_K:
    return 32 + 64 + 12 + 2;
  case GgmlType::Q4_K:
    return 2 + 2 + 12 + 128;
  case GgmlType::Q5_K:
    return 2 + 2 + 12 + 32 + 128;
  case GgmlType::Q6_K:
    return 128 + 64 + 16 + 2;
  case GgmlType::TQ1_0:
    return 48 + 4 + 2;
  case GgmlType::TQ2_0:
    return 64 + 2;
  case GgmlType::I2_S:
    return 32;
  }
  return 0;
}

int64_t ggmlTensorTrailerBytes(GgmlType t) {
  return t == GgmlType::I2_S ? 32 : 0;
}

std::optional<int64_t> ggmlRowBytes(GgmlType t, int64_t n) {
  int64_t blockSize = ggmlBlockSize(t), blockBytes = ggmlBlockBytes(t);
  if (blockSize == 0 || n < 0 || n % blockSize != 0)
    return std::nullopt;
  int64_t blocks = n / blockSize;
  if (blocks > std::numeric_limits<int64_t>::max() / blockBytes)
    return std::nullopt;
  return blocks * blockBytes;
}

std::optional<int64_t> ggmlTensorBytes(GgmlType t,
                                       const std::vector<int64_t> &dims) {
  if (dims.empty())
    return std::nullopt;
  std::optional<int64_t> bytes = ggmlRowBytes(t, dims[0]);
  if (!bytes)
    return std::nullopt;
  for (size_t i = 1; i < dims.size(); ++i) {
    if (dims[i] < 0 ||
        (dims[i] && *bytes > std::numeric_limits<int64_t>::max() / dims[i]))
      return std::nullopt;
    *bytes *= dims[i];
  }
  return *bytes + ggmlTensorTrailerBytes(t);
}

//===----------------------------------------------------------------------===//
// Type numbers outside GgmlType
//===----------------------------------------------------------------------===//

namespace detail {

/// Names of ggml's other type numbers, for messages about files that use
/// them. Numbers ggml has retired, and numbers past the table, are unknown.
const char *otherGgmlTypeName(uint32_t t) {
  static const char *const names[] = {
      "f32",   "f16",   "q4_0",    "q4_1",   nullptr,   nullptr, "q5_0",
      "q5_1",  "q8_0",  "q8_1",    "q2_K",   "q3_K",    "q4_K",  "q5_K",
      "q6_K",  "q8_K",  "iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s", "iq4_nl",
      "iq3_s", "iq2_s", "iq4_xs",  "i8",     "i16",     "i32",   "i64",
      "f64",   "iq1_m", "bf16",    nullptr,  nullptr,   nullptr, "tq1_0",
      "tq2_0", "i2_s",  nullptr,   nullptr,  "mxfp4"};
  return t < sizeof(names) / sizeof(names[0]) ? names[t] : nullptr;
}

bool isSupportedGgmlType(uint32_t t) {
  switch (static_cast<GgmlType>(t)) {
  case GgmlType::F32:
  case GgmlType::F16:
  case GgmlType::Q4_0:
  case GgmlType::Q4_1:
  case GgmlType::Q5_0:
  case GgmlType::Q5_1:
  case GgmlType::IQ4_NL:
  case GgmlType::IQ4_XS:
  case GgmlType::Q8_0:
  case GgmlType::Q2_K:
  case GgmlType::Q3_K:
  case GgmlType::Q4_K:
  case GgmlType::Q5_K:
  case GgmlType::Q6_K:
  case GgmlType::BF16:
  case GgmlType::TQ1_0:
  case GgmlType::TQ2_0:
  case GgmlType::I2_S:
    return true;
  }
  return false;
}

} // namespace detail
} // namespace hesper::rt
