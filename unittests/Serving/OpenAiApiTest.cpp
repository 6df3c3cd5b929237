//===- OpenAiApiTest.cpp - hesper-server's JSON without a server ----------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Requests parsed into engine requests (every field, every error naming its
// field), responses rendered in OpenAI's shapes, and the UTF-8 hold-back,
// with token ids as prompts (no tokenizer needed). The end-to-end tests
// with a running server are in test/Server.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Serving/OpenAiApi.h"

#include <gtest/gtest.h>

using namespace hesper::serving;

namespace {

ApiContext context() {
  ApiContext api;
  api.modelId = "tiny";
  api.vocab = 100;
  api.contextSize = 16;
  api.defaultMaxTokens = 7;
  return api;
}

/// Parses `body` as a completions request; the error's message or "".
std::string parse(const std::string &body, CompletionCall &call,
                  int *status = nullptr, bool chat = false) {
  auto error = parseCompletionCall(body, chat, context(), call);
  if (status)
    *status = error ? error->status : 200;
  return error ? error->message : "";
}

TEST(OpenAiApi, ReadsEveryField) {
  CompletionCall call;
  ASSERT_EQ(parse(R"({"model": "tiny", "prompt": [1, 2, 3], "max_tokens": 5,
      "temperature": 0.5, "top_p": 0.9, "top_k": 12, "min_p": 0.1,
      "repeat_penalty": 1.1, "repeat_last_n": 32, "seed": 42,
      "stop": ["a", "", "bc"], "stream": true,
      "stream_options": {"include_usage": true}, "logprobs": 3,
      "return_tokens": true, "ignore_eos": true, "unknown": {}})",
                  call),
            "");
  const GenerationRequest &g = call.generation;
  EXPECT_EQ(g.prompt, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(g.maxTokens, 5);
  EXPECT_FLOAT_EQ(g.sampler.temperature, 0.5f);
  EXPECT_FLOAT_EQ(g.sampler.topP, 0.9f);
  EXPECT_EQ(g.sampler.topK, 12);
  EXPECT_FLOAT_EQ(g.sampler.minP, 0.1f);
  EXPECT_FLOAT_EQ(g.sampler.repeatPenalty, 1.1f);
  EXPECT_EQ(g.sampler.repeatLastN, 32);
  EXPECT_EQ(g.sampler.seed, 42u);
  EXPECT_EQ(g.stop, (std::vector<std::string>{"a", "bc"})); // "" dropped
  EXPECT_EQ(g.topLogprobs, 3);
  EXPECT_FALSE(g.stopAtEndOfGeneration);
  EXPECT_TRUE(call.stream && call.includeUsage && call.returnTokens &&
              call.logprobs);
  // Defaults: the server's -n, one prompt in an array, a stop string.
  ASSERT_EQ(parse(R"({"prompt": [[4, 5]], "stop": "x"})", call), "");
  EXPECT_EQ(call.generation.prompt, (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(call.generation.maxTokens, 7);
  EXPECT_EQ(call.generation.stop, (std::vector<std::string>{"x"}));
  EXPECT_FALSE(call.stream || call.logprobs);
}

TEST(OpenAiApi, RefusesBadFieldsByName) {
  struct Case {
    const char *body;
    int status;
    const char *message;
  };
  const Case cases[] = {
      {"{", 400, "the body is not valid JSON"},
      {"[]", 400, "the body must be a JSON object"},
      {R"({"max_tokens": 3})", 400, "'prompt' is required"},
      {R"({"prompt": {}})", 400, "'prompt' must be a string or an array"},
      {R"({"prompt": [1, 100]})", 400, "outside the vocabulary of 100"},
      {R"({"prompt": [1, -2]})", 400, "outside the vocabulary"},
      {R"({"prompt": [1, 1.5]})", 400, "'prompt' must be"},
      {R"({"prompt": []})", 400, "'prompt' gives no tokens"},
      {R"({"prompt": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]})", 400,
       "context of a slot has 16 positions"},
      {R"({"prompt": [1], "max_tokens": -1})", 400,
       "'max_tokens' must be an integer >= 1"},
      {R"({"prompt": [1], "max_tokens": 0})", 400, "'max_tokens'"},
      {R"({"prompt": [1], "max_tokens": 99999999999})", 400, "'max_tokens'"},
      {R"({"prompt": [1], "temperature": -0.1})", 400, "'temperature'"},
      {R"({"prompt": [1], "temperature": "1"})", 400,
       "'temperature' must be a number"},
      {R"({"prompt": [1], "top_p": 1.01})", 400, "'top_p'"},
      {R"({"prompt": [1], "top_k": -1})", 400, "'top_k'"},
      {R"({"prompt": [1], "min_p": -1})", 400, "'min_p'"},
      {R"({"prompt": [1], "repeat_penalty": 0})", 400, "'repeat_penalty'"},
      {R"({"prompt": [1], "repeat_last_n": -2})", 400, "'repeat_last_n'"},
      {R"({"prompt": [1], "seed": 1.5})", 400, "'seed' must be an integer"},
      {R"({"prompt": [1], "stop": [1]})", 400, "'stop'"},
      {R"({"prompt": [1], "stream": 1})", 400, "'stream' must be true"},
      {R"({"prompt": [1], "stream_options": 3})", 400, "'stream_options'"},
      {R"({"prompt": [1], "n": 3})", 400, "'n' must be 1"},
      {R"({"prompt": [1], "logprobs": 21})", 400, "'logprobs'"},
      {R"({"prompt": [1], "model": "other"})", 404,
       "the model 'other' does not exist; this server has 'tiny'"},
      {R"({"prompt": [1], "model": 5})", 400, "'model' must be a string"},
  };
  for (const Case &c : cases) {
    CompletionCall call;
    int status = 0;
    std::string message = parse(c.body, call, &status);
    EXPECT_EQ(status, c.status) << c.body;
    EXPECT_NE(message.find(c.message), std::string::npos)
        << c.body << " -> " << message;
  }
  // Nesting deeper than 64 levels is refused before parsing.
  CompletionCall call;
  int status = 0;
  std::string deep = std::string(10000, '[') + std::string(10000, ']');
  EXPECT_NE(parse(deep, call, &status).find("nested more than 64"),
            std::string::npos);
  EXPECT_EQ(status, 400);
  // Chat without a template (or tokenizer) is a 400 naming messages.
  EXPECT_NE(parse(R"({"messages": [{"role": "user", "content": "x"}]})", call,
                  &status, /*chat=*/true)
                .find("no chat template"),
            std::string::npos);
  EXPECT_NE(parse(R"({"messages": []})", call, &status, true)
                .find("'messages' must be a non-empty array"),
            std::string::npos);
}

TEST(OpenAiApi, ErrorsAreOpenAiObjects) {
  ApiError e{401, "no key", "authentication_error", ""};
  EXPECT_EQ(errorJson(e), R"({"error":{"code":401,"message":"no key",)"
                          R"("param":null,"type":"authentication_error"}})");
  ApiError f{400, "bad \"x\"", "invalid_request_error", "x"};
  EXPECT_EQ(errorJson(f), R"({"error":{"code":400,"message":"bad \"x\"",)"
                          R"("param":"x","type":"invalid_request_error"}})");
}

TEST(OpenAiApi, RendersCompletionsAndChunks) {
  ApiContext api = context();
  CompletionCall call;
  ASSERT_EQ(parse(R"({"prompt": [1, 2], "return_tokens": true})", call), "");
  std::vector<TokenPiece> pieces{{5, "he", -0.5f, {}}, {6, "llo", -1.0f, {}}};
  EXPECT_EQ(completionJson(call, api, "cmpl-1", 1000, pieces,
                           FinishReason::Length, 2),
            R"({"choices":[{"finish_reason":"length","index":0,)"
            R"("logprobs":null,"text":"hello","tokens":[5,6]}],)"
            R"("created":1000,"id":"cmpl-1","model":"tiny",)"
            R"("object":"text_completion","system_fingerprint":"hesper",)"
            R"("usage":{"completion_tokens":2,"prompt_tokens":2,)"
            R"("total_tokens":4}})");
  // A chat stream: the first chunk has the role, the last the reason.
  call.chat = true;
  call.returnTokens = false;
  EXPECT_EQ(chunkJson(call, api, "c", 1, {}, true, FinishReason::None),
            R"({"choices":[{"delta":{"content":"","role":"assistant"},)"
            R"("finish_reason":null,"index":0,"logprobs":null}],"created":1,)"
            R"("id":"c","model":"tiny","object":"chat.completion.chunk",)"
            R"("system_fingerprint":"hesper"})");
  EXPECT_EQ(chunkJson(call, api, "c", 1, {}, false, FinishReason::Stop),
            R"({"choices":[{"delta":{},"finish_reason":"stop","index":0,)"
            R"("logprobs":null}],"created":1,"id":"c","model":"tiny",)"
            R"("object":"chat.completion.chunk","system_fingerprint":"hesper"})");
  // Text that is not UTF-8 becomes U+FFFD, never an exception.
  std::vector<TokenPiece> bad{{7, "\xff", 0, {}}};
  std::string out = chunkJson(call, api, "c", 1, bad, false,
                              FinishReason::None);
  EXPECT_NE(out.find("\"content\":\"\xEF\xBF\xBD\""), std::string::npos)
      << out;
}

TEST(OpenAiApi, DetokenizeChecksIds) {
  ApiContext api = context();
  std::string out;
  auto e = detokenizeJson(R"({"tokens": [1, 100]})", api, out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "tokens");
  EXPECT_TRUE(detokenizeJson(R"({"tokens": "x"})", api, out));
  // Without a tokenizer the ids are fine but there is no text.
  e = detokenizeJson(R"({"tokens": [1]})", api, out);
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("no tokenizer"), std::string::npos);
}

TEST(Utf8, HoldsBackAnIncompleteLastCharacter) {
  EXPECT_EQ(completeUtf8Prefix(""), 0u);
  EXPECT_EQ(completeUtf8Prefix("abc"), 3u);
  EXPECT_EQ(completeUtf8Prefix("a\xC3"), 1u);          // é cut after 1 of 2
  EXPECT_EQ(completeUtf8Prefix("a\xC3\xA9"), 3u);      // é whole
  EXPECT_EQ(completeUtf8Prefix("a\xE2\x82"), 1u);      // € cut after 2 of 3
  EXPECT_EQ(completeUtf8Prefix("a\xE2\x82\xAC"), 4u);  // € whole
  EXPECT_EQ(completeUtf8Prefix("\xF0\x9F\x98"), 0u);   // 😀 cut after 3 of 4
  EXPECT_EQ(completeUtf8Prefix("\xF0\x9F\x98\x80"), 4u);
  EXPECT_EQ(completeUtf8Prefix("a\x80"), 2u); // a stray continuation: passed on
}

} // namespace
