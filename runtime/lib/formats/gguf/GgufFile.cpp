//===- GgufFile.cpp - The GGUF container parser ---------------------------===//
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
// The type table is in GgufTypes.cpp, the block decoders in GgufDequant.cpp.
//
//===----------------------------------------------------------------------===//

#include "GgufInternal.h"

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

namespace hesper::rt {

namespace {

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
  // `w` and `len` start at 0 only to quiet GCC's -Wmaybe-uninitialized,
  // which cannot see that readLE writes them whenever it succeeds.
  bool readU32(uint32_t &v) {
    uint64_t w = 0;
    if (!readLE(4, w))
      return false;
    v = static_cast<uint32_t>(w);
    return true;
  }
  bool readU64(uint64_t &v) { return readLE(8, v); }

  bool readString(std::string &s) {
    uint64_t len = 0;
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
    if (!detail::isSupportedGgmlType(type)) {
      if (const char *other = detail::otherGgmlTypeName(type))
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
  if (it != tensorIndex.end())
    return &tens[it->second];
  auto view = views.find(tensorName);
  return view == views.end() ? nullptr : &view->second;
}

} // namespace hesper::rt
