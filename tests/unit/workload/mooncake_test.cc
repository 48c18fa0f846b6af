#include "workload/mooncake.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace infergrid::workload {
namespace {

using ::testing::HasSubstr;

Result<MooncakeRequest> Parse(const std::string& line, uint32_t block = 512) {
  return ParseMooncakeLine(line, 7, "t.jsonl", block);
}

TEST(Mooncake, ReadsTheFormatAndTheOptionalFields) {
  auto r = Parse(R"({"timestamp": 27482, "input_length": 6955, "output_length": 52,
                     "hash_ids": [46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59]})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->timestamp_ms, 27482);
  EXPECT_EQ(r->input_length, 6955u);
  EXPECT_EQ(r->output_length, 52u);
  EXPECT_EQ(r->hash_ids.size(), 14u);
  EXPECT_EQ(r->line, 7u);
  auto s = Parse(R"({"session_id": "a", "delay": 250, "input_length": 10, "output_length": 1,
                     "hash_ids": [1], "text_input": "hello"})");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->timestamp_ms, -1);
  EXPECT_EQ(s->session_id, "a");
  EXPECT_EQ(s->delay_ms, 250);
  EXPECT_EQ(*s->text_input, "hello");
  // The line a writer makes reads back the same.
  auto again = Parse(MooncakeLine(*s));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->session_id, "a");
  EXPECT_EQ(again->hash_ids, s->hash_ids);
}

TEST(Mooncake, BadLinesNameTheirLineAndField) {
  struct Case {
    std::string line, want;
  } cases[] = {
      {"nope", "t.jsonl:7: not a JSON object"},
      {R"({"timestamp": 1, "output_length": 3})", "t.jsonl:7: input_length: missing"},
      {R"({"timestamp": 1, "input_length": -4, "output_length": 3})",
       "input_length: expected an integer"},
      {R"({"timestamp": "x", "input_length": 4, "output_length": 3})",
       "timestamp: expected a number"},
      {R"({"input_length": 4, "output_length": 3})", "timestamp: missing"},
      {R"({"timestamp": 1, "input_length": 600, "output_length": 3, "hash_ids": [1]})",
       "hash_ids: 1 ids for input_length 600 with 512-token blocks (expected 2)"},
      {R"({"timestamp": 1, "input_length": 4, "output_length": 3, "hash_ids": [1.5]})",
       "hash_ids[0]: expected an integer"},
      {R"({"timestamp": 1, "delay": 5, "input_length": 4, "output_length": 3})",
       "delay: needs a session_id"},
  };
  for (const auto& c : cases) {
    auto r = Parse(c.line);
    ASSERT_FALSE(r.ok()) << c.line;
    EXPECT_THAT(r.status().message(), HasSubstr(c.want)) << c.line;
  }
}

TEST(Mooncake, TheReaderStreamsAndStopsAtTheFirstBadLine) {
  std::string path = ::testing::TempDir() + "/mooncake_reader_test.jsonl";
  {
    std::ofstream f(path);
    f << R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]})"
      << "\n\n"
      << R"({"timestamp": 5, "input_length": 20, "output_length": 2, "hash_ids": [1]})"
      << "\n"
      << R"({"timestamp": 9, "input_length": 20})"
      << "\n";
  }
  auto reader = MooncakeReader::Open(path);
  ASSERT_TRUE(reader.ok());
  auto a = (*reader)->Next();
  ASSERT_TRUE(a.ok() && a->has_value());
  EXPECT_EQ((*a)->line, 1u);
  auto b = (*reader)->Next();
  ASSERT_TRUE(b.ok() && b->has_value());
  EXPECT_EQ((*b)->line, 3u);  // the blank line is skipped, and counted
  auto c = (*reader)->Next();
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr(":4: output_length: missing"));
  auto d = (*reader)->Next();  // done after an error
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->has_value());
  std::remove(path.c_str());
  EXPECT_FALSE(MooncakeReader::Open(path).ok());
}

TEST(Mooncake, EqualIdsGiveEqualBlocksAndLengthsAreExact) {
  MooncakeRequest a, b, c;
  a.input_length = 2 * 512 + 100;
  a.hash_ids = {7, 8, 9};
  b.input_length = 2 * 512 + 300;
  b.hash_ids = {7, 8, 10};
  c.input_length = 512 + 40;
  c.hash_ids = {8, 9};  // id 8 at another position: the same block all the same
  std::vector<uint32_t> ta, tb, tc;
  SynthesizePromptTokens(a, 512, &ta);
  SynthesizePromptTokens(b, 512, &tb);
  SynthesizePromptTokens(c, 512, &tc);
  EXPECT_EQ(ta.size(), a.input_length);
  EXPECT_EQ(tb.size(), b.input_length);
  EXPECT_EQ(tc.size(), c.input_length);
  // The shared leading run is a shared prefix, exactly two blocks long.
  EXPECT_TRUE(std::equal(ta.begin(), ta.begin() + 1024, tb.begin()));
  EXPECT_NE(std::vector<uint32_t>(ta.begin() + 1024, ta.begin() + 1100),
            std::vector<uint32_t>(tb.begin() + 1024, tb.begin() + 1100));
  EXPECT_TRUE(std::equal(ta.begin() + 512, ta.begin() + 1024, tc.begin()));
  // A partial last block is the leading part of its id's block.
  EXPECT_TRUE(std::equal(tc.begin() + 512, tc.end(), ta.begin() + 1024));
  // Without hash ids, a request shares nothing, and still has its length.
  MooncakeRequest d, e;
  d.input_length = e.input_length = 50;
  d.line = 1;
  e.line = 2;
  std::vector<uint32_t> td, te;
  SynthesizePromptTokens(d, 512, &td);
  SynthesizePromptTokens(e, 512, &te);
  EXPECT_EQ(td.size(), 50u);
  EXPECT_NE(td, te);
}

}  // namespace
}  // namespace infergrid::workload
