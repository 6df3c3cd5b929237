//===- OpenAiApi.cpp - OpenAI's request and response shapes ---------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// JSON through nlohmann-json (Debian's nlohmann-json3-dev). Text from the
// model may be invalid UTF-8 (a byte token, a character cut by max_tokens):
// every dump() replaces such bytes with U+FFFD rather than throwing.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Serving/OpenAiApi.h"

#include "Hesper/Support/Json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <random>

using namespace hesper;
using namespace hesper::serving;
using nlohmann::json;

static std::string dump(const json &j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string hesper::serving::errorJson(const ApiError &e) {
  json error = {{"message", e.message}, {"type", e.type}, {"code", e.status}};
  error["param"] = e.param.empty() ? json(nullptr) : json(e.param);
  return dump(json{{"error", error}});
}

static ApiError badField(const std::string &field, const std::string &what) {
  ApiError e;
  e.message = "'" + field + "' " + what;
  e.param = field;
  return e;
}

/// Parses `body` as a JSON object (nesting checked first: the parser's
/// recursion is bounded by json::checkNesting's depth).
static std::optional<ApiError> parseObject(const std::string &body,
                                           json &out) {
  std::string nesting;
  if (!hesper::tune::json::checkNesting(body, nesting))
    return ApiError{400, "the body is not valid JSON: " + nesting};
  out = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (out.is_discarded()) {
    // Parse again for the parser's message (where and why).
    try {
      json again = json::parse(body);
      (void)again;
    } catch (const json::parse_error &e) {
      std::string what = e.what();
      size_t at = what.find("] ");
      return ApiError{400, "the body is not valid JSON: " +
                               (at == std::string::npos ? what
                                                        : what.substr(at + 2))};
    }
    return ApiError{400, "the body is not valid JSON"};
  }
  if (!out.is_object())
    return ApiError{400, "the body must be a JSON object"};
  return std::nullopt;
}

namespace {
/// Typed, range-checked reads of optional fields; the first error sticks.
struct Fields {
  const json &j;
  std::optional<ApiError> error;

  const json *get(const char *name) {
    auto it = j.find(name);
    if (it == j.end() || it->is_null())
      return nullptr;
    return &*it;
  }
  void fail(const char *name, const std::string &what) {
    if (!error)
      error = badField(name, what);
  }
  void number(const char *name, float &out, double lo, double hi,
              const char *range) {
    const json *v = get(name);
    if (!v)
      return;
    if (!v->is_number())
      return fail(name, "must be a number");
    double d = v->get<double>();
    if (!(d >= lo && d <= hi))
      return fail(name, std::string("must be ") + range);
    out = static_cast<float>(d);
  }
  void integer(const char *name, int64_t &out, int64_t lo, int64_t hi,
               const char *range) {
    const json *v = get(name);
    if (!v)
      return;
    if (!v->is_number_integer())
      return fail(name, "must be an integer");
    if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX))
      return fail(name, std::string("must be ") + range);
    int64_t i = v->get<int64_t>();
    if (i < lo || i > hi)
      return fail(name, std::string("must be ") + range);
    out = i;
  }
  void boolean(const char *name, bool &out) {
    const json *v = get(name);
    if (!v)
      return;
    if (!v->is_boolean())
      return fail(name, "must be true or false");
    out = v->get<bool>();
  }
};
} // namespace

/// The text of a chat message's content: a string, or OpenAI's array of
/// parts of which only {"type": "text"} ones are supported.
static std::optional<std::string> messageText(const json &content,
                                              std::string &why) {
  if (content.is_string())
    return content.get<std::string>();
  if (!content.is_array()) {
    why = "must be a string or an array of text parts";
    return std::nullopt;
  }
  std::string text;
  for (const json &part : content) {
    if (!part.is_object() || part.value("type", json()) != "text" ||
        !part.contains("text") || !part["text"].is_string()) {
      why = "has a part that is not {\"type\": \"text\", \"text\": ...} "
            "(only text is supported)";
      return std::nullopt;
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

std::optional<ApiError>
hesper::serving::parseCompletionCall(const std::string &body, bool chat,
                                     const ApiContext &api,
                                     CompletionCall &out) {
  json j;
  if (auto e = parseObject(body, j))
    return e;
  out = CompletionCall();
  out.chat = chat;
  GenerationRequest &g = out.generation;

  if (auto it = j.find("model"); it != j.end() && !it->is_null()) {
    if (!it->is_string())
      return badField("model", "must be a string");
    const std::string name = it->get<std::string>();
    if (!name.empty() && name != api.modelId) {
      ApiError e{404,
                 "the model '" + name + "' does not exist; this server has '" +
                     api.modelId + "'",
                 "invalid_request_error", "model"};
      return e;
    }
  }

  // The prompt.
  if (chat) {
    auto it = j.find("messages");
    if (it == j.end())
      return badField("messages", "is required");
    if (!it->is_array() || it->empty())
      return badField("messages", "must be a non-empty array of messages");
    if (!api.chatFormat)
      return ApiError{400,
                      "the model has no chat template Hesper knows; start "
                      "the server with --chat-template chatml|llama3|gemma",
                      "invalid_request_error", "messages"};
    if (!api.tokenizer)
      return ApiError{400, "the model has no tokenizer",
                      "invalid_request_error", "messages"};
    std::vector<models::ChatMessage> messages;
    for (size_t i = 0; i < it->size(); ++i) {
      const json &m = (*it)[i];
      const std::string at = "messages[" + std::to_string(i) + "]";
      if (!m.is_object())
        return badField(at, "must be an object");
      auto role = m.find("role");
      if (role == m.end() || !role->is_string())
        return badField(at + ".role", "must be a string");
      std::string r = role->get<std::string>();
      if (r == "developer")
        r = "system";
      if (r != "system" && r != "user" && r != "assistant")
        return badField(at + ".role",
                        "must be 'system', 'user' or 'assistant', not '" + r +
                            "'");
      auto content = m.find("content");
      if (content == m.end() || content->is_null())
        return badField(at + ".content", "is required");
      std::string why;
      auto text = messageText(*content, why);
      if (!text)
        return badField(at + ".content", why);
      messages.push_back({r, *text});
    }
    g.prompt = api.tokenizer->encode(
        models::formatChat(*api.chatFormat, messages, true),
        /*addSpecial=*/true);
  } else {
    auto it = j.find("prompt");
    if (it == j.end())
      return badField("prompt", "is required");
    const json *p = &*it;
    // A one-element array holds one prompt (string or ids).
    if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() ||
                                            (*p)[0].is_array()))
      p = &(*p)[0];
    if (p->is_string()) {
      if (!api.tokenizer)
        return badField("prompt", "must be token ids: the model has no "
                                  "tokenizer");
      g.prompt = api.tokenizer->encode(p->get<std::string>(), true);
    } else if (p->is_array()) {
      for (const json &id : *p) {
        if (!id.is_number_integer())
          return badField("prompt", "must be a string or an array of token "
                                    "ids (integers)");
        int64_t v = id.is_number_unsigned() &&
                            id.get<uint64_t>() > uint64_t(INT64_MAX)
                        ? INT64_MAX
                        : id.get<int64_t>();
        if (v < 0 || v >= api.vocab)
          return badField("prompt", "has token id " + id.dump() +
                                        ", outside the vocabulary of " +
                                        std::to_string(api.vocab));
        g.prompt.push_back(static_cast<int32_t>(v));
      }
    } else {
      return badField("prompt", "must be a string or an array of token ids");
    }
  }
  if (g.prompt.empty())
    return badField(chat ? "messages" : "prompt",
                    "gives no tokens to start from");
  if (static_cast<int64_t>(g.prompt.size()) >= api.contextSize)
    return ApiError{400,
                    "the prompt has " + std::to_string(g.prompt.size()) +
                        " tokens; the context of a slot has " +
                        std::to_string(api.contextSize) +
                        " positions (-c), and at least one must be left to "
                        "generate",
                    "invalid_request_error", chat ? "messages" : "prompt"};

  Fields f{j};
  // Sampling, with llama.cpp's ranges (models::checkSamplerParams).
  models::SamplerParams &s = g.sampler;
  f.number("temperature", s.temperature, 0, 1e30, "a number >= 0");
  f.number("top_p", s.topP, 0, 1, "between 0 and 1");
  f.number("min_p", s.minP, 0, 1, "between 0 and 1");
  int64_t topK = s.topK;
  f.integer("top_k", topK, 0, INT32_MAX, "an integer >= 0");
  s.topK = static_cast<int32_t>(topK);
  f.number("repeat_penalty", s.repeatPenalty, 1e-30, 1e30, "a number > 0");
  int64_t lastN = s.repeatLastN;
  f.integer("repeat_last_n", lastN, -1, INT32_MAX, "an integer >= -1");
  s.repeatLastN = static_cast<int32_t>(lastN);
  int64_t seed = -1;
  f.integer("seed", seed, INT64_MIN, INT64_MAX, "an integer");
  // No seed (or llama.cpp's -1): a fresh one per request.
  s.seed = seed == -1 ? std::random_device()() : static_cast<uint32_t>(seed);
  if (auto bad = models::checkSamplerParams(s))
    return badField(bad->param, bad->message);

  int64_t maxTokens = api.defaultMaxTokens;
  const char *maxName = j.contains("max_completion_tokens")
                            ? "max_completion_tokens"
                            : "max_tokens";
  f.integer(maxName, maxTokens, 1, INT32_MAX, "an integer >= 1");
  if (j.contains("n_predict"))
    f.integer("n_predict", maxTokens, -1, INT32_MAX, "an integer >= -1");
  g.maxTokens = static_cast<int32_t>(maxTokens);
  int64_t n = 1;
  f.integer("n", n, 1, 1, "1 (one choice per request)");

  f.boolean("stream", out.stream);
  if (const json *opts = f.get("stream_options")) {
    if (!opts->is_object())
      f.fail("stream_options", "must be an object");
    else if (auto u = opts->find("include_usage"); u != opts->end()) {
      if (!u->is_boolean())
        f.fail("stream_options", "'include_usage' must be true or false");
      else
        out.includeUsage = u->get<bool>();
    }
  }
  f.boolean("return_tokens", out.returnTokens);
  bool ignoreEos = false; // llama-server's: generate past end-of-text
  f.boolean("ignore_eos", ignoreEos);
  g.stopAtEndOfGeneration = !ignoreEos;

  if (const json *stop = f.get("stop")) {
    if (stop->is_string()) {
      g.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array() && stop->size() <= 16) {
      for (const json &s : *stop) {
        if (!s.is_string())
          return badField("stop", "must be a string or an array of strings");
        g.stop.push_back(s.get<std::string>());
      }
    } else {
      return badField("stop",
                      "must be a string or an array of at most 16 strings");
    }
    g.stop.erase(std::remove(g.stop.begin(), g.stop.end(), std::string()),
                 g.stop.end());
  }

  // Log probabilities: chat's logprobs (bool) + top_logprobs, completions'
  // logprobs (count), llama.cpp's n_probs.
  int64_t top = 0;
  if (chat) {
    f.boolean("logprobs", out.logprobs);
    f.integer("top_logprobs", top, 0, 20, "an integer between 0 and 20");
  } else if (f.get("logprobs")) {
    f.integer("logprobs", top, 0, 20, "an integer between 0 and 20");
    out.logprobs = !f.error;
  }
  if (f.get("n_probs")) {
    f.integer("n_probs", top, 0, 20, "an integer between 0 and 20");
    out.logprobs = out.logprobs || top > 0;
  }
  g.topLogprobs = static_cast<int32_t>(top);
  if (f.error)
    return f.error;
  return std::nullopt;
}

/// The text of token `id` for logprobs ("" for a control token).
static std::string tokenText(const ApiContext &api, int32_t id) {
  return api.tokenizer ? api.tokenizer->decodeToken(id, true) : "";
}

static json usage(int64_t prompt, int64_t completion) {
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion}};
}

/// The logprobs object of `pieces`: chat's {"content": [...]} or the
/// completions' {"tokens", "token_logprobs", "top_logprobs",
/// "text_offset"}.
static json logprobsJson(const CompletionCall &call, const ApiContext &api,
                         const std::vector<TokenPiece> &pieces) {
  if (!call.logprobs)
    return nullptr;
  if (call.chat) {
    json content = json::array();
    for (const TokenPiece &p : pieces) {
      std::string text = tokenText(api, p.id);
      json top = json::array();
      for (auto [id, lp] : p.top) {
        std::string t = tokenText(api, id);
        top.push_back({{"token", t},
                       {"logprob", lp},
                       {"bytes", std::vector<uint8_t>(t.begin(), t.end())}});
      }
      content.push_back(
          {{"token", text},
           {"logprob", p.logprob},
           {"bytes", std::vector<uint8_t>(text.begin(), text.end())},
           {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json tokens = json::array(), lps = json::array(), tops = json::array(),
       offsets = json::array();
  size_t offset = 0;
  for (const TokenPiece &p : pieces) {
    tokens.push_back(tokenText(api, p.id));
    lps.push_back(p.logprob);
    json top = json::object();
    for (auto [id, lp] : p.top)
      top[tokenText(api, id)] = lp;
    tops.push_back(top);
    offsets.push_back(offset);
    offset += p.text.size();
  }
  return {{"tokens", tokens},
          {"token_logprobs", lps},
          {"top_logprobs", tops},
          {"text_offset", offsets}};
}

static json finishJson(FinishReason reason) {
  if (reason == FinishReason::Stop || reason == FinishReason::Length)
    return finishReasonName(reason);
  return nullptr;
}

static json header(const CompletionCall &call, const ApiContext &api,
                   const std::string &id, int64_t created, bool chunk) {
  const char *object = call.chat ? (chunk ? "chat.completion.chunk"
                                          : "chat.completion")
                                 : "text_completion";
  return {{"id", id},
          {"object", object},
          {"created", created},
          {"model", api.modelId},
          {"system_fingerprint", "hesper"}};
}

static std::string joinText(const std::vector<TokenPiece> &pieces) {
  std::string text;
  for (const TokenPiece &p : pieces)
    text += p.text;
  return text;
}

static json tokenIds(const std::vector<TokenPiece> &pieces) {
  json ids = json::array();
  for (const TokenPiece &p : pieces)
    ids.push_back(p.id);
  return ids;
}

std::string hesper::serving::completionJson(
    const CompletionCall &call, const ApiContext &api, const std::string &id,
    int64_t created, const std::vector<TokenPiece> &pieces,
    FinishReason reason, int64_t promptTokens) {
  json j = header(call, api, id, created, false);
  json choice = {{"index", 0},
                 {"logprobs", logprobsJson(call, api, pieces)},
                 {"finish_reason", finishJson(reason)}};
  if (call.chat)
    choice["message"] = {{"role", "assistant"}, {"content", joinText(pieces)}};
  else
    choice["text"] = joinText(pieces);
  if (call.returnTokens)
    choice["tokens"] = tokenIds(pieces);
  j["choices"] = json::array({choice});
  j["usage"] = usage(promptTokens, static_cast<int64_t>(pieces.size()));
  return dump(j);
}

std::string hesper::serving::chunkJson(const CompletionCall &call,
                                       const ApiContext &api,
                                       const std::string &id, int64_t created,
                                       const std::vector<TokenPiece> &pieces,
                                       bool first, FinishReason reason) {
  json j = header(call, api, id, created, true);
  json choice = {{"index", 0},
                 {"logprobs", logprobsJson(call, api, pieces)},
                 {"finish_reason", finishJson(reason)}};
  if (call.chat) {
    json delta = json::object();
    if (first)
      delta["role"] = "assistant";
    if (!pieces.empty() || first)
      delta["content"] = joinText(pieces);
    choice["delta"] = delta;
  } else {
    choice["text"] = joinText(pieces);
  }
  if (call.returnTokens)
    choice["tokens"] = tokenIds(pieces);
  j["choices"] = json::array({choice});
  return dump(j);
}

std::string hesper::serving::usageChunkJson(const CompletionCall &call,
                                            const ApiContext &api,
                                            const std::string &id,
                                            int64_t created,
                                            int64_t promptTokens,
                                            int64_t completionTokens) {
  json j = header(call, api, id, created, true);
  j["choices"] = json::array();
  j["usage"] = usage(promptTokens, completionTokens);
  return dump(j);
}

std::optional<ApiError>
hesper::serving::tokenizeJson(const std::string &body, const ApiContext &api,
                              std::string &out) {
  json j;
  if (auto e = parseObject(body, j))
    return e;
  auto content = j.find("content");
  if (content == j.end() || !content->is_string())
    return badField("content", "must be a string");
  if (!api.tokenizer)
    return ApiError{400, "the model has no tokenizer"};
  Fields f{j};
  bool addSpecial = false, withPieces = false;
  f.boolean("add_special", addSpecial);
  f.boolean("with_pieces", withPieces);
  if (f.error)
    return f.error;
  std::vector<int32_t> ids =
      api.tokenizer->encode(content->get<std::string>(), addSpecial);
  json tokens = json::array();
  for (int32_t id : ids) {
    if (withPieces)
      tokens.push_back({{"id", id}, {"piece", tokenText(api, id)}});
    else
      tokens.push_back(id);
  }
  out = dump(json{{"tokens", tokens}});
  return std::nullopt;
}

std::optional<ApiError>
hesper::serving::detokenizeJson(const std::string &body, const ApiContext &api,
                                std::string &out) {
  json j;
  if (auto e = parseObject(body, j))
    return e;
  auto tokens = j.find("tokens");
  if (tokens == j.end() || !tokens->is_array())
    return badField("tokens", "must be an array of token ids");
  std::vector<int32_t> ids;
  for (const json &id : *tokens) {
    if (!id.is_number_integer() ||
        (id.is_number_unsigned() && id.get<uint64_t>() >= uint64_t(api.vocab)) ||
        id.get<int64_t>() < 0 || id.get<int64_t>() >= api.vocab)
      return badField("tokens", "has " + id.dump() +
                                    ", not a token id of the vocabulary of " +
                                    std::to_string(api.vocab));
    ids.push_back(id.get<int32_t>());
  }
  if (!api.tokenizer)
    return ApiError{400, "the model has no tokenizer"};
  std::string text;
  for (int32_t id : ids)
    text += api.tokenizer->decodeToken(id);
  out = dump(json{{"content", text}});
  return std::nullopt;
}

std::string hesper::serving::modelsJson(const ApiContext &api,
                                        int64_t created, int64_t parameters,
                                        const std::string &arch) {
  json model = {{"id", api.modelId},
                {"object", "model"},
                {"created", created},
                {"owned_by", "hesper"},
                {"meta",
                 {{"n_ctx", api.contextSize},
                  {"n_vocab", api.vocab},
                  {"n_params", parameters},
                  {"arch", arch}}}};
  return dump(json{{"object", "list"}, {"data", json::array({model})}});
}
