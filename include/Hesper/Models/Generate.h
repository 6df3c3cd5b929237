//===- Generate.h - The generation loop -------------------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Feeds a prompt through a Session, then samples and feeds tokens until an
// end-of-generation token or the token budget, handing every new token to a
// callback as soon as it exists (for streaming).
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_MODELS_GENERATE_H
#define HESPER_MODELS_GENERATE_H

#include "Hesper/Models/Sampler.h"
#include "Hesper/Models/Session.h"

#include <functional>

namespace hesper::models {

struct GenerateOptions {
  int32_t maxTokens = 128;   ///< tokens to generate (-n); < 0: until the end
  SamplerParams sampler;
  bool stopAtEndOfGeneration = true;
  /// Keep the logits of every processed position (prompt and generated),
  /// row by row, for comparison with other implementations.
  bool keepLogits = false;
};

struct GenerateResult {
  std::vector<int32_t> generated;
  std::vector<std::vector<float>> logits; ///< when keepLogits
  int64_t promptTokens = 0;
  double promptMs = 0;  ///< wall time of the prompt
  double decodeMs = 0;  ///< wall time of the generated tokens
  double sampleMs = 0;  ///< of which sampling on the host
  bool stoppedAtEnd = false; ///< an end-of-generation token was sampled
};

/// Runs `prompt` (at least one token) then generation. `onToken` sees each
/// generated token; returning false stops generation. `isEnd` says which
/// tokens end generation (may be empty).
rt::Result<GenerateResult>
generate(Session &session, const std::vector<int32_t> &prompt,
         const GenerateOptions &options,
         const std::function<bool(int32_t)> &onToken,
         const std::function<bool(int32_t)> &isEnd = {});

} // namespace hesper::models

#endif // HESPER_MODELS_GENERATE_H
