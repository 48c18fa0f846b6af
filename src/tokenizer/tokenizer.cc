#include "tokenizer/tokenizer.h"

#include <array>

namespace infergrid::tokenizer {

namespace {

bool IsWordByte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
}

constexpr size_t kMaxWordBytes = 8;

// " " + onset vowel onset vowel, from 16 onsets, 8 vowels and 4 final vowels: 8192 distinct
// words (an onset is always followed by a vowel, so each spelling has one parse); we take the
// first 4096.
const std::array<std::string, kOutputWords>& Words() {
  static const auto* words = [] {
    static const char* kOnsets[] = {"b", "d", "f", "g", "k", "l", "m",  "n",
                                    "p", "r", "s", "t", "v", "z", "st", "tr"};
    static const char* kVowels[] = {"a", "e", "i", "o", "u", "ai", "ou", "ea"};
    auto* out = new std::array<std::string, kOutputWords>();
    size_t n = 0;
    for (const char* o1 : kOnsets) {
      for (const char* v1 : kVowels) {
        for (const char* o2 : kOnsets) {
          for (const char* v2 : {"a", "e", "i", "o"}) {
            if (n == kOutputWords) return out;
            (*out)[n++] = std::string(" ") + o1 + v1 + o2 + v2;  // at most 2+2+2+1 = 7 letters
          }
        }
      }
    }
    return out;
  }();
  return *words;
}

}  // namespace

uint32_t PieceId(std::string_view piece) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : piece) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return 3 + static_cast<uint32_t>(h % (kVocabSize - 3));
}

void Encode(std::string_view text, std::vector<uint32_t>* ids,
            std::vector<std::string_view>* pieces) {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    size_t start = i;
    auto c = static_cast<unsigned char>(text[i]);
    if (c == ' ' && i + 1 < n && IsWordByte(static_cast<unsigned char>(text[i + 1]))) ++i;
    if (IsWordByte(static_cast<unsigned char>(text[i]))) {
      size_t word = 0;
      while (i < n && word < kMaxWordBytes && IsWordByte(static_cast<unsigned char>(text[i]))) {
        ++i;
        ++word;
      }
    } else {
      ++i;  // a byte of its own
    }
    std::string_view piece = text.substr(start, i - start);
    ids->push_back(PieceId(piece));
    if (pieces) pieces->push_back(piece);
  }
}

std::vector<uint32_t> Tokenize(std::string_view text, bool add_special_tokens) {
  std::vector<uint32_t> ids;
  ids.reserve(text.size() / 3 + 2);
  if (add_special_tokens) ids.push_back(kBosToken);
  Encode(text, &ids);
  return ids;
}

void AppendChatMessage(std::string_view role, std::string_view content, std::string* out) {
  *out += "<|";
  *out += role;
  *out += "|>\n";
  *out += content;
  *out += "\n";
}

void AppendGenerationPrompt(std::string* out) { *out += "<|assistant|>\n"; }

std::string RenderChat(std::span<const ChatMessage> messages, bool add_generation_prompt) {
  std::string out;
  for (const ChatMessage& m : messages) AppendChatMessage(m.role, m.content, &out);
  if (add_generation_prompt) AppendGenerationPrompt(&out);
  return out;
}

uint32_t CountTokens(std::string_view text) {
  uint32_t n = 0;
  size_t i = 0;
  while (i < text.size()) {  // the same cuts as Encode, without hashing
    if (text[i] == ' ' && i + 1 < text.size() &&
        IsWordByte(static_cast<unsigned char>(text[i + 1]))) {
      ++i;
    }
    if (IsWordByte(static_cast<unsigned char>(text[i]))) {
      size_t word = 0;
      while (i < text.size() && word < kMaxWordBytes &&
             IsWordByte(static_cast<unsigned char>(text[i]))) {
        ++i;
        ++word;
      }
    } else {
      ++i;
    }
    ++n;
  }
  return n;
}

std::string_view OutputWord(uint32_t i) { return Words()[i % kOutputWords]; }

}  // namespace infergrid::tokenizer
