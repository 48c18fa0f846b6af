#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <set>

namespace infergrid::tokenizer {
namespace {

std::vector<std::string> Pieces(std::string_view text) {
  std::vector<uint32_t> ids;
  std::vector<std::string_view> pieces;
  Encode(text, &ids, &pieces);
  EXPECT_EQ(ids.size(), pieces.size());
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], PieceId(pieces[i]));
  return {pieces.begin(), pieces.end()};
}

TEST(Tokenizer, CutsWordsWithTheirLeadingSpaceAndPunctuationAlone) {
  EXPECT_EQ(Pieces("Hello, world!"), (std::vector<std::string>{"Hello", ",", " world", "!"}));
  EXPECT_EQ(Pieces("a  b\n\tc"), (std::vector<std::string>{"a", " ", " b", "\n", "\t", "c"}));
  EXPECT_EQ(Pieces("internationalization"),
            (std::vector<std::string>{"internat", "ionaliza", "tion"}));
  EXPECT_EQ(Pieces(" x1y2 "), (std::vector<std::string>{" x1y2", " "}));
  // UTF-8 bytes group with letters, so a multi-byte word stays together.
  EXPECT_EQ(Pieces("caf\xc3\xa9 ok"), (std::vector<std::string>{"caf\xc3\xa9", " ok"}));
  EXPECT_TRUE(Pieces("").empty());
}

TEST(Tokenizer, IdsAreStableAndAvoidTheSpecialTokens) {
  EXPECT_EQ(PieceId(" world"), PieceId(" world"));
  EXPECT_NE(PieceId(" world"), PieceId("world"));
  auto ids = Tokenize("the quick brown fox", /*add_special_tokens=*/true);
  ASSERT_EQ(ids.size(), 5u);
  EXPECT_EQ(ids[0], kBosToken);
  for (size_t i = 1; i < ids.size(); ++i) {
    EXPECT_GE(ids[i], 3u);
    EXPECT_LT(ids[i], kVocabSize);
  }
  EXPECT_EQ(Tokenize("the quick brown fox", false).size(), 4u);
}

TEST(Tokenizer, EachOutputWordIsOneTokenAndTheyAreDistinct) {
  std::set<std::string_view> seen;
  std::string text;
  std::vector<uint32_t> expected;
  for (uint32_t i = 0; i < kOutputWords; ++i) {
    std::string_view w = OutputWord(i);
    ASSERT_LE(w.size(), 9u);
    ASSERT_EQ(w[0], ' ');
    seen.insert(w);
    text += w;
    expected.push_back(PieceId(w));
  }
  EXPECT_EQ(seen.size(), kOutputWords);
  EXPECT_EQ(Tokenize(text, false), expected);
}

TEST(Tokenizer, ANextChatTurnExtendsThePreviousPromptAndReply) {
  std::vector<ChatMessage> turn1 = {{"system", "You are terse."}, {"user", "Hi there"}};
  auto prompt1 = Tokenize(RenderChat(turn1, true), true);
  std::string reply;
  for (uint32_t i = 0; i < 20; ++i) reply += OutputWord(i * 7);
  std::vector<uint32_t> reply_ids;
  Encode(reply, &reply_ids);
  auto turn2 = turn1;
  turn2.push_back({"assistant", reply});
  turn2.push_back({"user", "And then?"});
  auto prompt2 = Tokenize(RenderChat(turn2, true), true);
  std::vector<uint32_t> prefix = prompt1;
  prefix.insert(prefix.end(), reply_ids.begin(), reply_ids.end());
  ASSERT_GT(prompt2.size(), prefix.size());
  EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), prompt2.begin()));
  EXPECT_EQ(RenderChat(turn1, false), "<|system|>\nYou are terse.\n<|user|>\nHi there\n");
}

TEST(Tokenizer, CountTokensAgreesWithEncode) {
  for (std::string_view t : {"", "a", "Hello, world!", "a  b\n\tc", "internationalization x",
                             " caf\xc3\xa9 ok  ", "<|user|>\nhi\n"}) {
    std::vector<uint32_t> ids;
    Encode(t, &ids);
    EXPECT_EQ(CountTokens(t), ids.size()) << t;
  }
}

}  // namespace
}  // namespace infergrid::tokenizer
