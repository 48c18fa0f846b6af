#pragma once
// The one tokenizer of infergrid: the simulator counts and caches tokens with it, and the
// gateway uses the same code to see prompts as the servers do (block hashes, prefix routing).
// It is not a real model's tokenizer; it is deterministic, fast, documented (docs/sim-model.md,
// "Tokenizer") and shaped like a BPE one: about four characters a token in English text.
//
// Rules. Text is cut left to right into pieces:
//   - a word: an optional single leading space, then up to 8 word bytes (ASCII letters and
//     digits, and every byte >= 0x80, so UTF-8 text groups into words); a longer word
//     continues in further pieces of up to 8 bytes, without the space;
//   - any other byte (punctuation, newline, tab, a space not followed by a word byte) is a
//     piece of its own.
// A piece's id is 3 + FNV-1a-64(piece) mod (kVocabSize - 3). Ids 0..2 are special: 0 padding,
// 1 beginning of sequence (added when add_special_tokens), 2 end of sequence.
//
// Chat messages are rendered by one fixed template before tokenizing:
//   for each message:  "<|" role "|>\n" content "\n"
//   then, with add_generation_prompt:  "<|assistant|>\n"
// so a conversation's next turn starts with exactly the tokens of the previous turn's prompt
// and reply, and prefix caching sees it as vLLM would with a real template.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace infergrid::tokenizer {

inline constexpr uint32_t kVocabSize = 128000;
inline constexpr uint32_t kBosToken = 1;
inline constexpr uint32_t kEosToken = 2;

uint32_t PieceId(std::string_view piece);

// Appends the ids of `text`'s pieces (and, if `pieces` is given, the pieces themselves).
void Encode(std::string_view text, std::vector<uint32_t>* ids,
            std::vector<std::string_view>* pieces = nullptr);

// The ids of `text`, with the beginning-of-sequence token first if `add_special_tokens`.
std::vector<uint32_t> Tokenize(std::string_view text, bool add_special_tokens);

struct ChatMessage {
  std::string role;
  std::string content;
};
std::string RenderChat(std::span<const ChatMessage> messages, bool add_generation_prompt);
// The template's pieces, for callers that render as they parse (the gateway's SAX pass).
void AppendChatMessage(std::string_view role, std::string_view content, std::string* out);
void AppendGenerationPrompt(std::string* out);

// len(Encode(text)) without building the ids.
uint32_t CountTokens(std::string_view text);

// Deterministic output text: word i of a fixed list of 4096 lowercase words, each with a
// leading space and at most 8 letters, so each is exactly one token.
std::string_view OutputWord(uint32_t i);
inline constexpr uint32_t kOutputWords = 4096;

}  // namespace infergrid::tokenizer
