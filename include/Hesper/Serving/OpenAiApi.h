//===- OpenAiApi.h - OpenAI's request and response shapes -------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// hesper-server's JSON: requests of OpenAI's /v1/completions and
// /v1/chat/completions (and llama-server's /tokenize and /detokenize) read
// into engine requests with every field checked, and the engine's pieces
// written back as OpenAI's completion objects and stream chunks. Bad input
// is an ApiError: the HTTP status and the message of OpenAI's error object.
// No HTTP here (Server.h); the JSON library stays inside the .cpp.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_SERVING_OPENAIAPI_H
#define HESPER_SERVING_OPENAIAPI_H

#include "Hesper/Models/Chat.h"
#include "Hesper/Serving/Engine.h"

#include <optional>
#include <string>
#include <vector>

namespace hesper::serving {

/// An error as OpenAI reports it: {"error": {"message", "type", "code"}}.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param; ///< the offending field, if one
};
std::string errorJson(const ApiError &error);

/// What the API layer needs to know about the model.
struct ApiContext {
  const models::Tokenizer *tokenizer = nullptr; ///< null: ids only
  std::optional<models::ChatFormat> chatFormat; ///< null: no chat
  std::string modelId;     ///< the name /v1/models lists
  int64_t vocab = 0;
  int64_t contextSize = 0; ///< per slot
  int32_t defaultMaxTokens = -1; ///< -n: < 0 until the context is full
};

/// A parsed /v1/completions or /v1/chat/completions request.
struct CompletionCall {
  bool chat = false;
  bool stream = false;
  bool includeUsage = false; ///< stream_options.include_usage
  bool returnTokens = false; ///< llama-server's return_tokens: ids too
  bool logprobs = false;     ///< report the chosen tokens' logprobs
  GenerationRequest generation;
};

/// Reads `body` as a request of the given kind; an error names the field.
std::optional<ApiError> parseCompletionCall(const std::string &body,
                                            bool chat, const ApiContext &api,
                                            CompletionCall &out);

/// The whole response of a non-streamed request.
std::string completionJson(const CompletionCall &call, const ApiContext &api,
                           const std::string &id, int64_t created,
                           const std::vector<TokenPiece> &pieces,
                           FinishReason reason, int64_t promptTokens);

/// One server-sent event's JSON of a streamed request: `pieces` (may be
/// empty), and the finish reason on the last one. The chat stream's first
/// chunk carries the role.
std::string chunkJson(const CompletionCall &call, const ApiContext &api,
                      const std::string &id, int64_t created,
                      const std::vector<TokenPiece> &pieces, bool first,
                      FinishReason reason);
/// The usage chunk that ends a stream with include_usage.
std::string usageChunkJson(const CompletionCall &call, const ApiContext &api,
                           const std::string &id, int64_t created,
                           int64_t promptTokens, int64_t completionTokens);

/// /tokenize {"content", "add_special"} and /detokenize {"tokens"}.
std::optional<ApiError> tokenizeJson(const std::string &body,
                                     const ApiContext &api, std::string &out);
std::optional<ApiError> detokenizeJson(const std::string &body,
                                       const ApiContext &api,
                                       std::string &out);

/// GET /v1/models.
std::string modelsJson(const ApiContext &api, int64_t created,
                       int64_t parameters, const std::string &arch);

} // namespace hesper::serving

#endif // HESPER_SERVING_OPENAIAPI_H
