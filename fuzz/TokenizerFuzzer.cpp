//===- TokenizerFuzzer.cpp - libFuzzer harness for the tokenizers --------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The input makes a vocabulary and a text: its first byte picks the model
// ("llama" or "gpt2") and flags, the lines up to an empty line are tokens
// (for gpt2, lines starting with '@' are merges "a b" instead), and the
// rest is the text. Creating the tokenizer may fail with an error; when it
// succeeds, encoding must give ids inside the vocabulary and decoding them
// must not fail, for any text, valid UTF-8 or not.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/Tokenizer.h"

#include <cstdint>
#include <cstdlib>
#include <string>

using namespace hesper::models;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  uint8_t mode = data[0];
  std::string rest(reinterpret_cast<const char *>(data + 1), size - 1);
  TokenizerVocab vocab;
  vocab.model = mode & 1 ? "gpt2" : "llama";
  vocab.addBos = mode & 2;
  vocab.addEos = mode & 4;
  vocab.addSpacePrefix = mode & 8;
  size_t pos = 0;
  while (pos < rest.size()) {
    size_t end = rest.find('\n', pos);
    if (end == std::string::npos)
      end = rest.size();
    std::string line = rest.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty())
      break;
    if (vocab.model == "gpt2" && line[0] == '@')
      vocab.merges.push_back(line.substr(1));
    else
      vocab.tokens.push_back(line);
  }
  std::string text = pos < rest.size() ? rest.substr(pos) : "";
  if (!vocab.tokens.empty()) {
    vocab.bos = 0;
    vocab.eos = static_cast<int32_t>(vocab.tokens.size() - 1);
  }
  std::string error;
  auto tok = Tokenizer::create(vocab, error);
  if (!tok)
    return 0;
  int32_t n = static_cast<int32_t>(vocab.tokens.size());
  for (bool special : {false, true}) {
    std::vector<int32_t> ids = tok->encode(text, special, special);
    for (int32_t id : ids)
      if (id < 0 || id >= n)
        std::abort();
    (void)tok->decode(ids);
    for (int32_t id : ids)
      (void)tok->decodeToken(id, special);
  }
  return 0;
}
