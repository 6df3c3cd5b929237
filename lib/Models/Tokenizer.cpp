//===- Tokenizer.cpp - Tokenizers from GGUF metadata ----------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The SentencePiece BPE ("llama") and byte-level BPE ("gpt2") tokenizers,
// behaving as llama.cpp's do:
//
//  * Text is first cut at the control / unknown / user-defined token texts it
//    contains (longest token first); those pieces become their token and the
//    text between them is tokenized on its own.
//  * "llama": spaces become U+2581, a text piece at the start or right after
//    a special token gets one prepended (add_space_prefix), the piece is cut
//    into characters, and adjacent symbols whose concatenation is a token are
//    merged, highest token score first (leftmost on ties). Symbols that are
//    not tokens fall back to the <0xNN> byte tokens.
//  * "gpt2": the text is split by the pre-tokenizer (a hand-written matcher
//    of the named regex), each word's bytes are mapped to GPT-2's printable
//    code points, and adjacent symbols are merged by merge rank, lowest
//    first (leftmost on ties).
//
// Both merge loops keep the symbols in a linked list and the candidate pairs
// in a heap; a popped pair whose symbols changed since it was pushed is
// stale and skipped.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/Tokenizer.h"

#include "Unicode.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <utility>

using namespace hesper::models;
namespace uc = hesper::models::unicode;

namespace {

/// U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's stand-in for a space.
constexpr std::string_view spaceMarker = "\xE2\x96\x81";

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

const ByteMapping &byteMapping() {
  static const ByteMapping mapping;
  return mapping;
}

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

int hexDigit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

/// Parses a byte token's text, "<0xNN>".
bool parseByteToken(std::string_view text, uint8_t &byte) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>')
    return false;
  int hi = hexDigit(text[3]), lo = hexDigit(text[4]);
  if (hi < 0 || lo < 0)
    return false;
  byte = static_cast<uint8_t>(hi * 16 + lo);
  return true;
}

std::string byteTokenText(uint8_t byte) {
  static const char hex[] = "0123456789ABCDEF";
  std::string text = "<0x";
  text.push_back(hex[byte >> 4]);
  text.push_back(hex[byte & 15]);
  text.push_back('>');
  return text;
}

/// Quotes a token for an error message, shortening long ones.
std::string quoted(std::string_view text) {
  constexpr size_t maxShown = 40;
  std::string s = "'";
  s.append(text.substr(0, maxShown));
  if (text.size() > maxShown)
    s += "...";
  s += "'";
  return s;
}

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
bool lookupPreTokenizer(std::string_view name, PreTokenizerInfo &info) {
  static const struct {
    const char *name;
    PreTokenizerInfo info;
  } known[] = {
      {"", {PreKind::Gpt2, false}},
      {"default", {PreKind::Gpt2, false}},
      {"gpt2", {PreKind::Gpt2, false}},
      {"gpt-2", {PreKind::Gpt2, false}},
      {"phi-2", {PreKind::Gpt2, false}},
      {"mpt", {PreKind::Gpt2, false}},
      {"olmo", {PreKind::Gpt2, false}},
      {"llama-bpe", {PreKind::Llama3, true}},
      {"llama3", {PreKind::Llama3, true}},
      {"llama-v3", {PreKind::Llama3, true}},
      {"falcon3", {PreKind::Llama3, true}},
      {"smaug-bpe", {PreKind::Llama3, false}},
      {"dbrx", {PreKind::Llama3, false}},
      {"qwen2", {PreKind::Qwen2, false}},
      {"deepseek-r1-qwen", {PreKind::Qwen2, false}},
      {"stablelm2", {PreKind::Qwen2, false}},
  };
  for (const auto &entry : known) {
    if (name == entry.name) {
      info = entry.info;
      return true;
    }
  }
  return false;
}

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

/// Matches 's 't 're 've 'm 'll 'd at `p`; sets `end` past it.
bool matchContraction(const CharSequence &s, size_t p, bool anyCase,
                      size_t &end) {
  if (s.cp(p) != '\'')
    return false;
  auto at = [&](size_t i) {
    uint32_t c = s.cp(i);
    if (anyCase && c >= 'A' && c <= 'Z')
      c += 'a' - 'A';
    return c;
  };
  uint32_t c1 = at(p + 1);
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') {
    end = p + 2;
    return true;
  }
  uint32_t c2 = at(p + 2);
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') ||
      (c1 == 'l' && c2 == 'l')) {
    end = p + 3;
    return true;
  }
  return false;
}

/// The length of the run of class `cls` from `p`.
size_t runLength(const CharSequence &s, size_t p, uint8_t cls) {
  size_t q = p;
  while (s.cls(q) == cls)
    ++q;
  return q - p;
}

/// The end of the GPT-2 regex match that starts at `p` (< s.size()).
size_t matchGpt2(const CharSequence &s, size_t p) {
  size_t end;
  if (matchContraction(s, p, /*anyCase=*/false, end))
    return end;
  // " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+".
  bool space = s.cp(p) == ' ';
  uint8_t cls = space ? s.cls(p + 1) : s.cls(p);
  if (cls == uc::Letter || cls == uc::Number || cls == uc::Other) {
    size_t start = p + (space ? 1 : 0);
    return start + runLength(s, start, cls);
  }
  // "\s+(?!\S)": a run of spaces followed by a non-space leaves its last one
  // to that; "\s+" otherwise.
  size_t n = runLength(s, p, uc::Whitespace);
  if (n > 1 && p + n < s.size())
    return p + n - 1;
  return p + std::max<size_t>(n, 1);
}

/// The end of the Llama 3 (`maxDigits` = 3) or Qwen2 (`maxDigits` = 1)
/// regex match that starts at `p` (< s.size()).
size_t matchLlama3(const CharSequence &s, size_t p, size_t maxDigits) {
  size_t end;
  if (matchContraction(s, p, /*anyCase=*/true, end))
    return end;
  uint32_t c0 = s.cp(p);
  uint8_t k0 = s.cls(p);
  // "[^\r\n\p{L}\p{N}]?\p{L}+".
  if (c0 != '\r' && c0 != '\n' && k0 != uc::Number &&
      (k0 == uc::Letter || s.cls(p + 1) == uc::Letter))
    return p + 1 + runLength(s, p + 1, uc::Letter);
  // "\p{N}{1,3}" (or "\p{N}").
  if (k0 == uc::Number)
    return p + std::min(maxDigits, runLength(s, p, uc::Number));
  // " ?[^\s\p{L}\p{N}]+[\r\n]*".
  bool space = c0 == ' ';
  if ((space ? s.cls(p + 1) : k0) == uc::Other) {
    size_t q = p + (space ? 1 : 0);
    q += runLength(s, q, uc::Other);
    while (s.cp(q) == '\r' || s.cp(q) == '\n')
      ++q;
    return q;
  }
  // "\s*[\r\n]+": through the last line break of the run of spaces.
  size_t n = runLength(s, p, uc::Whitespace);
  size_t afterBreak = 0;
  for (size_t i = p; i < p + n; ++i)
    if (s.cp(i) == '\r' || s.cp(i) == '\n')
      afterBreak = i + 1;
  if (afterBreak)
    return afterBreak;
  // "\s+(?!\S)", "\s+".
  if (n > 1 && p + n < s.size())
    return p + n - 1;
  return p + std::max<size_t>(n, 1);
}

/// Splits `text` into words, as byte ranges [first, second).
void splitWords(PreKind kind, std::string_view text, CharSequence &chars,
                std::vector<std::pair<size_t, size_t>> &words) {
  words.clear();
  chars.assign(text);
  for (size_t p = 0, n = chars.size(); p < n;) {
    size_t end = p + 1;
    switch (kind) {
    case PreKind::Gpt2:
      end = matchGpt2(chars, p);
      break;
    case PreKind::Llama3:
      end = matchLlama3(chars, p, 3);
      break;
    case PreKind::Qwen2:
      end = matchLlama3(chars, p, 1);
      break;
    }
    end = std::min(std::max(end, p + 1), n);
    words.emplace_back(chars.offset(p), chars.offset(end));
    p = end;
  }
}

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

/// Heap order: true when `a` comes after `b`.
struct SpmLater {
  bool operator()(const Candidate &a, const Candidate &b) const {
    if (a.score != b.score)
      return a.score < b.score;
    return a.left > b.left;
  }
};

struct BpeLater {
  bool operator()(const Candidate &a, const Candidate &b) const {
    if (a.rank != b.rank)
      return a.rank > b.rank;
    return a.left > b.left;
  }
};

/// Buffers reused across the pieces of one encode() call.
struct Scratch {
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
  std::vector<std::pair<size_t, size_t>> words;
  CharSequence chars;
  std::string text;
};

/// Cuts `symbols` off at `text`'s characters, linked in order.
void initSymbols(std::string_view text, bool perByte,
                 std::vector<Symbol> &symbols) {
  symbols.clear();
  symbols.reserve(text.size());
  for (size_t off = 0; off < text.size();) {
    size_t len = 1;
    if (!perByte) {
      uint32_t cp;
      len = uc::decodeUtf8(text.data() + off, text.size() - off, cp);
    }
    int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back({off, len, index - 1, -1, -1});
    if (index > 0)
      symbols[index - 1].next = index;
    off += len;
  }
}

/// Whether a popped candidate still describes two adjacent live symbols.
bool isCurrent(const std::vector<Symbol> &symbols, const Candidate &c) {
  const Symbol &l = symbols[c.left], &r = symbols[c.right];
  return l.length != 0 && r.length != 0 && l.next == c.right &&
         static_cast<uint32_t>(l.length + r.length) == c.length;
}

/// Merges the right symbol of `c` into its left one.
void applyMerge(std::vector<Symbol> &symbols, const Candidate &c) {
  Symbol &l = symbols[c.left], &r = symbols[c.right];
  l.length += r.length;
  r.length = 0;
  l.next = r.next;
  if (r.next >= 0)
    symbols[r.next].prev = c.left;
}

/// The merge loop of both models. Every adjacent pair gets a candidate if
/// `pairOf(left, right, candidate)` finds one; then, best first (`Later`
/// orders the heap), each candidate that still describes two adjacent live
/// symbols is merged, the merged symbol takes the candidate's result id,
/// and its new pairs with its neighbours become candidates.
template <typename Later, typename PairFn>
void mergeBest(std::vector<Symbol> &symbols, std::vector<Candidate> &heap,
               PairFn pairOf) {
  heap.clear();
  heap.reserve(symbols.size());
  auto consider = [&](int32_t left, int32_t right, bool keepHeap) {
    Candidate c;
    if (left < 0 || right < 0 || !pairOf(left, right, c))
      return;
    heap.push_back(c);
    if (keepHeap)
      std::push_heap(heap.begin(), heap.end(), Later());
  };
  // Seed with every adjacent pair, then heapify once.
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i)
    consider(i - 1, i, false);
  std::make_heap(heap.begin(), heap.end(), Later());
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), Later());
    Candidate c = heap.back();
    heap.pop_back();
    if (!isCurrent(symbols, c))
      continue;
    applyMerge(symbols, c);
    symbols[c.left].id = c.result;
    consider(symbols[c.left].prev, c.left, true);
    consider(c.left, symbols[c.left].next, true);
  }
}

/// A piece of the text to encode: raw text, or a special token.
struct Fragment {
  size_t offset;
  size_t length;
  int32_t token; ///< -1 for raw text.
};

const char *const eogNames[] = {
    "<|eot_id|>", "<|im_end|>", "<|endoftext|>",   "<end_of_turn>",
    "<|eom_id|>", "<|end|>",    "<|end_of_text|>", "<EOT>",
};

} // namespace

//===----------------------------------------------------------------------===//
// Tokenizer::Impl
//===----------------------------------------------------------------------===//

struct Tokenizer::Impl {
  TokenizerVocab v;
  bool spm = false;
  PreTokenizerInfo pre = {PreKind::Gpt2, false};

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
                 std::vector<Fragment> &fragments) const;
  void encodeSpm(std::string_view text, Scratch &scratch,
                 std::vector<int32_t> &out) const;
  void emitSpmSymbol(std::string_view piece, std::vector<int32_t> &out) const;
  void encodeBpe(std::string_view text, Scratch &scratch,
                 std::vector<int32_t> &out) const;
  void encodeBpeWord(std::string_view word, Scratch &scratch,
                     std::vector<int32_t> &out) const;
  void appendPiece(int32_t id, bool showSpecial, std::string &out) const;
};

bool Tokenizer::Impl::init(std::string &error) {
  const size_t n = v.tokens.size();
  if (v.model == "llama") {
    spm = true;
  } else if (v.model == "gpt2") {
    spm = false;
    if (!lookupPreTokenizer(v.pre, pre)) {
      error = "unknown pre-tokenizer " + quoted(v.pre);
      return false;
    }
  } else {
    error = "unknown tokenizer model " + quoted(v.model);
    return false;
  }
  if (n == 0) {
    error = "the vocabulary has no tokens";
    return false;
  }
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    error = "the vocabulary has too many tokens";
    return false;
  }
  if (!v.scores.empty() && v.scores.size() != n) {
    error = "there are " + std::to_string(v.scores.size()) +
            " token scores for " + std::to_string(n) + " tokens";
    return false;
  }
  if (!v.types.empty() && v.types.size() != n) {
    error = "there are " + std::to_string(v.types.size()) +
            " token types for " + std::to_string(n) + " tokens";
    return false;
  }
  const std::pair<const char *, int32_t> specialIds[] = {
      {"bos", v.bos}, {"eos", v.eos}, {"unk", v.unk}, {"pad", v.pad}};
  for (const auto &[name, id] : specialIds) {
    if (id < -1 || id >= static_cast<int32_t>(n)) {
      error = std::string(name) + " token id " + std::to_string(id) +
              " is out of range (vocabulary of " + std::to_string(n) +
              " tokens)";
      return false;
    }
  }

  ids.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string &text = v.tokens[i];
    if (text.empty()) {
      error = "token " + std::to_string(i) + " is empty";
      return false;
    }
    auto [it, inserted] = ids.emplace(text, static_cast<int32_t>(i));
    if (!inserted) {
      error = "token " + quoted(text) + " appears twice (ids " +
              std::to_string(it->second) + " and " + std::to_string(i) + ")";
      return false;
    }
  }

  scores.assign(n, 0.0f);
  for (size_t i = 0; i < v.scores.size(); ++i)
    scores[i] = std::isnan(v.scores[i])
                    ? -std::numeric_limits<float>::infinity()
                    : v.scores[i];

  types.assign(n, TokenType::Normal);
  if (!v.types.empty()) {
    for (size_t i = 0; i < n; ++i) {
      int32_t t = v.types[i];
      types[i] = t >= 0 && t <= static_cast<int32_t>(TokenType::Byte)
                     ? static_cast<TokenType>(t)
                     : TokenType::Undefined;
    }
  } else {
    // No types given: the special ids are control tokens, and for SPM the
    // <0xNN> tokens are byte tokens.
    uint8_t byte;
    if (spm)
      for (size_t i = 0; i < n; ++i)
        if (parseByteToken(v.tokens[i], byte))
          types[i] = TokenType::Byte;
    for (int32_t id : {v.bos, v.eos, v.pad})
      if (id >= 0)
        types[id] = TokenType::Control;
    if (v.unk >= 0)
      types[v.unk] = TokenType::Unknown;
  }

  for (size_t i = 0; i < n; ++i) {
    TokenType t = types[i];
    if (t == TokenType::Control || t == TokenType::UserDefined ||
        t == TokenType::Unknown)
      specials.push_back(static_cast<int32_t>(i));
  }
  std::stable_sort(specials.begin(), specials.end(), [&](int32_t a, int32_t b) {
    return v.tokens[a].size() > v.tokens[b].size();
  });

  for (const char *name : eogNames) {
    int32_t id = lookup(name);
    if (id >= 0 && id != v.eos)
      eogIds.push_back(id);
  }

  if (spm) {
    for (int b = 0; b < 256; ++b) {
      int32_t id = lookup(byteTokenText(static_cast<uint8_t>(b)));
      if (id < 0)
        id = lookup(std::string(1, static_cast<char>(b)));
      byteTokens[b] = id;
    }
    return true;
  }

  const ByteMapping &mapping = byteMapping();
  for (int b = 0; b < 256; ++b)
    byteCharTokens[b] = lookup(mapping.utf8[b]);

  if (v.merges.size() >
      static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    error = "there are too many merges";
    return false;
  }
  merges.reserve(v.merges.size());
  std::string joined;
  for (size_t i = 0; i < v.merges.size(); ++i) {
    std::string_view merge = v.merges[i];
    // As llama.cpp: split at the first space after the first character.
    size_t space = merge.size() > 1 ? merge.find(' ', 1) : std::string::npos;
    if (space == std::string_view::npos) {
      error =
          "merge " + std::to_string(i) + " " + quoted(merge) + " has no space";
      return false;
    }
    std::string_view left = merge.substr(0, space);
    std::string_view right = merge.substr(space + 1);
    int32_t leftId = lookup(left), rightId = lookup(right);
    for (auto [part, id] :
         {std::make_pair(left, leftId), std::make_pair(right, rightId)}) {
      if (id < 0) {
        error = "merge " + std::to_string(i) + " names token " + quoted(part) +
                " that is not in the vocabulary";
        return false;
      }
    }
    joined.assign(left);
    joined.append(right);
    uint64_t key = (uint64_t(uint32_t(leftId)) << 32) | uint32_t(rightId);
    // The first of duplicate merges wins, as in llama.cpp.
    merges.emplace(key, Merge{static_cast<int32_t>(i), lookup(joined)});
  }
  return true;
}

void Tokenizer::Impl::partition(const std::string &text, bool parseSpecial,
                                std::vector<Fragment> &fragments) const {
  fragments.clear();
  if (text.empty())
    return;
  fragments.push_back({0, text.size(), -1});
  std::string_view all = text;
  std::vector<Fragment> next;
  for (int32_t id : specials) {
    if (!parseSpecial && types[id] != TokenType::UserDefined)
      continue;
    const std::string &special = v.tokens[id];
    bool found = false;
    next.clear();
    for (const Fragment &f : fragments) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      size_t pos = f.offset, end = f.offset + f.length;
      std::string_view window = all.substr(0, end);
      while (pos < end) {
        size_t hit = window.find(special, pos);
        if (hit == std::string_view::npos)
          break;
        if (hit > pos)
          next.push_back({pos, hit - pos, -1});
        next.push_back({hit, special.size(), id});
        pos = hit + special.size();
        found = true;
      }
      if (pos < end)
        next.push_back({pos, end - pos, -1});
    }
    if (found)
      fragments.swap(next);
  }
}

void Tokenizer::Impl::emitSpmSymbol(std::string_view piece,
                                    std::vector<int32_t> &out) const {
  int32_t id = lookup(piece);
  if (id >= 0) {
    out.push_back(id);
    return;
  }
  // Byte fallback; a character some of whose bytes have no token becomes
  // one unknown token instead (if there is one).
  bool allBytes = true;
  for (char c : piece)
    allBytes &= byteTokens[static_cast<uint8_t>(c)] >= 0;
  if (!allBytes && v.unk >= 0) {
    out.push_back(v.unk);
    return;
  }
  for (char c : piece)
    if (int32_t b = byteTokens[static_cast<uint8_t>(c)]; b >= 0)
      out.push_back(b);
}

void Tokenizer::Impl::encodeSpm(std::string_view text, Scratch &scratch,
                                std::vector<int32_t> &out) const {
  std::vector<Symbol> &symbols = scratch.symbols;
  std::vector<Candidate> &heap = scratch.heap;
  initSymbols(text, /*perByte=*/false, symbols);
  if (symbols.empty())
    return;
  mergeBest<SpmLater>(
      symbols, heap, [&](int32_t left, int32_t right, Candidate &c) {
        const Symbol &l = symbols[left], &r = symbols[right];
        std::string_view joined = text.substr(l.start, l.length + r.length);
        int32_t id = lookup(joined);
        if (id < 0)
          return false;
        c = {scores[id], 0, left, right,
             static_cast<uint32_t>(joined.size()), id};
        return true;
      });
  for (int32_t i = 0; i >= 0; i = symbols[i].next)
    emitSpmSymbol(text.substr(symbols[i].start, symbols[i].length), out);
}

void Tokenizer::Impl::encodeBpeWord(std::string_view word, Scratch &scratch,
                                    std::vector<int32_t> &out) const {
  const ByteMapping &mapping = byteMapping();
  if (pre.ignoreMerges) {
    std::string &mapped = scratch.text;
    mapped.clear();
    for (char c : word)
      mapped += mapping.utf8[static_cast<uint8_t>(c)];
    if (int32_t id = lookup(mapped); id >= 0) {
      out.push_back(id);
      return;
    }
  }

  std::vector<Symbol> &symbols = scratch.symbols;
  std::vector<Candidate> &heap = scratch.heap;
  initSymbols(word, /*perByte=*/true, symbols);
  if (symbols.empty())
    return;
  for (Symbol &s : symbols)
    s.id = byteCharTokens[static_cast<uint8_t>(word[s.start])];
  mergeBest<BpeLater>(
      symbols, heap, [&](int32_t left, int32_t right, Candidate &c) {
        const Symbol &l = symbols[left], &r = symbols[right];
        if (l.id < 0 || r.id < 0)
          return false;
        auto it =
            merges.find((uint64_t(uint32_t(l.id)) << 32) | uint32_t(r.id));
        if (it == merges.end())
          return false;
        c = {0.0f, it->second.rank, left, right,
             static_cast<uint32_t>(l.length + r.length), it->second.result};
        return true;
      });
  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    const Symbol &s = symbols[i];
    if (s.id >= 0) {
      out.push_back(s.id);
      continue;
    }
    // A merge whose result is not a token: one token per byte.
    for (size_t k = s.start; k < s.start + s.length; ++k) {
      int32_t id = byteCharTokens[static_cast<uint8_t>(word[k])];
      if (id < 0)
        id = v.unk;
      if (id >= 0)
        out.push_back(id);
    }
  }
}

void Tokenizer::Impl::encodeBpe(std::string_view text, Scratch &scratch,
                                std::vector<int32_t> &out) const {
  splitWords(pre.kind, text, scratch.chars, scratch.words);
  // encodeBpeWord uses the other scratch buffers, not the word list.
  for (const auto &[begin, end] : scratch.words)
    encodeBpeWord(text.substr(begin, end - begin), scratch, out);
}

void Tokenizer::Impl::appendPiece(int32_t id, bool showSpecial,
                                  std::string &out) const {
  if (id < 0 || id >= static_cast<int32_t>(v.tokens.size()))
    return;
  const std::string &text = v.tokens[id];
  switch (types[id]) {
  case TokenType::Control:
  case TokenType::Unknown:
    if (showSpecial)
      out += text;
    return;
  case TokenType::UserDefined:
    out += text;
    return;
  case TokenType::Byte: {
    uint8_t byte;
    if (parseByteToken(text, byte)) {
      out.push_back(static_cast<char>(byte));
      return;
    }
    break; // Decode the text as a normal token's.
  }
  case TokenType::Normal:
    break;
  case TokenType::Undefined:
  case TokenType::Unused:
    return;
  }

  if (spm) {
    // U+2581 back to spaces.
    std::string_view rest = text;
    while (!rest.empty()) {
      if (rest.substr(0, spaceMarker.size()) == spaceMarker) {
        out.push_back(' ');
        rest.remove_prefix(spaceMarker.size());
      } else {
        out.push_back(rest.front());
        rest.remove_prefix(1);
      }
    }
    return;
  }
  // Undo the byte mapping; a code point that stands for no byte is kept.
  const ByteMapping &mapping = byteMapping();
  for (size_t off = 0; off < text.size();) {
    uint32_t cp;
    size_t len = uc::decodeUtf8(text.data() + off, text.size() - off, cp);
    if (cp < ByteMapping::numCodePoints && mapping.byteOf[cp] >= 0)
      out.push_back(static_cast<char>(mapping.byteOf[cp]));
    else
      out.append(text, off, len);
    off += len;
  }
}

//===----------------------------------------------------------------------===//
// Tokenizer
//===----------------------------------------------------------------------===//

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::create(TokenizerVocab vocab,
                                             std::string &error) {
  std::unique_ptr<Tokenizer> tokenizer(new Tokenizer());
  tokenizer->impl = std::make_unique<Impl>();
  // The token map points into the vocabulary, so it is built only after the
  // vocabulary is in its final place.
  tokenizer->impl->v = std::move(vocab);
  if (!tokenizer->impl->init(error))
    return nullptr;
  error.clear();
  return tokenizer;
}

std::vector<int32_t> Tokenizer::encode(const std::string &text, bool addSpecial,
                                       bool parseSpecial) const {
  const Impl &im = *impl;
  const TokenizerVocab &v = im.v;
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (addSpecial && v.addBos && v.bos >= 0)
    out.push_back(v.bos);

  std::vector<Fragment> fragments;
  im.partition(text, parseSpecial, fragments);
  Scratch scratch;
  // SPM: a text fragment at the start or after a special token gets the
  // space prefix (llama.cpp's is_prev_special).
  bool afterSpecial = true;
  for (const Fragment &f : fragments) {
    if (f.token >= 0) {
      out.push_back(f.token);
      afterSpecial = true;
      continue;
    }
    std::string_view piece(text.data() + f.offset, f.length);
    if (!im.spm) {
      im.encodeBpe(piece, scratch, out);
      continue;
    }
    std::string escaped;
    escaped.reserve(piece.size() + piece.size() / 4 + 3);
    if (v.addSpacePrefix && afterSpecial)
      escaped.append(spaceMarker);
    for (char c : piece) {
      if (c == ' ')
        escaped.append(spaceMarker);
      else
        escaped.push_back(c);
    }
    im.encodeSpm(escaped, scratch, out);
    afterSpecial = false;
  }

  if (addSpecial && v.addEos && v.eos >= 0)
    out.push_back(v.eos);
  return out;
}

std::string Tokenizer::decodeToken(int32_t id, bool showSpecial) const {
  std::string piece;
  impl->appendPiece(id, showSpecial, piece);
  return piece;
}

std::string Tokenizer::decode(const std::vector<int32_t> &ids,
                              bool showSpecial) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    size_t start = out.size();
    impl->appendPiece(ids[i], showSpecial, out);
    // As llama.cpp's detokenizer: the first token loses the leading space
    // that add_space_prefix put there.
    if (i == 0 && impl->spm && impl->v.addSpacePrefix && out.size() > start &&
        out[start] == ' ')
      out.erase(start, 1);
  }
  return out;
}

const TokenizerVocab &Tokenizer::vocab() const { return impl->v; }

int32_t Tokenizer::size() const {
  return static_cast<int32_t>(impl->v.tokens.size());
}

bool Tokenizer::isEog(int32_t id) const {
  if (id < 0)
    return false;
  if (id == impl->v.eos)
    return true;
  return std::find(impl->eogIds.begin(), impl->eogIds.end(), id) !=
         impl->eogIds.end();
}

std::vector<std::string> hesper::models::preTokenize(const std::string &pre,
                                                     const std::string &text) {
  std::vector<std::string> pieces;
  PreTokenizerInfo info;
  if (!lookupPreTokenizer(pre, info))
    return pieces;
  CharSequence chars;
  std::vector<std::pair<size_t, size_t>> words;
  splitWords(info.kind, text, chars, words);
  pieces.reserve(words.size());
  for (const auto &[begin, end] : words)
    pieces.emplace_back(text, begin, end - begin);
  return pieces;
}
