//===- TokenizerImpl.h - Internals shared by the tokenizer ------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// What the tokenizer's three files share: Tokenizer::Impl, GPT-2's byte
// mapping, the pre-tokenizer kinds and character sequence, and the merge
// loops' symbols and buffers. Tokenizer.cpp sets up the vocabulary and
// decodes, PreTokenizer.cpp splits text into words, TokenizerMerge.cpp holds
// the SentencePiece and BPE merge loops.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_LIB_MODELS_TOKENIZERIMPL_H
#define HESPER_LIB_MODELS_TOKENIZERIMPL_H

#include "Hesper/Models/Tokenizer.h"

#include "Unicode.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hesper::models::tokenizer {

namespace uc = hesper::models::unicode;

//===----------------------------------------------------------------------===//
// GPT-2's byte <-> code point mapping
//===----------------------------------------------------------------------===//

/// GPT-2's bytes_to_unicode: the printable bytes ('!'..'~', U+00A1..U+00AC,
/// U+00AE..U+00FF) stand for themselves, the other 68 bytes take the code
/// points from U+0100 up, in byte order.
struct ByteMapping {
  static constexpr uint32_t numCodePoints = 256 + 68;
  std::string utf8[256];         ///< The UTF-8 of each byte's code point.
  int16_t byteOf[numCodePoints]; ///< Code point -> byte, -1 if none.

  ByteMapping() {
    std::fill(std::begin(byteOf), std::end(byteOf), int16_t(-1));
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) ||
                       (b >= 0xAE && b <= 0xFF);
      uint32_t cp = printable ? b : next++;
      uc::appendUtf8(utf8[b], cp);
      byteOf[cp] = static_cast<int16_t>(b);
    }
  }
};

/// The mapping, built on first use.
const ByteMapping &byteMapping();

//===----------------------------------------------------------------------===//
// Pre-tokenizers
//===----------------------------------------------------------------------===//

/// The regexes the pre-tokenizers implement.
enum class PreKind {
  /// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  Gpt2,
  /// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
  ///  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  Llama3,
  /// As Llama3, with \p{N} in place of \p{N}{1,3}.
  Qwen2,
};

struct PreTokenizerInfo {
  PreKind kind;
  bool ignoreMerges; ///< Words that are tokens skip the merges (Llama 3).
};

/// The tokenizer.ggml.pre names understood, with llama.cpp's aliases that
/// use the same regex. An empty name is "default", as in llama.cpp.
bool lookupPreTokenizer(std::string_view name, PreTokenizerInfo &info);

/// The characters of a text, as the pre-tokenizers see them.
class CharSequence {
public:
  /// Marks a position past the end.
  static constexpr uint8_t noChar = 0x80;

  void assign(std::string_view text) {
    codePoints.clear();
    classes.clear();
    offsets.clear();
    for (size_t off = 0; off < text.size();) {
      uint32_t cp;
      size_t len = uc::decodeUtf8(text.data() + off, text.size() - off, cp);
      codePoints.push_back(cp);
      classes.push_back(uc::classify(cp));
      offsets.push_back(off);
      off += len;
    }
    offsets.push_back(text.size());
  }

  size_t size() const { return codePoints.size(); }
  /// The code point at `i`, or an impossible value past the end.
  uint32_t cp(size_t i) const {
    return i < codePoints.size() ? codePoints[i] : 0xFFFFFFFFu;
  }
  /// The class at `i`, or noChar past the end.
  uint8_t cls(size_t i) const {
    return i < classes.size() ? classes[i] : noChar;
  }
  /// The byte offset of character `i` (the text size for i == size()).
  size_t offset(size_t i) const { return offsets[i]; }

private:
  std::vector<uint32_t> codePoints;
  std::vector<uint8_t> classes;
  std::vector<size_t> offsets;
};

/// Splits `text` into words, as byte ranges [first, second).
void splitWords(PreKind kind, std::string_view text, CharSequence &chars,
                std::vector<std::pair<size_t, size_t>> &words);

//===----------------------------------------------------------------------===//
// Merge loop data
//===----------------------------------------------------------------------===//

/// A symbol of the merge loops: a byte range of the text being tokenized,
/// linked to its neighbours. A symbol merged into its left neighbour has
/// length 0.
struct Symbol {
  size_t start;
  size_t length;
  int32_t prev;
  int32_t next;
  int32_t id; ///< Token id of the symbol's text, -1 if none (BPE reads
              ///< it; SPM emits symbols by their text).
};

/// A candidate merge of two adjacent symbols.
struct Candidate {
  float score;     ///< SPM: the merged token's score (higher first).
  int32_t rank;    ///< BPE: the merge's rank (lower first).
  int32_t left;    ///< Index of the left symbol (lower first on ties).
  int32_t right;   ///< Index of the right symbol.
  uint32_t length; ///< Bytes the two symbols had together when pushed
                   ///< (truncated; a mismatch only drops the merge).
  int32_t result;  ///< The merged symbol's token id, -1 if none.
};

/// Buffers reused across the pieces of one encode() call.
struct Scratch {
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
  std::vector<std::pair<size_t, size_t>> words;
  CharSequence chars;
  std::string text;
};

/// A piece of the text to encode: raw text, or a special token.
struct Fragment {
  size_t offset;
  size_t length;
  int32_t token; ///< -1 for raw text.
};

} // namespace hesper::models::tokenizer

namespace hesper::models {

/// A tokenizer's vocabulary and the tables derived from it.
struct Tokenizer::Impl {
  TokenizerVocab v;
  bool spm = false;
  tokenizer::PreTokenizerInfo pre = {tokenizer::PreKind::Gpt2, false};

  /// Token types, derived when the vocabulary gives none.
  std::vector<TokenType> types;
  /// Token scores (0 when none are given; NaN taken as -infinity).
  std::vector<float> scores;
  /// Token text -> id; the views point into v.tokens.
  std::unordered_map<std::string_view, int32_t> ids;
  /// Tokens kept whole when they occur in the text, longest first.
  std::vector<int32_t> specials;
  /// End-of-generation tokens besides EOS.
  std::vector<int32_t> eogIds;

  /// SPM: each byte's fallback token, -1 if none.
  int32_t byteTokens[256];

  /// BPE: the merge of the token pair (left id << 32 | right id).
  struct Merge {
    int32_t rank;
    int32_t result; ///< Id of the merged text, -1 if not a token.
  };
  std::unordered_map<uint64_t, Merge> merges;
  /// BPE: the token of each byte's mapped code point, -1 if none.
  int32_t byteCharTokens[256];

  bool init(std::string &error);

  int32_t lookup(std::string_view text) const {
    auto it = ids.find(text);
    return it == ids.end() ? -1 : it->second;
  }

  void partition(const std::string &text, bool parseSpecial,
                 std::vector<tokenizer::Fragment> &fragments) const;
  void encodeSpm(std::string_view text, tokenizer::Scratch &scratch,
                 std::vector<int32_t> &out) const;
  void emitSpmSymbol(std::string_view piece, std::vector<int32_t> &out) const;
  void encodeBpe(std::string_view text, tokenizer::Scratch &scratch,
                 std::vector<int32_t> &out) const;
  void encodeBpeWord(std::string_view word, tokenizer::Scratch &scratch,
                     std::vector<int32_t> &out) const;
  void appendPiece(int32_t id, bool showSpecial, std::string &out) const;
};

} // namespace hesper::models

#endif // HESPER_LIB_MODELS_TOKENIZERIMPL_H
