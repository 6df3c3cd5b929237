//===- TokenizerMerge.cpp - SentencePiece and BPE merge loops -------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The merge loops of both tokenizer models: "llama" (SentencePiece BPE)
// merges adjacent symbols whose concatenation is a token, highest token
// score first, with byte-token fallback; "gpt2" (byte-level BPE) merges by
// merge rank, lowest first, within each pre-tokenized word. Both keep the
// symbols in a linked list and the candidate pairs in a heap; a popped pair
// whose symbols changed since it was pushed is stale and skipped.
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

} // namespace

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
