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
// This file sets up the vocabulary (Tokenizer::Impl::init), cuts a text at
// its special tokens, decodes, and holds the public API; PreTokenizer.cpp
// has the pre-tokenizers and TokenizerMerge.cpp the two merge loops.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/Tokenizer.h"

#include "TokenizerImpl.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <utility>

using namespace hesper::models;
using namespace hesper::models::tokenizer;

namespace {

/// U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's stand-in for a space.
constexpr std::string_view spaceMarker = "\xE2\x96\x81";

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

const char *const eogNames[] = {
    "<|eot_id|>", "<|im_end|>", "<|endoftext|>",   "<end_of_turn>",
    "<|eom_id|>", "<|end|>",    "<|end_of_text|>", "<EOT>",
};

} // namespace

//===----------------------------------------------------------------------===//
// GPT-2's byte <-> code point mapping
//===----------------------------------------------------------------------===//

namespace hesper::models::tokenizer {

const ByteMapping &byteMapping() {
  static const ByteMapping mapping;
  return mapping;
}

} // namespace hesper::models::tokenizer

//===----------------------------------------------------------------------===//
// Tokenizer::Impl
//===----------------------------------------------------------------------===//

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
