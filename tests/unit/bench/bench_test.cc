// The live bench's pure parts: statistics against hand-computed cases, prompts as text, the
// trace format, the fleet's counters, streaming chunks, and the gateways' generated configs.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench/client.h"
#include "bench/fleet_probe.h"
#include "bench/gateways.h"
#include "bench/stats.h"
#include "bench/text.h"
#include "bench/trace.h"
#include "config/config.h"
#include "scheduling/registry.h"
#include "tokenizer/tokenizer.h"

namespace infergrid::bench {
namespace {

TEST(BenchStats, NearestRankPercentilesOfOneToTen) {
  std::vector<double> v = {7, 3, 10, 1, 5, 9, 2, 8, 6, 4};
  Summary s = Summarize(&v);
  EXPECT_EQ(s.count, 10u);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(s.p50, 5);   // ceil(0.5 * 10) = 5th smallest
  EXPECT_DOUBLE_EQ(s.p90, 9);   // ceil(9) = 9th
  EXPECT_DOUBLE_EQ(s.p99, 10);  // ceil(9.9) = 10th
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
}

TEST(BenchStats, PercentilesOfAHundredAndOfOne) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i * 0.01);
  Summary s = Summarize(&v);
  EXPECT_DOUBLE_EQ(s.p50, 0.50);
  EXPECT_DOUBLE_EQ(s.p90, 0.90);
  EXPECT_DOUBLE_EQ(s.p99, 0.99);
  std::vector<double> one = {0.25};
  s = Summarize(&one);
  EXPECT_DOUBLE_EQ(s.p50, 0.25);
  EXPECT_DOUBLE_EQ(s.p99, 0.25);
  std::vector<double> none;
  s = Summarize(&none);
  EXPECT_EQ(s.count, 0u);
  EXPECT_DOUBLE_EQ(s.p90, 0);
}

TEST(BenchStats, CdfPointsKeepTheEndsAndSpreadTheRanks) {
  std::vector<double> v = {1, 2, 3, 4, 5};
  auto c = CdfPoints(v, 3);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_DOUBLE_EQ(c[0].first, 1);
  EXPECT_DOUBLE_EQ(c[0].second, 0.2);
  EXPECT_DOUBLE_EQ(c[1].first, 3);
  EXPECT_DOUBLE_EQ(c[1].second, 0.6);
  EXPECT_DOUBLE_EQ(c[2].first, 5);
  EXPECT_DOUBLE_EQ(c[2].second, 1.0);
  EXPECT_EQ(CdfPoints(v, 100).size(), 5u);  // never more points than values
  EXPECT_TRUE(CdfPoints({}, 10).empty());
}

TEST(BenchStats, TimeSeriesBucketsRatesAndWindows) {
  TimeSeries s(1);
  s.Add(0.5, 2);
  s.Add(1.2, 3);
  s.Add(1.9, 1);
  s.Add(3.0, 4);
  s.Add(-1, 100);  // before the start: ignored
  EXPECT_EQ(s.Rates(), (std::vector<double>{2, 4, 0, 4}));
  EXPECT_DOUBLE_EQ(s.Sum(1, 3), 4);
  EXPECT_DOUBLE_EQ(s.Sum(0, 10), 10);
  TimeSeries half(0.5);
  half.Add(0.1, 1);
  half.Add(0.6, 3);
  EXPECT_EQ(half.Rates(), (std::vector<double>{2, 6}));  // per second
  EXPECT_DOUBLE_EQ(PerSecond(10, 4), 2.5);
  EXPECT_DOUBLE_EQ(PerSecond(10, 0), 0);
}

TEST(BenchText, SegmentsAreExactlyTheirTokensAndEqualSeedsEqualText) {
  for (uint32_t n : {0u, 1u, 16u, 1000u}) {
    std::string t;
    AppendSegmentText(42, n, &t);
    EXPECT_EQ(tokenizer::CountTokens(t), n);
    // Inside a chat message too: the template adds its own tokens, the content stays n.
    std::string rendered;
    tokenizer::AppendChatMessage("user", t, &rendered);
    std::string empty;
    tokenizer::AppendChatMessage("user", "", &empty);
    EXPECT_EQ(tokenizer::CountTokens(rendered), tokenizer::CountTokens(empty) + n);
  }
  std::string a, b, c;
  AppendSegmentText(7, 200, &a);
  AppendSegmentText(7, 200, &b);
  AppendSegmentText(8, 200, &c);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // A prefix of a longer segment with the same seed is the shorter one.
  std::string shorter;
  AppendSegmentText(7, 50, &shorter);
  EXPECT_EQ(a.substr(0, shorter.size()), shorter);
}

TEST(BenchTrace, LinesRoundTrip) {
  TraceRequest r;
  r.t = 12.5;
  r.session = "agent-1-s2";
  r.messages_json = R"([{"role":"user","content":"hi \"there\""}])";
  r.max_tokens = 17;
  auto back = ParseTraceLine(TraceLine(r));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_DOUBLE_EQ(back->t, 12.5);
  EXPECT_EQ(back->session, "agent-1-s2");
  EXPECT_TRUE(back->chat);
  EXPECT_EQ(nlohmann::json::parse(back->messages_json), nlohmann::json::parse(r.messages_json));
  EXPECT_EQ(back->max_tokens, 17u);
  TraceRequest p;
  p.chat = false;
  p.prompt = "line one\nline two";
  p.max_tokens = 3;
  auto pb = ParseTraceLine(TraceLine(p));
  ASSERT_TRUE(pb.ok());
  EXPECT_FALSE(pb->chat);
  EXPECT_EQ(pb->prompt, p.prompt);
  EXPECT_TRUE(pb->session.empty());
}

TEST(BenchTrace, BadLinesNameTheField) {
  struct Case {
    const char* line;
    const char* error;
  };
  for (const Case& c : {
           Case{"not json", "not valid JSON"},
           Case{"[1]", "expected a JSON object"},
           Case{R"({"prompt":"x","max_tokens":1})", "missing required field 't'"},
           Case{R"({"t":-1,"prompt":"x","max_tokens":1})", "field 't'"},
           Case{R"({"t":1,"max_tokens":1})", "exactly one of 'messages'"},
           Case{R"({"t":1,"prompt":"x","messages":[],"max_tokens":1})", "exactly one of"},
           Case{R"({"t":1,"messages":[{"role":"user"}],"max_tokens":1})", "messages[0]"},
           Case{R"({"t":1,"prompt":"x"})", "missing required field 'max_tokens'"},
           Case{R"({"t":1,"prompt":"x","max_tokens":0})", "field 'max_tokens'"},
           Case{R"({"t":1,"prompt":"x","max_tokens":1,"temperature":0})",
                "unknown field 'temperature'"},
           Case{R"({"t":1,"prompt":"x","max_tokens":1,"session":3})", "field 'session'"},
       }) {
    auto r = ParseTraceLine(c.line);
    ASSERT_FALSE(r.ok()) << c.line;
    EXPECT_NE(r.status().message().find(c.error), std::string::npos)
        << c.line << " -> " << r.status().message();
  }
}

TEST(BenchTrace, ReaderReportsFileAndLineAndKeepsOrder) {
  std::string path = testing::TempDir() + "/bench_trace_test.jsonl";
  {
    std::ofstream out(path);
    out << R"({"t":0,"prompt":"a","max_tokens":1})"
        << "\n\n"
        << R"({"t":2,"prompt":"b","max_tokens":2})"
        << "\n"
        << R"({"t":1,"prompt":"c","max_tokens":3})"
        << "\n";
  }
  auto info = ScanTrace(path);
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.status().message().find(path + ":4: field 't'"), std::string::npos)
      << info.status().message();
  {
    std::ofstream out(path);
    out << R"({"t":0,"prompt":"a","max_tokens":1})"
        << "\n"
        << R"({"t":2.5,"prompt":"b","max_tokens":2})"
        << "\n";
  }
  info = ScanTrace(path);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->requests, 2u);
  EXPECT_DOUBLE_EQ(info->last_t, 2.5);
  std::remove(path.c_str());
  EXPECT_FALSE(ScanTrace(path).ok());
}

TEST(BenchFleet, CountersAndTheWindowsFigures) {
  const char* a_text =
      "vllm:prefix_cache_queries_total{model_name=\"m\"} 1000\n"
      "vllm:prefix_cache_hits_total{model_name=\"m\"} 400\n"
      "vllm:num_preemptions_total{model_name=\"m\"} 1\n"
      "vllm:prompt_tokens_total{model_name=\"m\"} 1000\n"
      "vllm:generation_tokens_total{model_name=\"m\"} 100\n"
      "vllm:request_success_total{finished_reason=\"stop\"} 3\n"
      "vllm:request_success_total{finished_reason=\"length\"} 2\n"
      "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.25\n";
  ServerCounters a = CountersFromText(a_text);
  ASSERT_TRUE(a.ok);
  EXPECT_DOUBLE_EQ(a.requests, 5);
  EXPECT_DOUBLE_EQ(a.kv_usage, 0.25);
  ServerCounters a2 = a;
  a2.prefix_queries += 1000;  // 1000 more tokens queried, 900 hit
  a2.prefix_hits += 900;
  a2.prompt_tokens += 1000;
  a2.generation_tokens += 200;  // work: 100 uncached + 200 = 300
  a2.requests += 4;
  a2.preemptions += 2;
  ServerCounters b = a;
  ServerCounters b2 = b;
  b2.prefix_queries += 1000;  // none hit: work 1000 + 100 = 1100
  b2.prompt_tokens += 1000;
  b2.generation_tokens += 100;
  b2.requests += 6;
  FleetWindow w = Diff({a, b}, {a2, b2});
  EXPECT_TRUE(w.complete);
  EXPECT_DOUBLE_EQ(w.prefix_hit_rate, 900.0 / 2000);
  EXPECT_DOUBLE_EQ(w.preemptions, 2);
  EXPECT_DOUBLE_EQ(w.load_spread, 1100 / ((300 + 1100) / 2.0));
  EXPECT_EQ(w.requests_per_server, (std::vector<double>{4, 6}));
  EXPECT_FALSE(CountersFromText("garbage line with no value\n").ok);
  FleetWindow partial = Diff({a, ServerCounters{}}, {a2, b2});
  EXPECT_FALSE(partial.complete);
}

TEST(BenchClient, ChunksOfChatCompletionsAndErrors) {
  ChunkInfo c;
  ASSERT_TRUE(ParseChunk(R"({"choices":[{"index":0,"delta":{"content":" hello"}}]})", &c));
  EXPECT_EQ(c.content, " hello");
  ChunkInfo t;
  ASSERT_TRUE(ParseChunk(R"({"choices":[{"index":0,"text":" world"}]})", &t));
  EXPECT_EQ(t.content, " world");
  ChunkInfo u;
  ASSERT_TRUE(ParseChunk(
      R"({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13,)"
      R"("prompt_tokens_details":{"cached_tokens":8}}})",
      &u));
  EXPECT_TRUE(u.has_usage);
  EXPECT_EQ(u.prompt_tokens, 10u);
  EXPECT_EQ(u.completion_tokens, 3u);
  EXPECT_EQ(u.cached_tokens, 8u);
  ChunkInfo e;
  ASSERT_TRUE(ParseChunk(R"({"error":{"message":"boom","type":"x","code":500}})", &e));
  EXPECT_TRUE(e.error);
  EXPECT_EQ(e.error_message, "boom");
  ChunkInfo bad;
  EXPECT_FALSE(ParseChunk("{nope", &bad));
}

TEST(BenchGateways, NamesAndExternalUrls) {
  for (const auto& n : BuiltinGatewayNames()) EXPECT_TRUE(BuiltinGateway(n).ok()) << n;
  auto bad = BuiltinGateway("envoy");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("expected one of: infergrid"), std::string::npos);
  auto ext = ExternalGateway("mine=http://10.0.0.1:8080/");
  ASSERT_TRUE(ext.ok());
  EXPECT_EQ(ext->name, "mine");
  EXPECT_EQ(ext->host, "10.0.0.1");
  EXPECT_EQ(ext->port, 8080);
  EXPECT_FALSE(ExternalGateway("http://x:1").ok());
  EXPECT_FALSE(ExternalGateway("a=http://x").ok());
  EXPECT_FALSE(ExternalGateway("a=x:80").ok());
}

TEST(BenchGateways, GeneratedConfigsBalanceAsNamed) {
  std::vector<Upstream> ups = {{"127.0.0.1", 9001, "{accelerator: h200, model: llama-3.1-8b}"},
                               {"127.0.0.1", 9002, "{accelerator: h200, model: llama-3.1-8b}"}};
  std::string rr = NginxConfig(GatewayKind::kNginxRoundRobin, 8080, ups, "/w");
  EXPECT_EQ(rr.find("least_conn"), std::string::npos);
  EXPECT_EQ(rr.find("hash "), std::string::npos);
  EXPECT_NE(rr.find("server 127.0.0.1:9001"), std::string::npos);
  EXPECT_NE(rr.find("server 127.0.0.1:9002"), std::string::npos);
  EXPECT_NE(rr.find("proxy_buffering off"), std::string::npos);
  EXPECT_NE(rr.find("listen 127.0.0.1:8080"), std::string::npos);
  EXPECT_NE(NginxConfig(GatewayKind::kNginxLeastConn, 1, ups, "/w").find("least_conn;"),
            std::string::npos);
  EXPECT_NE(NginxConfig(GatewayKind::kNginxSessionHash, 1, ups, "/w")
                .find("hash $http_x_session_id consistent;"),
            std::string::npos);
  std::string ha = HaproxyConfig(8081, ups);
  EXPECT_NE(ha.find("balance leastconn"), std::string::npos);
  EXPECT_NE(ha.find("server s1 127.0.0.1:9002"), std::string::npos);
  // infergrid's configs are valid v1 documents, and round-robin replaces the default profile.
  for (GatewayKind k : {GatewayKind::kInfergrid, GatewayKind::kInfergridRoundRobin}) {
    auto g = config::ParseGateway(InfergridConfig(k, "meta-llama/Llama-3.1-8B-Instruct", ups, 50),
                                  "generated");
    ASSERT_TRUE(g.ok()) << g.status().message();
    ASSERT_TRUE(scheduling::ValidateProfiles(*g).ok());
    ASSERT_EQ(g->pools.size(), 1u);
    EXPECT_EQ(g->pools[0].endpoints.size(), 2u);
    EXPECT_GT(g->pools[0].endpoints[0].capacity.kv_cache_tokens, 0u);
    bool rr_profile = false;
    for (const auto& p : g->profiles)
      rr_profile |= p.name == "default" && p.picker.name == "round-robin";
    EXPECT_EQ(rr_profile, k == GatewayKind::kInfergridRoundRobin);
  }
}

TEST(BenchTrace, MooncakeLinesBecomeCompletionsWithTheTracesSharing) {
  std::string path = ::testing::TempDir() + "/bench_mooncake.jsonl";
  {
    std::ofstream f(path);
    f << R"({"timestamp": 1000, "input_length": 1024, "output_length": 7, "hash_ids": [1, 2]})"
      << "\n"
      << R"({"timestamp": 1500, "input_length": 600, "output_length": 0, "hash_ids": [1, 3],)"
      << R"( "session_id": "s9"})"
      << "\n"
      << R"({"timestamp": 2000, "input_length": 3, "output_length": 2, "text_input": "as is"})"
      << "\n";
  }
  auto reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok());
  auto a = **(*reader)->Next(), b = **(*reader)->Next(), c = **(*reader)->Next();
  auto words = [](const std::string& s) { return std::count(s.begin(), s.end(), ' '); };
  EXPECT_EQ(a.t, 0);
  EXPECT_EQ(b.t, 0.5);
  EXPECT_FALSE(a.chat);
  EXPECT_EQ(a.max_tokens, 7u);
  EXPECT_EQ(b.max_tokens, 1u);  // at least one
  EXPECT_EQ(b.session, "s9");
  EXPECT_EQ(words(a.prompt), 1024);  // one word a token
  EXPECT_EQ(words(b.prompt), 600);
  // The shared first block is the same text; the second differs.
  size_t block = 0;
  for (int n = 0; n < 512; ++n) block = a.prompt.find(' ', block + 1);
  EXPECT_EQ(a.prompt.substr(0, block), b.prompt.substr(0, block));
  EXPECT_NE(a.prompt.substr(block, 40), b.prompt.substr(block, 40));
  EXPECT_EQ(c.prompt, "as is");
  auto end = (*reader)->Next();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
  // A bad Mooncake line names its line and field, as the planner's reader does.
  {
    std::ofstream f(path, std::ios::app);
    f << R"({"timestamp": 3000, "input_length": 10, "output_length": 1, "hash_ids": [1, 2]})"
      << "\n";
  }
  auto info = ScanTrace(path);
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.status().message().find(":4: hash_ids: 2 ids for input_length 10"),
            std::string::npos)
      << info.status().message();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace infergrid::bench
