//===- Chat.h - Chat templates and multi-turn conversations -----*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Turns a conversation into the prompt text a chat model was trained on, for
// the template families most GGUF files carry in `tokenizer.chat_template`
// (recognized by their markers, as llama.cpp recognizes them; the Jinja
// text itself is not evaluated), and runs a conversation turn by turn over
// one Session, keeping the KV cache between turns:
//
//   auto format = models::detectChatFormat(templateText);   // e.g. Gemma
//   models::Conversation chat(session, *tokenizer, *format);
//   auto turn = chat.say("Hello", options, onToken);        // streams reply
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_MODELS_CHAT_H
#define HESPER_MODELS_CHAT_H

#include "Hesper/Models/Generate.h"
#include "Hesper/Models/Tokenizer.h"

#include <optional>
#include <string>
#include <vector>

namespace hesper::models {

/// The template families: ChatML (<|im_start|>role ... <|im_end|>: Qwen,
/// SmolLM, many fine-tunes), Llama 3 (<|start_header_id|>role
/// <|end_header_id|> ... <|eot_id|>), Gemma (<start_of_turn>user|model
/// ... <end_of_turn>; system text goes into the first user turn) and Phi-3
/// (<|role|> ... <|end|>).
enum class ChatFormat { ChatML, Llama3, Gemma, Phi3 };

/// The family of a `tokenizer.chat_template` text, from the markers it
/// uses; nullopt when it is none of the above.
std::optional<ChatFormat> detectChatFormat(const std::string &chatTemplate);
/// "chatml", "llama3", "gemma" or "phi3"; nullopt for another name.
std::optional<ChatFormat> chatFormatByName(const std::string &name);
const char *chatFormatName(ChatFormat format);
/// The names chatFormatByName knows, for messages: "chatml, llama3, ...".
const char *chatFormatNames();

struct ChatMessage {
  std::string role; ///< "system", "user" or "assistant"
  std::string content;
};

/// The prompt text of `messages` in `format`, ending with the opening of
/// the assistant's turn when `addGenerationPrompt`. BOS is not included: the
/// tokenizer adds it when the vocabulary asks for it.
std::string formatChat(ChatFormat format,
                       const std::vector<ChatMessage> &messages,
                       bool addGenerationPrompt);

/// What one turn did.
struct ChatTurn {
  std::vector<int32_t> promptIds; ///< the whole conversation's prompt tokens
  int64_t reusedTokens = 0;       ///< of which were already in the KV cache
  GenerateResult result;          ///< the reply's tokens and timings
  std::string reply;              ///< the reply's text (no end-of-turn)
};

/// A conversation over one Session. Each turn formats the whole
/// conversation, keeps the part of the KV cache that matches its tokens,
/// and feeds only the rest: the previous reply's end-of-turn and the new
/// user turn, typically.
class Conversation {
public:
  Conversation(Session &session, const Tokenizer &tokenizer,
               ChatFormat format, std::string systemPrompt = "");

  /// Adds the user's `text`, generates the reply (streamed to `onToken`)
  /// until an end-of-generation token or options.maxTokens, and records it.
  rt::Result<ChatTurn> say(const std::string &text,
                           const GenerateOptions &options,
                           const std::function<bool(int32_t)> &onToken);

  const std::vector<ChatMessage> &messages() const { return history; }

private:
  Session &session;
  const Tokenizer &tokenizer;
  ChatFormat format;
  std::vector<ChatMessage> history;
  std::vector<int32_t> cached; ///< the tokens at positions 0..position()-1
};

} // namespace hesper::models

#endif // HESPER_MODELS_CHAT_H
