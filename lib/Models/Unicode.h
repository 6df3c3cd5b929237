//===- Unicode.h - UTF-8 and code point classes for tokenizers --*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The little Unicode support the tokenizers need: decoding and encoding
// UTF-8 (leniently: a byte that does not start a well-formed sequence is a
// character of its own), and the classes the pre-tokenizer regexes test
// (\p{L}, \p{N}, \s).
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_LIB_MODELS_UNICODE_H
#define HESPER_LIB_MODELS_UNICODE_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace hesper::models::unicode {

/// The class of a code point, as the pre-tokenizer regexes see it. The
/// values match utils/gen_unicode_tables.py.
enum CharClass : uint8_t {
  Other = 0,      ///< None of the below ([^\s\p{L}\p{N}]).
  Letter = 1,     ///< \p{L}: Lu, Ll, Lt, Lm, Lo.
  Number = 2,     ///< \p{N}: Nd, Nl, No.
  Whitespace = 4, ///< \s: the White_Space property.
};

/// Marks a byte that does not start a well-formed UTF-8 sequence; decodeUtf8
/// returns it (or'ed with the byte) as the "code point" of that byte.
constexpr uint32_t InvalidByteFlag = 0x80000000u;

/// Decodes the character that starts at `s[0]` (`n` > 0 bytes available).
/// Returns its length in bytes (1 to 4) and sets `cp`. A byte that does not
/// start a well-formed, shortest-form sequence of a scalar value is a
/// character of length 1 with `cp` = InvalidByteFlag | byte.
size_t decodeUtf8(const char *s, size_t n, uint32_t &cp);

/// Appends the UTF-8 encoding of `cp` (at most U+10FFFF) to `out`.
void appendUtf8(std::string &out, uint32_t cp);

/// The class of `cp`; invalid bytes (InvalidByteFlag) are Other.
CharClass classify(uint32_t cp);

} // namespace hesper::models::unicode

#endif // HESPER_LIB_MODELS_UNICODE_H
