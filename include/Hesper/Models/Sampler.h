//===- Sampler.h - Choosing the next token from logits ----------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The samplers of llama.cpp's default chain, applied in its order:
// repetition penalty over the last tokens, top-k, top-p, min-p,
// temperature, then a draw from the remaining distribution. A temperature of
// zero (or less) is greedy decoding: the highest logit, ties to the lowest
// id. The draws come from a seeded Mersenne Twister with a portable
// uniform conversion, so a seed gives the same tokens on every platform.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_MODELS_SAMPLER_H
#define HESPER_MODELS_SAMPLER_H

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace hesper::models {

struct SamplerParams {
  float temperature = 0.8f; ///< 0: greedy
  int32_t topK = 40;        ///< 0: off
  float topP = 0.95f;       ///< 1: off
  float minP = 0.05f;       ///< 0: off
  float repeatPenalty = 1.0f; ///< 1: off
  int32_t repeatLastN = 64; ///< tokens the penalty looks back over (-1: all)
  uint32_t seed = 0;
};

/// The first parameter of `p` outside its range, by the name llama.cpp's
/// server gives it, with why.
struct SamplerParamError {
  const char *param; ///< temperature, top_k, top_p, min_p, repeat_penalty,
                     ///< repeat_last_n
  std::string message;
};

/// Checks `p` against the ranges llama.cpp documents: temperature finite
/// and >= 0, top_k >= 0, top_p and min_p in [0, 1], repeat_penalty finite
/// and > 0, repeat_last_n >= -1. A NaN passes no range check.
std::optional<SamplerParamError> checkSamplerParams(const SamplerParams &p);

class Sampler {
public:
  explicit Sampler(const SamplerParams &params);

  /// Picks the next token from `logits`; `history` is every token so far
  /// (the prompt included), for the repetition penalty.
  int32_t sample(const std::vector<float> &logits,
                 const std::vector<int32_t> &history);

  /// The index of the largest value (ties: the lowest index).
  static int32_t argmax(const std::vector<float> &logits);

private:
  SamplerParams params;
  std::mt19937 rng;
};

} // namespace hesper::models

#endif // HESPER_MODELS_SAMPLER_H
