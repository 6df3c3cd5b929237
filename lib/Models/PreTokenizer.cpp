//===- PreTokenizer.cpp - Pre-tokenizers of the BPE tokenizer -------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The pre-tokenizers of the byte-level BPE ("gpt2") tokenizer: hand-written
// matchers of the regexes that tokenizer.ggml.pre names (GPT-2's, Llama 3's
// and Qwen2's), which cut a text into the words the merges work within, and
// preTokenize, which exposes them for tests.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/Tokenizer.h"

#include "TokenizerImpl.h"

#include <algorithm>
#include <string_view>
#include <utility>

using namespace hesper::models;
using namespace hesper::models::tokenizer;

namespace {

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

} // namespace

namespace hesper::models::tokenizer {

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

} // namespace hesper::models::tokenizer

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
