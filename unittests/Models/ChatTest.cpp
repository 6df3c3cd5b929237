//===- ChatTest.cpp - Chat templates --------------------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/Chat.h"

#include <gtest/gtest.h>

using namespace hesper::models;

namespace {

const std::vector<ChatMessage> conversation = {
    {"system", "  Be brief. "},
    {"user", "Hi\n"},
    {"assistant", "Hello."},
    {"user", "Bye"},
};

TEST(Chat, ChatMLKeepsContentsAsTheyAre) {
  EXPECT_EQ(formatChat(ChatFormat::ChatML, conversation, true),
            "<|im_start|>system\n  Be brief. <|im_end|>\n"
            "<|im_start|>user\nHi\n<|im_end|>\n"
            "<|im_start|>assistant\nHello.<|im_end|>\n"
            "<|im_start|>user\nBye<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(formatChat(ChatFormat::ChatML, {{"user", "x"}}, false),
            "<|im_start|>user\nx<|im_end|>\n");
}

TEST(Chat, Llama3TrimsContents) {
  EXPECT_EQ(formatChat(ChatFormat::Llama3, conversation, true),
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(Chat, GemmaPutsTheSystemTextIntoTheFirstUserTurn) {
  EXPECT_EQ(formatChat(ChatFormat::Gemma, conversation, true),
            "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"
            "<start_of_turn>model\nHello.<end_of_turn>\n"
            "<start_of_turn>user\nBye<end_of_turn>\n"
            "<start_of_turn>model\n");
  // Without a system message the first turn is the user's alone.
  EXPECT_EQ(formatChat(ChatFormat::Gemma, {{"user", "Hi"}}, true),
            "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n");
}

TEST(Chat, Phi3MarksEveryRoleAndKeepsContents) {
  EXPECT_EQ(formatChat(ChatFormat::Phi3, conversation, true),
            "<|system|>\n  Be brief. <|end|>\n"
            "<|user|>\nHi\n<|end|>\n"
            "<|assistant|>\nHello.<|end|>\n"
            "<|user|>\nBye<|end|>\n"
            "<|assistant|>\n");
  EXPECT_EQ(formatChat(ChatFormat::Phi3, {{"user", "x"}}, false),
            "<|user|>\nx<|end|>\n");
}

TEST(Chat, DetectsTheFamilyFromTheTemplateText) {
  // Excerpts of the templates real GGUF files carry.
  EXPECT_EQ(detectChatFormat("{% for message in messages %}{{'<|im_start|>' + "
                             "message['role'] + '\\n' + message['content'] + "
                             "'<|im_end|>' + '\\n'}}{% endfor %}"),
            ChatFormat::ChatML);
  EXPECT_EQ(detectChatFormat("{{ '<|start_header_id|>' + message['role'] + "
                             "'<|end_header_id|>\\n\\n' }}"),
            ChatFormat::Llama3);
  EXPECT_EQ(detectChatFormat("{{ bos_token }}{{ '<start_of_turn>' + role + "
                             "'\\n' }}"),
            ChatFormat::Gemma);
  EXPECT_EQ(detectChatFormat("{{'<|' + message['role'] + '|>' + '\n' + "
                             "message['content'] + '<|end|>\n'}}{{ "
                             "'<|assistant|>\n' }}"),
            ChatFormat::Phi3);
  // An end marker alone is not Phi-3.
  EXPECT_EQ(detectChatFormat("<|end|>"), std::nullopt);
  // Not one of them.
  EXPECT_EQ(detectChatFormat("[INST] {{ message['content'] }} [/INST]"),
            std::nullopt);
  EXPECT_EQ(detectChatFormat(""), std::nullopt);
  // A header marker alone is not Llama 3.
  EXPECT_EQ(detectChatFormat("<|start_header_id|>"), std::nullopt);
}

TEST(Chat, NamesRoundTrip) {
  for (ChatFormat f : {ChatFormat::ChatML, ChatFormat::Llama3,
                       ChatFormat::Gemma, ChatFormat::Phi3}) {
    EXPECT_EQ(chatFormatByName(chatFormatName(f)), f);
    EXPECT_NE(std::string(chatFormatNames()).find(chatFormatName(f)),
              std::string::npos);
  }
  EXPECT_EQ(chatFormatByName("vicuna"), std::nullopt);
}

} // namespace
