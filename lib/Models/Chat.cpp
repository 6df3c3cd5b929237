//===- Chat.cpp - Chat templates and multi-turn conversations -------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The formats follow llama.cpp's llm_chat_apply_template for its "chatml",
// "llama3", "gemma" and "phi3" templates, which is what llama-cli -cnv feeds
// a model of these families.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/Chat.h"

#include <algorithm>

using namespace hesper;
using namespace hesper::models;

std::optional<ChatFormat>
hesper::models::detectChatFormat(const std::string &t) {
  auto has = [&](const char *marker) {
    return t.find(marker) != std::string::npos;
  };
  if (has("<|im_start|>"))
    return ChatFormat::ChatML;
  if (has("<|start_header_id|>") && has("<|end_header_id|>"))
    return ChatFormat::Llama3;
  if (has("<start_of_turn>"))
    return ChatFormat::Gemma;
  if (has("<|assistant|>") && has("<|end|>"))
    return ChatFormat::Phi3;
  return std::nullopt;
}

std::optional<ChatFormat>
hesper::models::chatFormatByName(const std::string &name) {
  if (name == "chatml")
    return ChatFormat::ChatML;
  if (name == "llama3")
    return ChatFormat::Llama3;
  if (name == "gemma")
    return ChatFormat::Gemma;
  if (name == "phi3")
    return ChatFormat::Phi3;
  return std::nullopt;
}

const char *hesper::models::chatFormatNames() {
  return "chatml, llama3, gemma, phi3";
}

const char *hesper::models::chatFormatName(ChatFormat format) {
  switch (format) {
  case ChatFormat::ChatML:
    return "chatml";
  case ChatFormat::Llama3:
    return "llama3";
  case ChatFormat::Gemma:
    return "gemma";
  case ChatFormat::Phi3:
    return "phi3";
  }
  return "?";
}

/// `s` without leading and trailing whitespace (llama.cpp trims message
/// contents for the Llama 3 and Gemma templates).
static std::string trim(const std::string &s) {
  const char *space = " \t\n\r\f\v";
  size_t begin = s.find_first_not_of(space);
  if (begin == std::string::npos)
    return "";
  size_t end = s.find_last_not_of(space);
  return s.substr(begin, end - begin + 1);
}

std::string hesper::models::formatChat(ChatFormat format,
                                       const std::vector<ChatMessage> &messages,
                                       bool addGenerationPrompt) {
  std::string out;
  switch (format) {
  case ChatFormat::ChatML:
    for (const ChatMessage &m : messages)
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    if (addGenerationPrompt)
      out += "<|im_start|>assistant\n";
    break;
  case ChatFormat::Llama3:
    for (const ChatMessage &m : messages)
      out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" +
             trim(m.content) + "<|eot_id|>";
    if (addGenerationPrompt)
      out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    break;
  case ChatFormat::Gemma: {
    // Gemma has no system role: the system text opens the first user turn.
    std::string system;
    for (const ChatMessage &m : messages) {
      if (m.role == "system") {
        system += trim(m.content);
        continue;
      }
      std::string role = m.role == "assistant" ? "model" : m.role;
      out += "<start_of_turn>" + role + "\n";
      if (!system.empty() && role != "model") {
        out += system + "\n\n";
        system.clear();
      }
      out += trim(m.content) + "<end_of_turn>\n";
    }
    if (addGenerationPrompt)
      out += "<start_of_turn>model\n";
    break;
  }
  case ChatFormat::Phi3:
    // Every role as its own marker; contents are not trimmed.
    for (const ChatMessage &m : messages)
      out += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
    if (addGenerationPrompt)
      out += "<|assistant|>\n";
    break;
  }
  return out;
}

Conversation::Conversation(Session &session, const Tokenizer &tokenizer,
                           ChatFormat format, std::string systemPrompt)
    : session(session), tokenizer(tokenizer), format(format) {
  if (!systemPrompt.empty())
    history.push_back({"system", std::move(systemPrompt)});
}

rt::Result<ChatTurn>
Conversation::say(const std::string &text, const GenerateOptions &options,
                  const std::function<bool(int32_t)> &onToken) {
  history.push_back({"user", text});
  ChatTurn turn;
  turn.promptIds = tokenizer.encode(formatChat(format, history, true),
                                    /*addSpecial=*/true);
  // Keep the cached positions that hold the same tokens; at least the last
  // prompt token is fed again, for its logits.
  cached.resize(std::min<size_t>(cached.size(), session.position()));
  const size_t common = reusablePrefix(cached, turn.promptIds);
  session.rewind(common);
  turn.reusedTokens = common;
  std::vector<int32_t> fresh(turn.promptIds.begin() + common,
                             turn.promptIds.end());
  auto isEnd = [&](int32_t id) { return tokenizer.isEog(id); };
  auto result = generate(session, fresh, options, onToken, isEnd);
  if (!result) {
    // The cache holds the common prefix and whatever was fed past it.
    history.pop_back();
    session.rewind(common);
    cached.resize(common);
    return result.status();
  }
  turn.result = std::move(*result);
  std::vector<int32_t> reply = turn.result.generated;
  if (turn.result.stoppedAtEnd && !reply.empty())
    reply.pop_back();
  turn.reply = tokenizer.decode(reply);
  history.push_back({"assistant", turn.reply});

  // What the cache now holds: the prompt, then the generated tokens that
  // were fed (all but a last one that was only sampled).
  cached.assign(turn.promptIds.begin(), turn.promptIds.end());
  cached.insert(cached.end(), turn.result.generated.begin(),
                turn.result.generated.end());
  cached.resize(std::min<size_t>(cached.size(), session.position()));
  return turn;
}
