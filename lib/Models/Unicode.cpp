//===- Unicode.cpp - UTF-8 and code point classes for tokenizers ----------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Unicode.h"

#include <algorithm>
#include <iterator>

using namespace hesper::models;
using namespace hesper::models::unicode;

namespace {

/// A run of consecutive code points of one class.
struct ClassRun {
  uint32_t first;
  uint32_t last;
  uint8_t cls;
};

constexpr uint8_t L = Letter;
constexpr uint8_t N = Number;
constexpr uint8_t S = Whitespace;

constexpr ClassRun classRuns[] = {
#include "UnicodeTables.inc"
};

/// Classes of the ASCII code points, filled in from the table on first use.
struct AsciiClasses {
  uint8_t cls[128];
  AsciiClasses() {
    for (uint32_t cp = 0; cp < 128; ++cp)
      cls[cp] = Other;
    for (const ClassRun &run : classRuns) {
      if (run.first >= 128)
        break;
      for (uint32_t cp = run.first; cp <= run.last && cp < 128; ++cp)
        cls[cp] = run.cls;
    }
  }
};

const AsciiClasses &asciiClasses() {
  static const AsciiClasses table;
  return table;
}

} // namespace

size_t unicode::decodeUtf8(const char *s, size_t n, uint32_t &cp) {
  const auto *p = reinterpret_cast<const unsigned char *>(s);
  unsigned char b0 = p[0];
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  size_t len;
  uint32_t value, min;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, value = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, value = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, value = b0 & 0x07, min = 0x10000;
  } else {
    cp = InvalidByteFlag | b0;
    return 1;
  }
  if (n < len) {
    cp = InvalidByteFlag | b0;
    return 1;
  }
  for (size_t i = 1; i < len; ++i) {
    if ((p[i] & 0xC0) != 0x80) {
      cp = InvalidByteFlag | b0;
      return 1;
    }
    value = (value << 6) | (p[i] & 0x3F);
  }
  // Reject overlong forms, surrogates and values past U+10FFFF.
  if (value < min || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) {
    cp = InvalidByteFlag | b0;
    return 1;
  }
  cp = value;
  return len;
}

void unicode::appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

CharClass unicode::classify(uint32_t cp) {
  if (cp < 128)
    return static_cast<CharClass>(asciiClasses().cls[cp]);
  if (cp > 0x10FFFF)
    return Other;
  // The last run whose first code point is <= cp.
  const ClassRun *end = std::end(classRuns);
  const ClassRun *it = std::upper_bound(
      std::begin(classRuns), end, cp,
      [](uint32_t c, const ClassRun &run) { return c < run.first; });
  if (it == std::begin(classRuns))
    return Other;
  --it;
  return cp <= it->last ? static_cast<CharClass>(it->cls) : Other;
}
