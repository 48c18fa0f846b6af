// One routing decision of the default scheduling profile (the gateway's code, unchanged), at
// 8, 64, 512 and 4,096 endpoints with 4k-token prompts, and at 64 endpoints with prompts of
// 1k to 64k tokens. Each endpoint's prefix index is warmed with conversations that share a
// system prompt, as a fleet serving agents would be; 70% of the timed requests continue a
// conversation (their prefix lives on one endpoint), 30% start one.
//
// Reported per benchmark: p50 and p99 of single decisions (timed one by one), and the ratio
// of the p50 to hashing the same prompt once (the part every cache-aware router must pay),
// measured in the same run. docs/BENCHMARKS.md records the figures and the command.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "common/block_hash.h"
#include "config/config.h"
#include "scheduling/registry.h"

namespace infergrid {
namespace {

constexpr uint32_t kSystemTokens = 1024;
constexpr int kConversationsPerEndpoint = 8;

std::vector<uint32_t> Tokens(uint64_t seed, size_t n) {
  std::vector<uint32_t> t(n);
  std::mt19937_64 rng(seed);
  for (auto& x : t) x = 3 + rng() % 127997;
  return t;
}

struct Fixture {
  std::unique_ptr<scheduling::Scheduler> scheduler;
  std::vector<EndpointSnapshot> endpoints;
  std::vector<std::string> urls;
  std::vector<RequestInfo> requests;  // the timed ones, cycled
  double hash_ns = 0;                 // hashing one prompt, for the ratio
};

RequestInfo Request(const std::vector<uint32_t>& tokens, std::string session, double now) {
  RequestInfo r;
  r.prompt_token_ids = tokens;
  r.prompt_tokens_estimate = static_cast<uint32_t>(tokens.size());
  r.session_key = std::move(session);
  r.now_seconds = now;
  return r;
}

Fixture Build(size_t endpoints, size_t prompt_tokens) {
  Fixture f;
  auto s = scheduling::BuiltinRegistry().Build(config::DefaultProfile(), "bench", 1);
  f.scheduler = std::move(*s);
  f.urls.resize(endpoints);
  f.endpoints.resize(endpoints);
  for (size_t i = 0; i < endpoints; ++i) {
    f.urls[i] = "http://e" + std::to_string(i);
    EndpointSnapshot& e = f.endpoints[i];
    e.index = i;
    e.url = &f.urls[i];
    e.capacity.prefill_tokens_per_s = 20000;
    e.capacity.decode_tokens_per_s = 10000;
    e.capacity.kv_cache_tokens = 2000000;
    e.capacity.max_num_seqs = 256;
    e.in_flight = 4;
    e.in_flight_prompt_tokens = 4 * prompt_tokens;
  }
  // Warm: every endpoint serves conversations behind one system prompt.
  std::vector<uint32_t> system = Tokens(1, kSystemTokens);
  std::vector<std::vector<uint32_t>> convs;
  double now = 0;
  for (size_t c = 0; c < endpoints * kConversationsPerEndpoint; ++c) {
    std::vector<uint32_t> p = system;
    auto rest = Tokens(100 + c, prompt_tokens - kSystemTokens);
    p.insert(p.end(), rest.begin(), rest.end());
    f.scheduler->Schedule(Request(p, "s" + std::to_string(c), now), f.endpoints);
    now += 0.001;
    if (convs.size() < 700) convs.push_back(std::move(p));
  }
  // Timed: continuing turns (the same prefix, a little more) and new conversations.
  std::mt19937_64 rng(7);
  for (int i = 0; i < 1000; ++i) {
    if (rng() % 10 < 7) {
      size_t c = rng() % convs.size();
      std::vector<uint32_t> p(convs[c].begin(), convs[c].end() - 256);
      auto more = Tokens(5000000 + i, 256);
      p.insert(p.end(), more.begin(), more.end());
      f.requests.push_back(Request(p, "s" + std::to_string(c), now));
    } else {
      std::vector<uint32_t> p = system;
      auto rest = Tokens(9000000 + i, prompt_tokens - kSystemTokens);
      p.insert(p.end(), rest.begin(), rest.end());
      f.requests.push_back(Request(p, "n" + std::to_string(i), now));
    }
  }
  // The same run's baseline: hashing one prompt into its block chain.
  auto t0 = std::chrono::steady_clock::now();
  size_t sink = 0;
  for (const auto& r : f.requests) sink += HashBlocks(r.prompt_token_ids, 16).size();
  f.hash_ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
      f.requests.size();
  benchmark::DoNotOptimize(sink);
  return f;
}

void Decide(benchmark::State& state, size_t endpoints, size_t prompt_tokens) {
  Fixture f = Build(endpoints, prompt_tokens);
  std::vector<double> ns;
  ns.reserve(1 << 16);
  size_t i = 0;
  for (auto _ : state) {
    RequestInfo& r = f.requests[i++ % f.requests.size()];
    r.now_seconds += 1e-4;
    auto t0 = std::chrono::steady_clock::now();
    auto d = f.scheduler->Schedule(r, f.endpoints);
    auto t1 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(d);
    if (ns.size() < (1 << 16))
      ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
  }
  std::sort(ns.begin(), ns.end());
  auto q = [&](double p) {
    return ns.empty() ? 0 : ns[std::min(ns.size() - 1, size_t(p * ns.size()))];
  };
  state.counters["p50_us"] = q(0.50) / 1e3;
  state.counters["p99_us"] = q(0.99) / 1e3;
  state.counters["hash_us"] = f.hash_ns / 1e3;
  state.counters["p50_over_hash"] = q(0.50) / f.hash_ns;
}

void BM_DecisionByEndpoints(benchmark::State& state) {
  Decide(state, static_cast<size_t>(state.range(0)), 4096);
}
BENCHMARK(BM_DecisionByEndpoints)
    ->Arg(8)
    ->Arg(64)
    ->Arg(512)
    ->Arg(4096)
    ->Unit(benchmark::kMicrosecond);

void BM_DecisionByPromptTokens(benchmark::State& state) {
  Decide(state, 64, static_cast<size_t>(state.range(0)));
}
BENCHMARK(BM_DecisionByPromptTokens)
    ->Arg(1024)
    ->Arg(4096)
    ->Arg(16384)
    ->Arg(65536)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace infergrid

BENCHMARK_MAIN();
