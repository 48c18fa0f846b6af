#include "engine_model/engine.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>

namespace infergrid::engine_model {
namespace {

// A small, round hardware and model so that step times can be computed by hand.
const AcceleratorProfile kChip{"test", "test chip", 100e12, 200e12, 100e9, 1e12};
const ModelProfile kModel{"tiny",         "tiny",          /*layers=*/2,
                          /*hidden=*/64,  /*heads=*/4,
                          /*kv_heads=*/2, /*head_dim=*/16, 0,
                          /*total=*/1e9,  /*active=*/1e9,  4096};

HardwareSetup Hw() {
  HardwareSetup hw;
  hw.accelerator = &kChip;
  hw.model = &kModel;
  hw.compute_efficiency = 0.5;
  hw.memory_efficiency = 0.8;
  hw.step_overhead_s = 0.001;
  return hw;
}

EngineConfig Config(uint32_t blocks, uint32_t budget = 8192) {
  EngineConfig c;
  c.block_size = 16;
  c.num_blocks = blocks;
  c.max_num_batched_tokens = budget;
  c.max_model_len = 4096;
  return c;
}

std::vector<uint32_t> Tokens(uint32_t n, uint32_t base) {
  std::vector<uint32_t> t(n);
  std::iota(t.begin(), t.end(), base);
  return t;
}

RequestSpec Spec(std::vector<uint32_t> prompt, uint32_t out) {
  return RequestSpec{std::move(prompt), Tokens(out, 900000), FinishReason::kLength};
}

// Runs steps until idle; returns every step's result. Time advances by each step's duration.
std::vector<StepResult> RunAll(Engine& e, double* now, size_t max_steps = 100000) {
  std::vector<StepResult> out;
  while (out.size() < max_steps) {
    auto d = e.BeginStep(*now);
    if (!d) break;
    *now += *d;
    out.push_back(e.EndStep());
  }
  return out;
}

TEST(Roofline, StepTimeIsTheLargerOfComputeAndMemoryPlusOverhead) {
  HardwareSetup hw = Hw();
  // Decode of one sequence with 100 tokens cached:
  //   flops = 2*1e9*1 + 4*2*4*16*1*(100 + 1) = 2e9 + 51712
  //   kv bytes per token per rank = 2*2 layers*2 heads*16 dims*2 bytes = 256
  //   bytes = 1e9 params * 2 bytes + 256 * (100 + 1) = 2e9 + 25856
  //   compute = flops / (100e12 * 0.5); memory = bytes / (1e12 * 0.8) -> memory bound
  SeqWork decode[] = {{1, 100}};
  StepCost c = RooflineStep(hw, decode);
  EXPECT_DOUBLE_EQ(c.flops, 2e9 + 51712);
  EXPECT_DOUBLE_EQ(c.bytes, 2e9 + 25856);
  EXPECT_DOUBLE_EQ(c.compute_s, (2e9 + 51712) / 50e12);
  EXPECT_DOUBLE_EQ(c.memory_s, (2e9 + 25856) / 0.8e12);
  EXPECT_DOUBLE_EQ(c.seconds, (2e9 + 25856) / 0.8e12 + 0.001);

  // A 4096-token prefill next to that decode is compute bound:
  //   flops = 2e9*4097 + 51712 + 512*4096*(0 + 4097/2)
  SeqWork mixed[] = {{1, 100}, {4096, 0}};
  c = RooflineStep(hw, mixed);
  double flops = 2e9 * 4097 + 51712 + 512.0 * 4096 * (4097 / 2.0);
  EXPECT_DOUBLE_EQ(c.flops, flops);
  EXPECT_DOUBLE_EQ(c.seconds, flops / 50e12 + 0.001);
  EXPECT_GT(c.compute_s, c.memory_s);

  // Tensor parallelism splits both terms and adds two all-reduces per layer.
  hw.tp = 2;
  c = RooflineStep(hw, decode);
  EXPECT_DOUBLE_EQ(c.bytes, 1e9 + 128 * 101);
  EXPECT_DOUBLE_EQ(c.seconds, (1e9 + 128 * 101) / 0.8e12 + 0.001 + 4 * hw.allreduce_latency_s);
}

TEST(Roofline, MixtureOfExpertsReadsOnlyTheExpertsItsTokensUse) {
  ModelProfile moe = kModel;
  moe.total_params = 8e9;
  moe.active_params = 1e9;
  HardwareSetup hw = Hw();
  hw.model = &moe;
  SeqWork one[] = {{1, 0}};
  EXPECT_DOUBLE_EQ(RooflineStep(hw, one).bytes, 2e9 + 256);
  std::vector<SeqWork> many(16, SeqWork{1, 0});
  EXPECT_DOUBLE_EQ(RooflineStep(hw, many).bytes, 16e9 + 256 * 16);
}

TEST(Roofline, KvCacheSizeComesFromMemoryLeftAfterWeights) {
  HardwareSetup hw = Hw();
  // 100 GB * 0.9 - 2 GB weights - 2 GB reserve = 86 GB; a block is 256 B * 16 tokens.
  auto blocks = KvCacheBlocks(hw, 16);
  ASSERT_TRUE(blocks.ok());
  EXPECT_EQ(*blocks, static_cast<uint32_t>(86e9 / 4096));
  ModelProfile huge = kModel;
  huge.total_params = 60e9;
  hw.model = &huge;
  auto err = KvCacheBlocks(hw, 16);
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.status().message().find("does not fit"), std::string::npos);
  hw.tp = 2;
  EXPECT_TRUE(KvCacheBlocks(hw, 16).ok());
}

TEST(Engine, ASecondRequestWithTheSamePrefixPrefillsOnlyItsNewBlocks) {
  Engine e(Config(64), Hw());
  double now = 0;
  auto shared = Tokens(64, 1);  // 4 full blocks
  e.Add(Spec(shared, 2), now);
  auto first = RunAll(e, &now);
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first[0].num_tokens, 64u);

  auto prompt = shared;
  auto tail = Tokens(20, 5000);
  prompt.insert(prompt.end(), tail.begin(), tail.end());
  e.Add(Spec(prompt, 1), now);
  auto second = RunAll(e, &now);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].num_tokens, 20u);  // 84 prompt tokens, 64 from the cache
  ASSERT_EQ(second[0].tokens.size(), 1u);
  EXPECT_EQ(second[0].tokens[0].prompt_tokens, 84u);
  EXPECT_EQ(second[0].tokens[0].cached_tokens, 64u);
  EXPECT_EQ(e.stats().prefix_cache_hits, 64u);
  EXPECT_EQ(e.stats().prefix_cache_queries, 64u + 84u);
}

TEST(Engine, AFullyCachedPromptStillComputesItsLastToken) {
  Engine e(Config(64), Hw());
  double now = 0;
  e.Add(Spec(Tokens(32, 1), 1), now);
  RunAll(e, &now);
  e.Add(Spec(Tokens(32, 1), 1), now);
  auto again = RunAll(e, &now);
  ASSERT_EQ(again.size(), 1u);
  // The last block cannot be reused whole (its last token must be computed): 16 recomputed.
  EXPECT_EQ(again[0].num_tokens, 16u);
  EXPECT_EQ(again[0].tokens[0].cached_tokens, 16u);
}

TEST(Engine, EvictsTheLeastRecentlyFreedBlocksFirst) {
  Engine e(Config(6), Hw());
  double now = 0;
  e.Add(Spec(Tokens(32, 100), 1), now);  // A: 2 blocks cached, then freed
  RunAll(e, &now);
  e.Add(Spec(Tokens(32, 200), 1), now);  // B: freed after A
  RunAll(e, &now);
  // C needs 4 blocks (3 full + 1 partial): the 2 never-used blocks go first, then A's
  // blocks, tail first (vLLM frees a request's last block first); B's stay cached.
  e.Add(Spec(Tokens(49, 300), 1), now);
  auto steps = RunAll(e, &now);
  std::vector<BlockHash> removed;
  for (auto& s : steps) {
    for (auto& ev : s.kv_events) {
      if (ev.kind == KvEvent::Kind::kRemoved)
        removed.insert(removed.end(), ev.hashes.begin(), ev.hashes.end());
    }
  }
  auto a = HashBlocks(Tokens(32, 100), 16);
  ASSERT_EQ(removed.size(), 2u);
  EXPECT_EQ(removed[0], a[1]);
  EXPECT_EQ(removed[1], a[0]);
  EXPECT_EQ(e.pool().CachedPrefix(HashBlocks(Tokens(32, 200), 16)), 2u);
  EXPECT_EQ(e.pool().CachedPrefix(a), 0u);
}

TEST(Engine, PreemptsTheNewestRequestWhenBlocksRunOutAndRecomputesIt) {
  // 8 blocks of 16 tokens; three requests that each grow to 16 + 40 tokens (4 blocks):
  // together they need 12 blocks, so decoding must preempt.
  Engine e(Config(8), Hw());
  double now = 0;
  uint64_t ids[3];
  for (int i = 0; i < 3; ++i) ids[i] = e.Add(Spec(Tokens(16, 1000 * (i + 1)), 40), now);
  auto steps = RunAll(e, &now);
  EXPECT_GT(e.stats().preemptions, 0u);
  // Every request still produces all 40 tokens, in order, exactly once.
  std::map<uint64_t, std::vector<uint32_t>> got;
  std::map<uint64_t, FinishReason> finished;
  for (auto& s : steps) {
    for (auto& t : s.tokens) {
      got[t.request].push_back(t.index);
      if (t.finished != FinishReason::kNone) finished[t.request] = t.finished;
    }
  }
  for (uint64_t id : ids) {
    ASSERT_EQ(got[id].size(), 40u) << id;
    for (uint32_t i = 0; i < 40; ++i) EXPECT_EQ(got[id][i], i);
    EXPECT_EQ(finished[id], FinishReason::kLength);
  }
  // The oldest request is never the one preempted: it decodes on every step until done.
  size_t last_of_first = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    for (auto& t : steps[i].tokens) {
      if (t.request == ids[0]) last_of_first = i;
    }
  }
  size_t tokens_of_first = 0;
  for (size_t i = 0; i <= last_of_first; ++i) {
    for (auto& t : steps[i].tokens) tokens_of_first += t.request == ids[0];
  }
  EXPECT_EQ(tokens_of_first, last_of_first + 1);
  EXPECT_EQ(e.kv_usage(), 0.0);
  EXPECT_FALSE(e.HasWork());
}

TEST(Engine, ChunkedPrefillSplitsALongPromptAndDecodesAlongsideIt) {
  Engine e(Config(256, /*budget=*/64), Hw());
  double now = 0;
  uint64_t small = e.Add(Spec(Tokens(10, 1), 5), now);
  auto d = e.BeginStep(now);
  ASSERT_TRUE(d);
  now += *d;
  e.EndStep();  // small prefilled and sampled its first token
  uint64_t big = e.Add(Spec(Tokens(200, 5000), 1), now);
  std::vector<uint32_t> step_tokens;
  std::vector<bool> small_decoded;
  for (int i = 0; i < 4; ++i) {
    d = e.BeginStep(now);
    ASSERT_TRUE(d);
    now += *d;
    auto r = e.EndStep();
    step_tokens.push_back(r.num_tokens);
    bool decoded = false;
    for (auto& t : r.tokens) decoded |= t.request == small;
    small_decoded.push_back(decoded);
    if (i < 3) {
      for (auto& t : r.tokens) EXPECT_NE(t.request, big) << "sampled before its prefill ended";
    }
  }
  // Budget 64: the small request's decode (1) comes first, the big prompt gets the rest.
  EXPECT_EQ(step_tokens, (std::vector<uint32_t>{64, 64, 64, 1 + 11}));
  EXPECT_EQ(small_decoded, (std::vector<bool>{true, true, true, true}));
}

TEST(Engine, MaxNumSeqsBoundsTheBatch) {
  EngineConfig c = Config(256);
  c.max_num_seqs = 2;
  Engine e(c, Hw());
  for (int i = 0; i < 5; ++i) e.Add(Spec(Tokens(8, 100 * i), 3), 0);
  auto d = e.BeginStep(0);
  ASSERT_TRUE(d);
  auto r = e.EndStep();
  EXPECT_EQ(r.num_seqs, 2u);
  EXPECT_EQ(e.num_running(), 2u);
  EXPECT_EQ(e.num_waiting(), 3u);
}

TEST(Engine, StepTimesAreTheRooflineOfWhatWasScheduled) {
  Engine e(Config(256), Hw());
  e.Add(Spec(Tokens(100, 1), 2), 0);
  auto d = e.BeginStep(0);
  ASSERT_TRUE(d);
  SeqWork prefill[] = {{100, 0}};
  EXPECT_DOUBLE_EQ(*d, RooflineStep(Hw(), prefill).seconds);
  auto r = e.EndStep();
  EXPECT_DOUBLE_EQ(r.end, *d);
  ASSERT_EQ(r.tokens.size(), 1u);
  EXPECT_DOUBLE_EQ(r.tokens[0].time, *d);
  d = e.BeginStep(r.end);
  SeqWork decode[] = {{1, 100}};
  EXPECT_DOUBLE_EQ(*d, RooflineStep(Hw(), decode).seconds);
}

TEST(Engine, IsDeterministic) {
  auto run = [] {
    Engine e(Config(40, 128), Hw());
    double now = 0;
    for (int i = 0; i < 12; ++i) e.Add(Spec(Tokens(30 + 7 * i, i % 3 * 50), 20 + i), now);
    std::vector<std::pair<double, uint64_t>> trace;
    for (auto& s : RunAll(e, &now)) {
      for (auto& t : s.tokens) trace.emplace_back(t.time, t.request * 1000 + t.index);
    }
    return std::make_pair(trace, e.stats().preemptions);
  };
  EXPECT_EQ(run(), run());
}

TEST(Engine, AbortFreesTheRequestsBlocks) {
  Engine e(Config(16), Hw());
  uint64_t id = e.Add(Spec(Tokens(40, 1), 100), 0);
  auto d = e.BeginStep(0);
  e.EndStep();
  EXPECT_GT(e.kv_usage(), 0.0);
  e.Abort(id);
  EXPECT_FALSE(e.BeginStep(*d));
  EXPECT_EQ(e.kv_usage(), 0.0);
  EXPECT_FALSE(e.HasWork());
}

TEST(Engine, AStepAdmitsOnlyRequestsThatHaveArrivedByItsStart) {
  Engine e(Config(64), Hw());
  e.Add(Spec(Tokens(8, 1), 1), /*now=*/5.0);
  EXPECT_FALSE(e.BeginStep(4.0));  // a step that starts before the arrival (catching up)
  EXPECT_EQ(e.NextArrival(), 5.0);
  auto d = e.BeginStep(5.0);
  ASSERT_TRUE(d);
  EXPECT_EQ(e.EndStep().tokens.size(), 1u);
}

}  // namespace
}  // namespace infergrid::engine_model

namespace infergrid::engine_model {
namespace {

// The planner gives prompts by block hashes; the engine must treat them exactly as the same
// tokens: same cache hits, same timings, and the same hashes for blocks that mix prompt and
// output tokens (so a conversation's next turn hits what its last reply wrote).
TEST(Engine, APromptGivenByBlockHashesBehavesAsItsTokens) {
  auto run = [](bool hashed) {
    Engine e(Config(256), Hw());
    double now = 0;
    std::vector<uint32_t> prompt = Tokens(100, 7);  // 6 full blocks and 4 tokens
    RequestSpec a = Spec(prompt, 20);
    if (hashed) {
      a.prompt_block_hashes = HashBlocks(prompt, 16);
      a.prompt.assign(prompt.begin() + 96, prompt.end());
    }
    e.Add(std::move(a), now);
    RunAll(e, &now);
    // The next turn: the whole first prompt, its reply, and more, given by tokens.
    std::vector<uint32_t> next = prompt;
    auto reply = Tokens(20, 900000);
    next.insert(next.end(), reply.begin(), reply.end());
    auto more = Tokens(30, 5000);
    next.insert(next.end(), more.begin(), more.end());
    e.Add(Spec(next, 4), now);
    auto steps = RunAll(e, &now);
    return std::make_pair(steps.front().tokens.front().cached_tokens, now);
  };
  auto [cached_tokens, end_tokens] = run(false);
  auto [cached_hashed, end_hashed] = run(true);
  EXPECT_EQ(cached_tokens, 112u);  // 7 full blocks: 6 of prompt, one of prompt tail + reply
  EXPECT_EQ(cached_hashed, cached_tokens);
  EXPECT_DOUBLE_EQ(end_hashed, end_tokens);
}

TEST(Engine, RecordsNoKvEventsWhenAskedNot) {
  EngineConfig c = Config(64);
  c.record_kv_events = false;
  Engine e(c, Hw());
  double now = 0;
  e.Add(Spec(Tokens(64, 1), 2), now);
  auto steps = RunAll(e, &now);
  for (const auto& s : steps) EXPECT_TRUE(s.kv_events.empty());
  EXPECT_GT(e.stats().generation_tokens, 0u);
}

}  // namespace
}  // namespace infergrid::engine_model
