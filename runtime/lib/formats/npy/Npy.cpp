//===- Npy.cpp - NumPy .npy files -----------------------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// A .npy file is the magic "\x93NUMPY", a major and a minor version byte, the
// header length (2 bytes little-endian in version 1.0, 4 bytes in 2.0 and
// 3.0), the header, and the raw array data. The header is a Python dict
// literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// padded with spaces and a newline. It is parsed here as a small subset of
// Python literals (strings, integers, True/False/None, tuples, lists and the
// dict itself), so key order and spacing do not matter.
//
//===----------------------------------------------------------------------===//

#include "hesper/runtime/Npy.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

namespace hesper::rt {

const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::I32:
    return "i32";
  case DType::U8:
    return "u8";
  }
  return "?";
}

size_t dtypeBytes(DType t) {
  switch (t) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
    return 2;
  case DType::U8:
    return 1;
  }
  return 0;
}

int64_t NpyArray::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
/// Data starts at a multiple of this many bytes in the files we write.
constexpr size_t kArrayAlign = 64;
/// NumPy leaves room after the header dict so that the first dimension can
/// grow in place to this many digits.
constexpr size_t kGrowthAxisMaxDigits = 21;

const char *descrOf(DType t) {
  switch (t) {
  case DType::F32:
    return "<f4";
  case DType::F16:
    return "<f2";
  case DType::I32:
    return "<i4";
  case DType::U8:
    return "|u1";
  }
  return "";
}

bool dtypeOfDescr(const std::string &descr, DType &t) {
  if (descr == "<f4")
    t = DType::F32;
  else if (descr == "<f2")
    t = DType::F16;
  else if (descr == "<i4")
    t = DType::I32;
  else if (descr == "|u1" || descr == "<u1")
    t = DType::U8;
  else
    return false;
  return true;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1)
    s += ",";
  return s + ")";
}

//===----------------------------------------------------------------------===//
// Header parsing
//===----------------------------------------------------------------------===//

/// One Python literal of the header.
struct PyValue {
  enum Kind { Str, Int, Bool, None, Tuple, List, Dict } kind = None;
  std::string str;
  int64_t integer = 0;
  bool boolean = false;
  std::vector<PyValue> items;                        ///< Tuple, List
  std::vector<std::pair<std::string, PyValue>> dict; ///< Dict, in file order
};

/// A recursive-descent parser of the literals above. On failure `error`
/// says what was expected and where.
class HeaderParser {
public:
  explicit HeaderParser(const std::string &text) : s(text) {}

  /// Parses the whole header: one dict, then only whitespace.
  bool parseHeader(PyValue &out) {
    skipSpace();
    if (!peek('{'))
      return fail("expected '{'");
    if (!parseValue(out, 0))
      return false;
    skipSpace();
    if (pos != s.size())
      return fail("unexpected text after the dict");
    return true;
  }

  const std::string &error() const { return err; }

private:
  static constexpr int kMaxDepth = 16;

  bool fail(const std::string &what) {
    err = what + " at offset " + std::to_string(pos);
    return false;
  }

  void skipSpace() {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' ||
                              s[pos] == '\n' || s[pos] == '\r'))
      ++pos;
  }

  bool peek(char c) const { return pos < s.size() && s[pos] == c; }

  bool parseValue(PyValue &v, int depth) {
    if (depth > kMaxDepth)
      return fail("literal nested too deeply");
    skipSpace();
    if (pos >= s.size())
      return fail("unexpected end of header");
    char c = s[pos];
    if (c == '\'' || c == '"') {
      v.kind = PyValue::Str;
      return parseString(v.str);
    }
    if (c == '-' || c == '+' || (c >= '0' && c <= '9')) {
      v.kind = PyValue::Int;
      return parseInt(v.integer);
    }
    if (c == '(' || c == '[')
      return parseSequence(v, depth);
    if (c == '{')
      return parseDict(v, depth);
    size_t start = pos;
    while (pos < s.size() && std::isalpha(static_cast<unsigned char>(s[pos])))
      ++pos;
    std::string word = s.substr(start, pos - start);
    pos = start;
    if (word == "True" || word == "False") {
      v.kind = PyValue::Bool;
      v.boolean = word == "True";
    } else if (word == "None") {
      v.kind = PyValue::None;
    } else {
      return fail("expected a Python literal");
    }
    pos += word.size();
    return true;
  }

  bool parseString(std::string &out) {
    char quote = s[pos++];
    while (pos < s.size() && s[pos] != quote) {
      if (s[pos] == '\\' && pos + 1 < s.size())
        ++pos;
      out += s[pos++];
    }
    if (pos >= s.size())
      return fail("unterminated string");
    ++pos;
    return true;
  }

  bool parseInt(int64_t &out) {
    bool negative = false;
    if (s[pos] == '-' || s[pos] == '+')
      negative = s[pos++] == '-';
    if (pos >= s.size() || s[pos] < '0' || s[pos] > '9')
      return fail("expected digits");
    uint64_t mag = 0;
    const uint64_t limit =
        static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      mag = mag * 10 + static_cast<uint64_t>(s[pos++] - '0');
      if (mag > limit)
        return fail("integer too large");
    }
    // Python 2 wrote long integers with an L suffix.
    if (pos < s.size() && (s[pos] == 'L' || s[pos] == 'l'))
      ++pos;
    out = negative ? -static_cast<int64_t>(mag) : static_cast<int64_t>(mag);
    return true;
  }

  /// A tuple or a list. As in Python, "(x)" is x itself, "(x,)" a tuple.
  bool parseSequence(PyValue &v, int depth) {
    char close = s[pos] == '(' ? ')' : ']';
    v.kind = s[pos] == '(' ? PyValue::Tuple : PyValue::List;
    ++pos;
    bool trailingComma = false;
    for (;;) {
      skipSpace();
      if (peek(close))
        break;
      PyValue item;
      if (!parseValue(item, depth + 1))
        return false;
      v.items.push_back(std::move(item));
      skipSpace();
      trailingComma = peek(',');
      if (trailingComma) {
        ++pos;
        continue;
      }
      if (!peek(close))
        return fail(std::string("expected ',' or '") + close + "'");
    }
    ++pos;
    if (v.kind == PyValue::Tuple && v.items.size() == 1 && !trailingComma) {
      PyValue inner = std::move(v.items.front());
      v = std::move(inner);
    }
    return true;
  }

  bool parseDict(PyValue &v, int depth) {
    v.kind = PyValue::Dict;
    ++pos;
    for (;;) {
      skipSpace();
      if (peek('}'))
        break;
      if (!peek('\'') && !peek('"'))
        return fail("expected a string key");
      std::string key;
      if (!parseString(key))
        return false;
      skipSpace();
      if (!peek(':'))
        return fail("expected ':' after key '" + key + "'");
      ++pos;
      PyValue value;
      if (!parseValue(value, depth + 1))
        return false;
      v.dict.emplace_back(std::move(key), std::move(value));
      skipSpace();
      if (peek(',')) {
        ++pos;
        continue;
      }
      if (!peek('}'))
        return fail("expected ',' or '}'");
    }
    ++pos;
    return true;
  }

  const std::string &s;
  size_t pos = 0;
  std::string err;
};

/// Python's repr of a descr value that is not a plain string, for messages.
std::string describe(const PyValue &v) {
  switch (v.kind) {
  case PyValue::Str:
    return "'" + v.str + "'";
  case PyValue::Int:
    return std::to_string(v.integer);
  case PyValue::Bool:
    return v.boolean ? "True" : "False";
  case PyValue::None:
    return "None";
  case PyValue::Tuple:
    return "a tuple";
  case PyValue::List:
    return "a list (a structured dtype)";
  case PyValue::Dict:
    return "a dict";
  }
  return "?";
}

uint32_t readLE(const uint8_t *p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i)
    v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

} // namespace

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

Result<NpyArray> parseNpy(const uint8_t *bytes, size_t size,
                          const std::string &what) {
  auto error = [&](const std::string &msg) {
    return Status::error(what + ": " + msg);
  };
  if (size < kMagicLen || std::memcmp(bytes, kMagic, kMagicLen) != 0)
    return error("not a .npy file (bad magic)");
  if (size < kMagicLen + 2)
    return error("malformed header: the file ends before the version");
  unsigned major = bytes[kMagicLen], minor = bytes[kMagicLen + 1];
  if (minor != 0 || major < 1 || major > 3)
    return error("unsupported .npy version " + std::to_string(major) + "." +
                 std::to_string(minor) + " (need 1.0, 2.0 or 3.0)");
  size_t lenBytes = major == 1 ? 2 : 4;
  size_t prefix = kMagicLen + 2 + lenBytes;
  if (size < prefix)
    return error("malformed header: the file ends inside the header length");
  size_t headerLen = readLE(bytes + kMagicLen + 2, lenBytes);
  if (headerLen > size - prefix)
    return error("malformed header: it is " + std::to_string(headerLen) +
                 " bytes long but the file ends after " +
                 std::to_string(size - prefix));
  std::string text(reinterpret_cast<const char *>(bytes + prefix), headerLen);

  PyValue dict;
  HeaderParser parser(text);
  if (!parser.parseHeader(dict))
    return error("malformed header: " + parser.error());

  const PyValue *descr = nullptr, *fortran = nullptr, *shape = nullptr;
  for (const auto &[key, value] : dict.dict) {
    const PyValue **slot = key == "descr"           ? &descr
                           : key == "fortran_order" ? &fortran
                           : key == "shape"         ? &shape
                                                    : nullptr;
    if (!slot)
      return error("malformed header: unexpected key '" + key + "'");
    if (*slot)
      return error("malformed header: duplicate key '" + key + "'");
    *slot = &value;
  }
  for (auto [name, slot] : {std::make_pair("descr", descr),
                            std::make_pair("fortran_order", fortran),
                            std::make_pair("shape", shape)})
    if (!slot)
      return error(std::string("malformed header: missing key '") + name + "'");

  NpyArray array;
  if (descr->kind != PyValue::Str)
    return error("dtype " + describe(*descr) +
                 " is not supported (need <f4, <f2, <i4 or |u1)");
  if (!dtypeOfDescr(descr->str, array.dtype))
    return error("dtype '" + descr->str +
                 "' is not supported (need <f4, <f2, <i4 or |u1)");
  if (fortran->kind != PyValue::Bool)
    return error("malformed header: fortran_order is " + describe(*fortran) +
                 ", not True or False");
  if (fortran->boolean)
    return error("fortran_order True is not supported (write the array in C "
                 "order)");
  if (shape->kind != PyValue::Tuple)
    return error("malformed header: shape is " + describe(*shape) +
                 ", not a tuple");
  for (const PyValue &dim : shape->items) {
    if (dim.kind != PyValue::Int)
      return error("malformed header: shape has " + describe(dim) +
                   ", not an integer");
    if (dim.integer < 0)
      return error("negative dimension " + std::to_string(dim.integer) +
                   " in shape");
    array.shape.push_back(dim.integer);
  }

  // The data size, guarding against a shape whose product overflows.
  size_t dataBytes = dtypeBytes(array.dtype);
  bool empty = false;
  for (int64_t d : array.shape)
    empty |= d == 0;
  if (!empty) {
    for (int64_t d : array.shape) {
      if (static_cast<uint64_t>(d) >
          std::numeric_limits<size_t>::max() / dataBytes)
        return error("shape " + shapeString(array.shape) + " is too large");
      dataBytes *= static_cast<size_t>(d);
    }
  } else {
    dataBytes = 0;
  }

  size_t have = size - prefix - headerLen;
  if (have < dataBytes)
    return error("expected " + std::to_string(dataBytes) +
                 " bytes of data, found " + std::to_string(have));
  if (have > dataBytes)
    return error("file has " + std::to_string(have - dataBytes) +
                 " bytes after the data");
  const uint8_t *data = bytes + prefix + headerLen;
  array.data.assign(data, data + dataBytes);
  return array;
}

Result<NpyArray> readNpy(const std::string &path) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return Status::error(path + ": cannot open: " + std::strerror(errno));
  std::vector<uint8_t> bytes;
  uint8_t chunk[65536];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof(chunk), f)) > 0)
    bytes.insert(bytes.end(), chunk, chunk + n);
  int readError = std::ferror(f) ? errno : 0;
  std::fclose(f);
  if (readError)
    return Status::error(path + ": cannot read: " + std::strerror(readError));
  return parseNpy(bytes.data(), bytes.size(), path);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

// The same bytes numpy.save writes: the dict with its keys in sorted order,
// room for the first dimension to grow, then spaces and a newline up to a
// multiple of 64 bytes (a whole 64 more when it already is one).
std::vector<uint8_t> serializeNpy(const NpyArray &array) {
  std::string header =
      std::string("{'descr': '") + descrOf(array.dtype) +
      "', 'fortran_order': False, 'shape': " + shapeString(array.shape) + ", }";
  if (!array.shape.empty()) {
    size_t digits = std::to_string(array.shape.front()).size();
    if (digits < kGrowthAxisMaxDigits)
      header.append(kGrowthAxisMaxDigits - digits, ' ');
  }
  size_t withNewline = header.size() + 1;
  // Version 1.0 unless the header needs more than 2 length bytes.
  unsigned major = 1;
  size_t lenBytes = 2;
  size_t pad =
      kArrayAlign - (kMagicLen + 2 + lenBytes + withNewline) % kArrayAlign;
  if (withNewline + pad > 0xffff) {
    major = 2;
    lenBytes = 4;
    pad = kArrayAlign - (kMagicLen + 2 + lenBytes + withNewline) % kArrayAlign;
  }
  header.append(pad, ' ');
  header += '\n';

  std::vector<uint8_t> out(kMagic, kMagic + kMagicLen);
  out.push_back(static_cast<uint8_t>(major));
  out.push_back(0);
  for (size_t i = 0; i < lenBytes; ++i)
    out.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), array.data.begin(), array.data.end());
  return out;
}

Status writeNpy(const std::string &path, const NpyArray &array) {
  size_t expected = dtypeBytes(array.dtype);
  for (int64_t d : array.shape) {
    if (d < 0)
      return Status::error(path + ": negative dimension " + std::to_string(d) +
                           " in shape");
    expected *= static_cast<size_t>(d);
  }
  if (array.data.size() != expected)
    return Status::error(path + ": shape " + shapeString(array.shape) + " of " +
                         dtypeName(array.dtype) + " needs " +
                         std::to_string(expected) + " bytes of data, the " +
                         "array has " + std::to_string(array.data.size()));
  std::vector<uint8_t> bytes = serializeNpy(array);
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return Status::error(path +
                         ": cannot open for writing: " + std::strerror(errno));
  size_t written = std::fwrite(bytes.data(), 1, bytes.size(), f);
  int writeError = written != bytes.size() ? errno : 0;
  if (std::fclose(f) != 0 && !writeError)
    writeError = errno;
  if (writeError || written != bytes.size())
    return Status::error(path + ": write failed: " +
                         std::strerror(writeError ? writeError : EIO));
  return Status();
}

} // namespace hesper::rt
