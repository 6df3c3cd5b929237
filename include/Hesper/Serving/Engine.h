//===- Engine.h - Generation for many requests at once ----------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The serving engine behind hesper-server: a fixed number of slots, each a
// KV-cache sequence of one multi-sequence Session, and one thread that steps
// them (continuous batching). A step is one Session::runBatch: a row for
// every slot that is generating (its next token, sampled from its last
// logits) and, in the rows left, the next prompt chunk of slots still
// reading their prompts; the matmuls take all rows at once. A request
// joins at the next step once a slot is free and leaves as soon as it
// ends, without stalling the others; a long prompt costs the running
// streams one chunk per step, not the whole prompt.
//
//   auto engine = serving::Engine::create(model, device, options);
//   std::string why;
//   auto request = (*engine)->submit(std::move(generation), why);
//   std::vector<serving::TokenPiece> pieces;
//   while (request->next(pieces, std::chrono::milliseconds(100)))
//     ...                                   // stream the pieces
//
// Each slot keeps its cache between requests: a request goes to the idle
// slot whose cached tokens share the longest prefix with its prompt, and
// only the rest of the prompt is fed (a chat's earlier turns are not
// recomputed). A row reads only its own sequence, so a request's tokens do
// not depend on what shares its steps (docs/Server.md, "Determinism", says
// where the last bits of a logit may).
//
// The engine knows tokens and text, not HTTP or JSON (Server.h).
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_SERVING_ENGINE_H
#define HESPER_SERVING_ENGINE_H

#include "Hesper/Models/Sampler.h"
#include "Hesper/Models/Session.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace hesper::serving {

struct EngineOptions {
  int slots = 1;      ///< sequences decoded at once (-np)
  int queueSize = 64; ///< requests waiting for a slot before 503s
  /// Run a token through the model before the first request
  /// (Session::warmUp; llama-server's --no-warmup turns it off).
  bool warmup = true;
  /// Context per slot, chunk size, batchInvariant (bit-identical tokens
  /// for a request alone or beside others, at a lone stream's cost).
  models::SessionOptions session;
};

/// One generation to run.
struct GenerationRequest {
  std::vector<int32_t> prompt; ///< at least one token, shorter than the
                               ///< context
  int32_t maxTokens = -1;      ///< < 0: until the context is full
  models::SamplerParams sampler;
  std::vector<std::string> stop; ///< the text ends before any of these
  int32_t topLogprobs = 0;       ///< alternatives reported per token
  bool stopAtEndOfGeneration = true;
};

/// A generated token and the text it adds to the reply. The text can be
/// empty (a stop string may be starting, or a UTF-8 character is not yet
/// complete) and later pieces carry what was held back.
struct TokenPiece {
  int32_t id = -1;
  std::string text;
  float logprob = 0; ///< log-softmax of the raw logits at `id`
  std::vector<std::pair<int32_t, float>> top; ///< best ids and logprobs
};

enum class FinishReason { None, Stop, Length, Cancelled, Error, Shutdown };
const char *finishReasonName(FinishReason reason); ///< "stop", "length", ...

/// A request in flight: the engine's thread appends pieces, the reader
/// takes them. Thread-safe.
class Request {
public:
  /// Waits up to `wait` for pieces and moves them into `out` (cleared
  /// first). Returns false once the request has finished and every piece
  /// was taken.
  bool next(std::vector<TokenPiece> &out, std::chrono::milliseconds wait);
  /// Waits for the end and returns every piece at once.
  std::vector<TokenPiece> waitAll();
  /// Asks the engine to stop the request at its next step (a client went
  /// away); the slot is free for the next request.
  void cancel();
  bool cancelled() const;

  /// Valid once next() returned false (or waitAll() returned).
  FinishReason reason() const;
  std::string error() const; ///< for FinishReason::Error
  int64_t promptTokens() const;
  int64_t reusedTokens() const; ///< prompt tokens found in the slot's cache
  int64_t completionTokens() const;
  double promptMs() const, decodeMs() const;
  int slot() const; ///< -1 until it has one

private:
  friend class Engine;
  /// Marks the request finished and wakes its reader.
  void end(FinishReason reason, const std::string &error, int64_t completion,
           double promptMs, double decodeMs);

  mutable std::mutex mutex;
  std::condition_variable changed;
  std::deque<TokenPiece> pieces;
  bool done = false;
  bool cancelFlag = false;
  FinishReason finish = FinishReason::None;
  std::string errorText;
  int64_t nPrompt = 0, nReused = 0, nCompletion = 0;
  double msPrompt = 0, msDecode = 0;
  int slotIndex = -1;
};

/// Counters for /metrics.
struct EngineStats {
  int slots = 0, slotsBusy = 0, queued = 0;
  uint64_t requests = 0, promptTokens = 0, generatedTokens = 0;
  double promptSeconds = 0, decodeSeconds = 0; ///< summed over requests
  uint64_t steps = 0;
};

class Engine {
public:
  /// Compiles one session per slot for `device` (null: the reference
  /// interpreter) and starts the stepping thread. `model` must outlive the
  /// engine.
  static rt::Result<std::unique_ptr<Engine>>
  create(const models::Model &model, rt::Device *device,
         const EngineOptions &options);
  ~Engine();

  /// Why submit() refused a request.
  enum class Refusal { Invalid, Full, ShuttingDown };
  /// Queues `request`; null, `why` and `refusal` when the request fails
  /// validate(), every slot and the queue are full, or the engine is
  /// shutting down.
  std::shared_ptr<Request> submit(GenerationRequest request, std::string &why,
                                  Refusal *refusal = nullptr);
  /// Why `request` cannot run on this engine ("" when it can): an empty
  /// prompt, a prompt that fills the context, an id outside the vocabulary.
  std::string validate(const GenerationRequest &request) const;
  /// Finishes every request (reason Shutdown) and stops the thread.
  void shutdown();

  EngineStats stats() const;
  int64_t contextSize() const; ///< positions per slot
  int slots() const;
  const models::SessionStats &sessionStats() const; ///< of slot 0

private:
  Engine();
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// The length of the longest prefix of `text` that ends on a whole UTF-8
/// character (an incomplete last sequence is held back).
size_t completeUtf8Prefix(std::string_view text);

} // namespace hesper::serving

#endif // HESPER_SERVING_ENGINE_H
