//===- Tokenizer.h - Tokenizers from GGUF metadata --------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The two tokenizer families of GGUF files, as llama.cpp implements them:
//
//   tokenizer.ggml.model = "llama": SentencePiece BPE. Spaces become U+2581
//     ("▁"), a leading one is added, adjacent symbols are merged by the
//     highest piece score, and characters with no piece fall back to the
//     <0xNN> byte tokens.
//   tokenizer.ggml.model = "gpt2": byte-level BPE. The text is split by the
//     pre-tokenizer named in tokenizer.ggml.pre ("default" = GPT-2's split,
//     "llama-bpe" = Llama 3's, "qwen2"), each piece's bytes are mapped to
//     printable code points (GPT-2's byte-to-unicode table) and merged by the
//     rank of tokenizer.ggml.merges.
//
// Control and user-defined tokens that occur in the text are kept whole (in
// both families). Decoding reverses the byte mapping, byte tokens and the
// space marker.
//
// This code uses no MLIR: the vocabulary comes in as plain vectors.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_MODELS_TOKENIZER_H
#define HESPER_MODELS_TOKENIZER_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hesper::models {

/// Token types as GGUF's tokenizer.ggml.token_type numbers them.
enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

/// Everything a tokenizer is made from; the names follow the GGUF keys.
struct TokenizerVocab {
  std::string model;                 ///< tokenizer.ggml.model: llama | gpt2
  std::string pre = "default";       ///< tokenizer.ggml.pre (gpt2 only)
  std::vector<std::string> tokens;   ///< tokenizer.ggml.tokens
  std::vector<float> scores;         ///< tokenizer.ggml.scores (may be empty)
  std::vector<int32_t> types;        ///< tokenizer.ggml.token_type (may be empty)
  std::vector<std::string> merges;   ///< tokenizer.ggml.merges ("a b"), gpt2
  int32_t bos = -1, eos = -1, unk = -1, pad = -1; ///< -1: none
  bool addBos = true;                ///< tokenizer.ggml.add_bos_token
  bool addEos = false;               ///< tokenizer.ggml.add_eos_token
  bool addSpacePrefix = true;        ///< tokenizer.ggml.add_space_prefix (llama)
};

class Tokenizer {
public:
  /// Builds the tokenizer; on failure returns null and sets `error` to one
  /// line ("unknown tokenizer model 'xyz'", "merge 12 names token 'ab' that
  /// is not in the vocabulary", ...).
  static std::unique_ptr<Tokenizer> create(TokenizerVocab vocab,
                                           std::string &error);
  ~Tokenizer();

  /// Token ids of `text`; `addSpecial` adds BOS (and EOS) as the vocabulary
  /// asks. `parseSpecial` keeps control (and unknown-type) token texts whole
  /// (otherwise they are tokenized as plain text); user-defined token texts
  /// are always kept whole, as llama.cpp does.
  std::vector<int32_t> encode(const std::string &text, bool addSpecial = true,
                              bool parseSpecial = true) const;
  /// The text of one token (byte tokens become their byte, the space marker
  /// a space; control tokens decode to "" unless `showSpecial`).
  std::string decodeToken(int32_t id, bool showSpecial = false) const;
  /// The text of a sequence. For "llama" the leading space that encoding
  /// added is removed, so decode(encode(s, false)) == s.
  std::string decode(const std::vector<int32_t> &ids,
                     bool showSpecial = false) const;

  const TokenizerVocab &vocab() const;
  int32_t size() const;
  bool isEog(int32_t id) const; ///< EOS, or another end-of-generation token

private:
  Tokenizer();
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// Splits `text` into the pieces the byte-level BPE pre-tokenizer named
/// `pre` (a tokenizer.ggml.pre value: "default", "gpt2", "llama-bpe",
/// "qwen2", or an alias of one of these) produces; the pieces concatenate to
/// `text`. An unknown name gives no pieces. Exposed for testing.
std::vector<std::string> preTokenize(const std::string &pre,
                                     const std::string &text);

} // namespace hesper::models

#endif // HESPER_MODELS_TOKENIZER_H
