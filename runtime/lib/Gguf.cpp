//===- Gguf.cpp - GGUF model files ----------------------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// A GGUF file, all little-endian:
//   u32 magic "GGUF", u32 version (2 or 3), u64 tensor count,
//   u64 metadata entry count,
//   metadata entries: string key, u32 value type, value,
//   tensor infos: string name, u32 n_dims, u64 dims[n_dims], u32 ggml type,
//                 u64 offset (from the start of the data section),
//   zero padding up to a multiple of general.alignment (default 32),
//   the data section.
// A string is a u64 byte count and the bytes (no terminator); an array is a
// u32 element type, a u64 element count and the elements, which may be
// arrays themselves.
//
// The parser reads through a cursor that checks every read against the bytes
// that remain, and checks every count against the smallest number of bytes
// its items could take before it allocates anything for them.
//
// Dequantization follows ggml's reference dequantize_row_* (ggml-quants.c):
// the same float operations in the same order, so the results are the same
// bit for bit. (The code must not be built with FMA contraction; the
// runtime is not built with -ffp-contract=fast on an FMA target.)
//
//===----------------------------------------------------------------------===//

#include "hesper/runtime/Gguf.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace hesper::rt {

//===----------------------------------------------------------------------===//
// Types
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

const char *ggmlTypeName(GgmlType t) {
  switch (t) {
  case GgmlType::F32:
    return "f32";
  case GgmlType::F16:
    return "f16";
  case GgmlType::Q4_0:
    return "q4_0";
  case GgmlType::Q8_0:
    return "q8_0";
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
  case GgmlType::Q8_0:
    return 32;
  case GgmlType::Q4_K:
  case GgmlType::Q5_K:
  case GgmlType::Q6_K:
  case GgmlType::TQ1_0:
  case GgmlType::TQ2_0:
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
    return 2 + 16;
  case GgmlType::Q8_0:
    return 2 + 32;
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

namespace {

/// Names of ggml's other type numbers, for messages about files that use
/// them. Numbers ggml has retired, and numbers past the table, are unknown.
const char *otherGgmlTypeName(uint32_t t) {
  static const char *const names[] = {
      "f32",     "f16",    "q4_0",    "q4_1",  nullptr, nullptr, "q5_0",
      "q5_1",    "q8_0",   "q8_1",    "q2_K",  "q3_K",  "q4_K",  "q5_K",
      "q6_K",    "q8_K",   "iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s", "iq4_nl",
      "iq3_s",   "iq2_s",  "iq4_xs",  "i8",    "i16",   "i32",   "i64",
      "f64",     "iq1_m",  "bf16",    nullptr, nullptr, nullptr, "tq1_0",
      "tq2_0",   "i2_s",   nullptr,   nullptr, "mxfp4"};
  return t < sizeof(names) / sizeof(names[0]) ? names[t] : nullptr;
}

bool isSupportedGgmlType(uint32_t t) {
  switch (static_cast<GgmlType>(t)) {
  case GgmlType::F32:
  case GgmlType::F16:
  case GgmlType::Q4_0:
  case GgmlType::Q8_0:
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

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

constexpr char kMagic[4] = {'G', 'G', 'U', 'F'};
constexpr uint64_t kDefaultAlignment = 32;
constexpr const char *kAlignmentKey = "general.alignment";
constexpr int kMaxDims = 4;
/// Arrays may hold arrays this many levels deep (an array of scalars is one
/// level).
constexpr int kMaxArrayDepth = 8;
/// Every metadata value, array elements included, becomes a GgufValue of
/// about 100 bytes, even a one-byte u8; this bounds the memory a file can
/// make the parser use. Real files (vocabularies of a few hundred thousand
/// tokens, with scores, types and merges) stay far below it.
constexpr uint64_t kMaxMetadataValues = uint64_t(1) << 23;
/// The fewest bytes a metadata entry can take: an empty key's length, the
/// value type and a one-byte value.
constexpr uint64_t kMinEntryBytes = 8 + 4 + 1;
/// The fewest bytes a tensor info can take: an empty name's length, n_dims,
/// one dimension, the type and the offset.
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;
/// Names longer than this are cut short in messages.
constexpr size_t kMaxQuotedChars = 80;

/// `s` in single quotes for a one-line message: control characters and
/// backslashes escaped, long names cut short.
std::string quoted(const std::string &s) {
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kMaxQuotedChars; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f || c == '\\' || c == '\'') {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > kMaxQuotedChars)
    out += "...";
  return out + "'";
}

/// The decimal number `x` plus `b`, as decimal digits: a file offset plus a
/// size read from a corrupt file may not fit in 64 bits.
std::string decimalPlus(const std::string &x, uint64_t b) {
  std::string y = std::to_string(b), digits;
  int carry = 0;
  for (size_t i = 0; i < x.size() || i < y.size() || carry; ++i) {
    int sum = carry;
    if (i < x.size())
      sum += x[x.size() - 1 - i] - '0';
    if (i < y.size())
      sum += y[y.size() - 1 - i] - '0';
    digits += static_cast<char>('0' + sum % 10);
    carry = sum / 10;
  }
  return std::string(digits.rbegin(), digits.rend());
}

std::string shapeString(const std::vector<uint64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

/// The fewest bytes one value of a (known) type takes in the file.
uint64_t minValueBytes(GgufType t) {
  switch (t) {
  case GgufType::U8:
  case GgufType::I8:
  case GgufType::Bool:
    return 1;
  case GgufType::U16:
  case GgufType::I16:
    return 2;
  case GgufType::U32:
  case GgufType::I32:
  case GgufType::F32:
    return 4;
  case GgufType::U64:
  case GgufType::I64:
  case GgufType::F64:
  case GgufType::String: // the length
    return 8;
  case GgufType::Array: // the element type and the count
    return 4 + 8;
  }
  return 1;
}

bool isKnownValueType(uint32_t t) {
  return t <= static_cast<uint32_t>(GgufType::F64);
}

/// Parses a whole image into its fields; on failure `error()` is one line
/// (without the file name).
class Parser {
public:
  Parser(const uint8_t *bytes, size_t byteCount)
      : base(bytes), size(byteCount) {}

  bool run();
  const std::string &error() const { return err; }

  uint32_t version = 0;
  uint64_t alignment = kDefaultAlignment;
  std::vector<std::pair<std::string, GgufValue>> meta;
  std::map<std::string, size_t> metaIndex;
  std::vector<GgufTensor> tensors;
  std::map<std::string, size_t> tensorIndex;

private:
  bool fail(std::string msg) {
    err = std::move(msg);
    return false;
  }
  /// The file ends (or a count or length says it ends) inside `where`.
  bool truncated(const std::string &detail = std::string()) {
    return fail("truncated in " + where +
                (detail.empty() ? std::string() : ": " + detail));
  }

  size_t remaining() const { return size - pos; }

  /// Reads an n-byte little-endian unsigned integer (n <= 8).
  bool readLE(size_t n, uint64_t &v) {
    if (n > remaining())
      return truncated();
    v = 0;
    for (size_t i = 0; i < n; ++i)
      v |= static_cast<uint64_t>(base[pos + i]) << (8 * i);
    pos += n;
    return true;
  }
  bool readU32(uint32_t &v) {
    uint64_t w;
    if (!readLE(4, w))
      return false;
    v = static_cast<uint32_t>(w);
    return true;
  }
  bool readU64(uint64_t &v) { return readLE(8, v); }

  bool readString(std::string &s) {
    uint64_t len;
    if (!readU64(len))
      return false;
    if (len > remaining())
      return truncated("a string of " + std::to_string(len) + " bytes, " +
                       std::to_string(remaining()) + " remain");
    s.assign(reinterpret_cast<const char *>(base + pos),
             static_cast<size_t>(len));
    pos += static_cast<size_t>(len);
    return true;
  }

  bool readValue(GgufType t, GgufValue &v, int depth);
  bool readMetadata(uint64_t count);
  bool readTensorInfos(uint64_t count);
  bool placeTensors();

  const uint8_t *base;
  size_t size;
  size_t pos = 0;
  /// The part of the file being read, for messages: "the header",
  /// "metadata entry 3 ('general.name')", ...
  std::string where = "the header";
  uint64_t numValues = 0;
  std::string err;
};

bool Parser::readValue(GgufType t, GgufValue &v, int depth) {
  v.type = t;
  uint64_t w = 0;
  switch (t) {
  case GgufType::U8:
  case GgufType::U16:
  case GgufType::U32:
  case GgufType::U64:
    if (!readLE(minValueBytes(t), w))
      return false;
    v.u = w;
    if (w <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      v.i = static_cast<int64_t>(w);
    return true;
  case GgufType::I8:
  case GgufType::I16:
  case GgufType::I32:
  case GgufType::I64: {
    size_t n = minValueBytes(t);
    if (!readLE(n, w))
      return false;
    // Sign-extend from n bytes.
    unsigned shift = static_cast<unsigned>(64 - 8 * n);
    v.i = static_cast<int64_t>(w << shift) >> shift;
    if (v.i >= 0)
      v.u = static_cast<uint64_t>(v.i);
    return true;
  }
  case GgufType::Bool:
    if (!readLE(1, w))
      return false;
    v.i = w != 0;
    v.u = w != 0;
    return true;
  case GgufType::F32: {
    if (!readLE(4, w))
      return false;
    uint32_t bits = static_cast<uint32_t>(w);
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    v.f = f;
    return true;
  }
  case GgufType::F64:
    if (!readLE(8, w))
      return false;
    std::memcpy(&v.f, &w, sizeof(v.f));
    return true;
  case GgufType::String:
    return readString(v.str);
  case GgufType::Array:
    break;
  }

  if (depth >= kMaxArrayDepth)
    return fail(where + " has arrays nested more than " +
                std::to_string(kMaxArrayDepth) + " deep");
  uint32_t elementType;
  uint64_t count;
  if (!readU32(elementType))
    return false;
  if (!isKnownValueType(elementType))
    return fail(where + " has an array of unknown value type " +
                std::to_string(elementType));
  if (!readU64(count))
    return false;
  v.elementType = static_cast<GgufType>(elementType);
  uint64_t minBytes = minValueBytes(v.elementType);
  if (count > remaining() / minBytes)
    return truncated("an array of " + std::to_string(count) + " " +
                     ggufTypeName(v.elementType) + " elements (at least " +
                     std::to_string(minBytes) + " bytes each), " +
                     std::to_string(remaining()) + " bytes remain");
  if (count > kMaxMetadataValues - numValues)
    return fail(where + " has an array of " + std::to_string(count) +
                " elements: the metadata would hold more than " +
                std::to_string(kMaxMetadataValues) + " values");
  numValues += count;
  // count <= remaining bytes: the reservation is bounded by the file.
  v.array.reserve(static_cast<size_t>(count));
  for (uint64_t k = 0; k < count; ++k) {
    v.array.emplace_back();
    if (!readValue(v.elementType, v.array.back(), depth + 1))
      return false;
  }
  return true;
}

bool Parser::readMetadata(uint64_t count) {
  for (uint64_t n = 0; n < count; ++n) {
    std::string entry = "metadata entry " + std::to_string(n);
    where = "the key of " + entry;
    std::string key;
    if (!readString(key))
      return false;
    where = entry + " (" + quoted(key) + ")";
    uint32_t type;
    if (!readU32(type))
      return false;
    if (!isKnownValueType(type))
      return fail(where + " has unknown value type " + std::to_string(type));
    if (numValues >= kMaxMetadataValues)
      return fail("the metadata holds more than " +
                  std::to_string(kMaxMetadataValues) + " values");
    ++numValues;
    GgufValue value;
    if (!readValue(static_cast<GgufType>(type), value, 0))
      return false;
    auto [it, inserted] = metaIndex.emplace(key, meta.size());
    if (!inserted)
      return fail("duplicate metadata key " + quoted(key) + " (entries " +
                  std::to_string(it->second) + " and " + std::to_string(n) +
                  ")");
    meta.emplace_back(std::move(key), std::move(value));
  }

  auto it = metaIndex.find(kAlignmentKey);
  if (it != metaIndex.end()) {
    const GgufValue &v = meta[it->second].second;
    if (v.type != GgufType::U32)
      return fail(std::string(kAlignmentKey) + " is a " + ggufTypeName(v.type) +
                  ", not a u32");
    if (v.u == 0 || (v.u & (v.u - 1)) != 0)
      return fail(std::string(kAlignmentKey) + " is " + std::to_string(v.u) +
                  ", not a non-zero power of two");
    alignment = v.u;
  }
  return true;
}

bool Parser::readTensorInfos(uint64_t count) {
  for (uint64_t n = 0; n < count; ++n) {
    std::string info = "tensor info " + std::to_string(n);
    where = "the name of " + info;
    GgufTensor t;
    if (!readString(t.name))
      return false;
    std::string name = "tensor " + quoted(t.name);
    where = info + " (" + quoted(t.name) + ")";

    uint32_t nDims;
    if (!readU32(nDims))
      return false;
    if (nDims < 1 || nDims > kMaxDims)
      return fail(name + " has " + std::to_string(nDims) +
                  " dimensions (need 1 to " + std::to_string(kMaxDims) + ")");
    std::vector<uint64_t> dims(nDims);
    for (uint32_t d = 0; d < nDims; ++d)
      if (!readU64(dims[d]))
        return false;
    uint64_t elements = 1;
    for (uint32_t d = 0; d < nDims; ++d) {
      if (dims[d] == 0)
        return fail(name + " has shape " + shapeString(dims) + ": dimension " +
                    std::to_string(d) + " is 0");
      constexpr uint64_t kMax =
          static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
      if (dims[d] > kMax / elements)
        return fail(name + " has shape " + shapeString(dims) +
                    ": the element count overflows int64");
      elements *= dims[d];
    }

    uint32_t type;
    if (!readU32(type))
      return false;
    if (!isSupportedGgmlType(type)) {
      if (const char *other = otherGgmlTypeName(type))
        return fail(name + " has ggml type " + std::to_string(type) + " (" +
                    other + "), which is not supported");
      return fail(name + " has unknown ggml type " + std::to_string(type));
    }
    t.type = static_cast<GgmlType>(type);
    uint64_t blockSize = static_cast<uint64_t>(ggmlBlockSize(t.type));
    uint64_t blockBytes = static_cast<uint64_t>(ggmlBlockBytes(t.type));
    if (dims[0] % blockSize != 0)
      return fail(name + " has rows of " + std::to_string(dims[0]) +
                  " elements, not a multiple of the " +
                  ggmlTypeName(t.type) + " block size " +
                  std::to_string(blockSize));
    uint64_t blocks = elements / blockSize;
    if (blocks > std::numeric_limits<uint64_t>::max() / blockBytes)
      return fail(name + " has shape " + shapeString(dims) +
                  ": its size in bytes overflows");

    if (!readU64(t.offset))
      return false;
    if (t.offset % alignment != 0)
      return fail(name + " has offset " + std::to_string(t.offset) +
                  ", not a multiple of the alignment " +
                  std::to_string(alignment));

    auto [it, inserted] = tensorIndex.emplace(t.name, tensors.size());
    if (!inserted)
      return fail("duplicate tensor name " + quoted(t.name) + " (tensors " +
                  std::to_string(it->second) + " and " + std::to_string(n) +
                  ")");
    t.dims.assign(dims.begin(), dims.end());
    t.numElements = static_cast<int64_t>(elements);
    t.bytes = blocks * blockBytes + ggmlTensorTrailerBytes(t.type);
    tensors.push_back(std::move(t));
  }
  return true;
}

/// Points the tensors into the data section, checking that each lies inside
/// the file and that no two overlap.
bool Parser::placeTensors() {
  // pos <= size < 2^63 and alignment <= 2^31: no overflow.
  uint64_t dataStart = (pos + alignment - 1) / alignment * alignment;
  uint64_t available = dataStart <= size ? size - dataStart : 0;
  for (GgufTensor &t : tensors) {
    if (dataStart > size || t.offset > available ||
        t.bytes > available - t.offset) {
      std::string begin = decimalPlus(std::to_string(dataStart), t.offset);
      std::string end = decimalPlus(begin, t.bytes);
      return fail("tensor " + quoted(t.name) + " data [" + begin + ", " + end +
                  ") lies outside the file (size " + std::to_string(size) +
                  ")");
    }
    t.data = base + dataStart + t.offset;
  }

  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return tensors[a].offset < tensors[b].offset;
  });
  for (size_t k = 1; k < order.size(); ++k) {
    const GgufTensor &a = tensors[order[k - 1]], &b = tensors[order[k]];
    if (a.offset + a.bytes > b.offset) {
      auto range = [&](const GgufTensor &t) {
        return "[" + std::to_string(dataStart + t.offset) + ", " +
               std::to_string(dataStart + t.offset + t.bytes) + ")";
      };
      return fail("tensors " + quoted(a.name) + " " + range(a) + " and " +
                  quoted(b.name) + " " + range(b) + " overlap");
    }
  }
  return true;
}

bool Parser::run() {
  if (size == 0)
    return fail("empty file");
  if (size < sizeof(kMagic)) {
    if (std::memcmp(base, kMagic, size) == 0)
      return truncated();
    return fail("bad magic (not a GGUF file)");
  }
  if (std::memcmp(base, kMagic, sizeof(kMagic)) != 0)
    return fail("bad magic (not a GGUF file)");
  pos = sizeof(kMagic);

  if (!readU32(version))
    return false;
  if (version != 2 && version != 3) {
    uint32_t swapped = (version >> 24) | ((version >> 8) & 0xff00) |
                       ((version << 8) & 0xff0000) | (version << 24);
    std::string hint = swapped == 2 || swapped == 3
                           ? " (a big-endian file?)"
                           : version == 1 ? " (version 1 files are obsolete)"
                                          : "";
    return fail("unsupported GGUF version " + std::to_string(version) +
                " (need 2 or 3)" + hint);
  }

  uint64_t numTensors, numEntries;
  if (!readU64(numTensors) || !readU64(numEntries))
    return false;
  // Each count is checked against the bytes that remain before anything is
  // read (every entry and every tensor info takes some bytes), so that an
  // absurd count is reported as such.
  uint64_t left = remaining();
  if (numEntries > left / kMinEntryBytes)
    return truncated("the header declares " + std::to_string(numEntries) +
                     " metadata entries, more than the " +
                     std::to_string(left) + " bytes after it can hold");
  if (numTensors > left / kMinTensorInfoBytes)
    return truncated("the header declares " + std::to_string(numTensors) +
                     " tensors, more than the " + std::to_string(left) +
                     " bytes after it can hold");

  return readMetadata(numEntries) && readTensorInfos(numTensors) &&
         placeTensors();
}

} // namespace

//===----------------------------------------------------------------------===//
// GgufFile
//===----------------------------------------------------------------------===//

Result<std::unique_ptr<GgufFile>>
GgufFile::parse(const uint8_t *bytes, size_t size, const std::string &what) {
  Parser parser(bytes, size);
  if (!parser.run())
    return Status::error(what + ": " + parser.error());
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->name = what;
  file->ver = parser.version;
  file->align = parser.alignment;
  file->meta = std::move(parser.meta);
  file->metaIndex = std::move(parser.metaIndex);
  file->tens = std::move(parser.tensors);
  file->tensorIndex = std::move(parser.tensorIndex);
  return Result<std::unique_ptr<GgufFile>>(std::move(file));
}

Result<std::unique_ptr<GgufFile>> GgufFile::open(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::error(path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return Status::error(path + ": cannot stat: " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error(path + ": not a regular file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    return Status::error(path + ": empty file");
  }
  size_t size = static_cast<size_t>(st.st_size);
  void *mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int mapError = errno;
  ::close(fd);
  if (mapping == MAP_FAILED)
    return Status::error(path + ": cannot map: " + std::strerror(mapError));

  Result<std::unique_ptr<GgufFile>> file =
      parse(static_cast<const uint8_t *>(mapping), size, path);
  if (!file) {
    ::munmap(mapping, size);
    return file;
  }
  (*file)->mapping = mapping;
  (*file)->mappingBytes = size;
  return file;
}

GgufFile::~GgufFile() {
  if (mapping)
    ::munmap(mapping, mappingBytes);
}

const GgufValue *GgufFile::find(const std::string &key) const {
  auto it = metaIndex.find(key);
  return it == metaIndex.end() ? nullptr : &meta[it->second].second;
}

std::optional<std::string> GgufFile::getString(const std::string &key) const {
  const GgufValue *v = find(key);
  if (!v || v->type != GgufType::String)
    return std::nullopt;
  return v->str;
}

std::optional<int64_t> GgufFile::getInt(const std::string &key) const {
  const GgufValue *v = find(key);
  if (!v || !v->isInteger())
    return std::nullopt;
  if (v->type == GgufType::U64 &&
      v->u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return std::nullopt;
  return v->i;
}

std::optional<double> GgufFile::getFloat(const std::string &key) const {
  const GgufValue *v = find(key);
  if (!v || !(v->isFloat() || v->isInteger()))
    return std::nullopt;
  return v->asNumber();
}

std::optional<bool> GgufFile::getBool(const std::string &key) const {
  const GgufValue *v = find(key);
  if (!v || v->type != GgufType::Bool)
    return std::nullopt;
  return v->i != 0;
}

const GgufTensor *GgufFile::tensor(const std::string &tensorName) const {
  auto it = tensorIndex.find(tensorName);
  return it == tensorIndex.end() ? nullptr : &tens[it->second];
}

//===----------------------------------------------------------------------===//
// Dequantization
//===----------------------------------------------------------------------===//

float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0x1f) {
    // Infinity, or NaN with its payload kept and made quiet (as the F16C
    // instruction does).
    bits = sign | 0x7f800000u | (mantissa << 13) | (mantissa ? 0x00400000u : 0);
  } else if (exponent != 0) {
    // Normal: rebias the exponent from 15 to 127.
    bits = sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign; // signed zero
  } else {
    // Subnormal: mantissa * 2^-24. Shift the leading one up to the implicit
    // bit; every shift halves the exponent 2^-14 of the smallest normal.
    int shifts = 0;
    while (!(mantissa & 0x400)) {
      mantissa <<= 1;
      ++shifts;
    }
    bits = sign | (static_cast<uint32_t>(127 - 15 + 1 - shifts) << 23) |
           ((mantissa & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

float bf16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

namespace {

uint16_t loadU16(const uint8_t *p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

float loadHalf(const uint8_t *p) { return halfToFloat(loadU16(p)); }

float loadF32(const uint8_t *p) {
  uint32_t bits = static_cast<uint32_t>(p[0]) |
                  static_cast<uint32_t>(p[1]) << 8 |
                  static_cast<uint32_t>(p[2]) << 16 |
                  static_cast<uint32_t>(p[3]) << 24;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

/// Q8_0: an f16 scale d, then 32 signed bytes q; x = q * d.
void dequantQ8_0(const uint8_t *block, float *y) {
  const float d = loadHalf(block);
  const int8_t *q = reinterpret_cast<const int8_t *>(block + 2);
  for (int j = 0; j < 32; ++j)
    y[j] = q[j] * d;
}

/// Q4_0: an f16 scale d, then 16 bytes of nibbles. Byte j holds element j
/// in its low nibble and element j + 16 in its high one; x = (nibble - 8) * d.
void dequantQ4_0(const uint8_t *block, float *y) {
  const float d = loadHalf(block);
  const uint8_t *q = block + 2;
  for (int j = 0; j < 16; ++j) {
    const int low = (q[j] & 0x0f) - 8;
    const int high = (q[j] >> 4) - 8;
    y[j] = low * d;
    y[j + 16] = high * d;
  }
}

/// The 6-bit scale and min of sub-block j (0..7) of a Q4_K or Q5_K block,
/// packed into 12 bytes. Sub-blocks 0..3 keep their scale in the low six bits
/// of byte j and their min in the low six bits of byte j + 4. Sub-blocks 4..7
/// keep the low four bits of the scale in the low nibble of byte j + 4 and
/// the low four bits of the min in its high nibble; the top two bits of each
/// sit in the spare top bits of bytes j - 4 (scale) and j (min).
void kQuantScaleMin(const uint8_t *packed, int j, uint8_t &scale,
                    uint8_t &min) {
  if (j < 4) {
    scale = packed[j] & 0x3f;
    min = packed[j + 4] & 0x3f;
    return;
  }
  scale = static_cast<uint8_t>((packed[j + 4] & 0x0f) |
                               ((packed[j - 4] >> 6) << 4));
  min = static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
}

/// Q4_K: 256 elements in 8 sub-blocks of 32. f16 d, f16 dmin, 12 bytes of
/// packed scales and mins, 128 bytes of nibbles. The elements come in four
/// runs of 64 that share 32 bytes: the low nibbles are the first sub-block
/// of the run, the high nibbles the second. x = d*scale * q - dmin*min.
void dequantQ4_K(const uint8_t *block, float *y) {
  const float d = loadHalf(block);
  const float dmin = loadHalf(block + 2);
  const uint8_t *packed = block + 4;
  const uint8_t *q = block + 16;
  for (int run = 0; run < 4; ++run) {
    uint8_t scale, min;
    kQuantScaleMin(packed, 2 * run, scale, min);
    const float dLow = d * scale, mLow = dmin * min;
    kQuantScaleMin(packed, 2 * run + 1, scale, min);
    const float dHigh = d * scale, mHigh = dmin * min;
    for (int l = 0; l < 32; ++l) {
      y[l] = dLow * (q[l] & 0x0f) - mLow;
      y[l + 32] = dHigh * (q[l] >> 4) - mHigh;
    }
    q += 32;
    y += 64;
  }
}

/// Q5_K: Q4_K with a fifth bit per element. f16 d, f16 dmin, 12 bytes of
/// scales and mins, 32 bytes of high bits, 128 bytes of nibbles. In run r of
/// 64 elements, element l (< 32) takes bit 2r of high-bit byte l, and
/// element l + 32 takes bit 2r + 1.
void dequantQ5_K(const uint8_t *block, float *y) {
  const float d = loadHalf(block);
  const float dmin = loadHalf(block + 2);
  const uint8_t *packed = block + 4;
  const uint8_t *highBits = block + 16;
  const uint8_t *q = block + 48;
  for (int run = 0; run < 4; ++run) {
    uint8_t scale, min;
    kQuantScaleMin(packed, 2 * run, scale, min);
    const float dLow = d * scale, mLow = dmin * min;
    kQuantScaleMin(packed, 2 * run + 1, scale, min);
    const float dHigh = d * scale, mHigh = dmin * min;
    const uint8_t lowMask = static_cast<uint8_t>(1u << (2 * run));
    const uint8_t highMask = static_cast<uint8_t>(2u << (2 * run));
    for (int l = 0; l < 32; ++l) {
      y[l] = dLow * ((q[l] & 0x0f) + (highBits[l] & lowMask ? 16 : 0)) - mLow;
      y[l + 32] =
          dHigh * ((q[l] >> 4) + (highBits[l] & highMask ? 16 : 0)) - mHigh;
    }
    q += 32;
    y += 64;
  }
}

/// Q6_K: 256 six-bit values in 16 sub-blocks of 16, each with a signed
/// 8-bit scale. 128 bytes of low nibbles (ql), 64 bytes of high bit pairs
/// (qh), 16 scales, and the f16 d last. Each half of 128 elements uses 64
/// bytes of ql, 32 of qh and 8 scales; its quarters g = 0..3 of 32 take
/// their low nibbles from ql[l] low, ql[l + 32] low, ql[l] high and
/// ql[l + 32] high, and their high bits from bits 2g, 2g + 1 of qh[l].
/// x = d * scale * (q - 32).
void dequantQ6_K(const uint8_t *block, float *y) {
  const uint8_t *ql = block;
  const uint8_t *qh = block + 128;
  const int8_t *scales = reinterpret_cast<const int8_t *>(block + 192);
  const float d = loadHalf(block + 208);
  for (int half = 0; half < 2; ++half) {
    for (int l = 0; l < 32; ++l) {
      const int s = l / 16;
      const int q0 = ((ql[l] & 0x0f) | ((qh[l] & 3) << 4)) - 32;
      const int q1 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q2 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q3 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * scales[s] * q0;
      y[l + 32] = d * scales[s + 2] * q1;
      y[l + 64] = d * scales[s + 4] * q2;
      y[l + 96] = d * scales[s + 6] * q3;
    }
    ql += 64;
    qh += 32;
    scales += 8;
    y += 128;
  }
}

/// TQ1_0: qs[48] and qh[4] of base-3 digits, then an f16 d; each byte is a
/// fixed-point fraction whose leading digit is (byte * 3) >> 8, the next
/// digits appearing after multiplying by 3 (mod 256). Element 32n + m is
/// digit n of qs[m] (m < 32), 160 + 16n + m digit n of qs[32 + m], 240 +
/// 4n + j digit n of qh[j]; x = (digit - 1) * d.
void dequantTQ1_0(const uint8_t *block, float *y) {
  static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
  const float d = loadHalf(block + 52);
  auto digit = [&](uint8_t byte, int n) {
    uint8_t shifted = static_cast<uint8_t>(byte * pow3[n]);
    return static_cast<int>((static_cast<uint16_t>(shifted) * 3) >> 8);
  };
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 32; ++m)
      *y++ = static_cast<float>(digit(block[m], n) - 1) * d;
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 16; ++m)
      *y++ = static_cast<float>(digit(block[32 + m], n) - 1) * d;
  for (int n = 0; n < 4; ++n)
    for (int j = 0; j < 4; ++j)
      *y++ = static_cast<float>(digit(block[48 + j], n) - 1) * d;
}

/// TQ2_0: qs[64] of 2-bit codes, then an f16 d. Element 128h + 32l + m is
/// bits 2l..2l+1 of qs[32h + m]; x = (code - 1) * d.
void dequantTQ2_0(const uint8_t *block, float *y) {
  const float d = loadHalf(block + 64);
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 4; ++l)
      for (int m = 0; m < 32; ++m)
        *y++ = static_cast<float>(((block[32 * h + m] >> (2 * l)) & 3) - 1) *
               d;
}

/// I2_S, one 32-byte block of 128 codes: element 32k + m is bits
/// 6-2k..7-2k of byte m; x = code - 1 (the tensor's scale is applied by
/// whoever reads the tensor).
void dequantI2_S(const uint8_t *block, float *y) {
  for (int k = 0; k < 4; ++k)
    for (int m = 0; m < 32; ++m)
      *y++ = static_cast<float>(((block[m] >> (6 - 2 * k)) & 3) - 1);
}

} // namespace

float i2sScale(const GgufTensor &t) {
  // The reader sized the tensor as its blocks and the 32-byte trailer; a
  // tensor built by hand may not have one.
  const uint64_t packed = static_cast<uint64_t>(t.numElements) / 4;
  if (t.type != GgmlType::I2_S || t.bytes < packed + 4)
    return 0.0f;
  return loadF32(t.data + packed);
}

Status dequantizeRow(GgmlType t, const uint8_t *src, float *dst, int64_t n) {
  int64_t blockSize = ggmlBlockSize(t);
  if (blockSize == 0)
    return Status::error("dequantizeRow: unknown ggml type " +
                         std::to_string(static_cast<uint32_t>(t)));
  if (n < 0 || n % blockSize != 0)
    return Status::error("dequantizeRow: " + std::to_string(n) +
                         " elements are not a whole number of " +
                         ggmlTypeName(t) + " blocks of " +
                         std::to_string(blockSize));
  const size_t blockBytes = static_cast<size_t>(ggmlBlockBytes(t));
  const size_t blocks = static_cast<size_t>(n / blockSize);
  void (*perBlock)(const uint8_t *, float *) = nullptr;
  switch (t) {
  case GgmlType::F32:
    for (size_t i = 0; i < blocks; ++i)
      dst[i] = loadF32(src + 4 * i);
    return Status();
  case GgmlType::F16:
    for (size_t i = 0; i < blocks; ++i)
      dst[i] = halfToFloat(loadU16(src + 2 * i));
    return Status();
  case GgmlType::BF16:
    for (size_t i = 0; i < blocks; ++i)
      dst[i] = bf16ToFloat(loadU16(src + 2 * i));
    return Status();
  case GgmlType::Q4_0:
    perBlock = dequantQ4_0;
    break;
  case GgmlType::Q8_0:
    perBlock = dequantQ8_0;
    break;
  case GgmlType::Q4_K:
    perBlock = dequantQ4_K;
    break;
  case GgmlType::Q5_K:
    perBlock = dequantQ5_K;
    break;
  case GgmlType::Q6_K:
    perBlock = dequantQ6_K;
    break;
  case GgmlType::TQ1_0:
    perBlock = dequantTQ1_0;
    break;
  case GgmlType::TQ2_0:
    perBlock = dequantTQ2_0;
    break;
  case GgmlType::I2_S:
    perBlock = dequantI2_S;
    break;
  }
  for (size_t i = 0; i < blocks; ++i)
    perBlock(src + i * blockBytes, dst + i * static_cast<size_t>(blockSize));
  return Status();
}

} // namespace hesper::rt
