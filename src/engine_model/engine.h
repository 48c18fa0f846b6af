#pragma once
// One model server's engine, as vLLM's v1 engine core runs it: a continuous-batching scheduler
// over the paged KV cache (block_pool.h), timed by the roofline (roofline.h).
//
// Time is injected: the caller starts a step at some time, learns how long it takes, and ends
// it at that time. The simulator maps that onto the wall clock (optionally scaled); the planner
// runs it in virtual time. Pure and deterministic: no I/O, no clock, no randomness, not
// thread-safe.
//
// Scheduling, per step (vLLM v1's Scheduler.schedule):
//   1. Running requests first, in order: each gets the tokens it still needs (1 to decode, or
//      the rest of its prompt, capped by the token budget and long_prefill_token_threshold).
//      When the KV cache has no block for it, the newest running request is preempted: its
//      blocks are freed (still cached) and it goes back to the front of the queue, to be
//      recomputed later.
//   2. Then, if nothing was preempted, waiting requests in arrival order while the budget and
//      max_num_seqs allow: each first reuses its longest cached prefix of full blocks (never
//      the whole prompt: the last token is always computed, for its logits), and prefills as
//      much of the rest as the budget allows (chunked prefill).
// A request samples one token each step that brings its computed tokens up to all its known
// tokens; full blocks (prompt and output alike) are then cached under their chained hash.

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "engine_model/block_pool.h"
#include "engine_model/roofline.h"

namespace infergrid::engine_model {

struct EngineConfig {
  uint32_t block_size = 16;
  uint32_t num_blocks = 0;  // required
  uint32_t max_num_seqs = 256;
  uint32_t max_num_batched_tokens = 8192;
  uint32_t long_prefill_token_threshold = 0;  // 0: a prefill chunk is capped only by the budget
  uint32_t max_model_len = 8192;
  bool enable_prefix_caching = true;
  bool chunked_prefill = true;   // false: a prompt that does not fit the budget waits
  bool record_kv_events = true;  // false: no KvEvents are built (the planner needs none)
};

enum class FinishReason { kNone, kStop, kLength };

struct RequestSpec {
  std::vector<uint32_t> prompt;
  // The tokens it will generate, in order; their number is its output length.
  std::vector<uint32_t> output;
  // Why it ends once all of `output` is generated: kLength when max_tokens ran out, kStop when
  // the model "chose" to end (an output-length distribution drew fewer than max_tokens).
  FinishReason end_reason = FinishReason::kLength;
  // A long prompt may instead be given by the chained hashes of its first full blocks (the
  // planner, which never materialises prompts): `prompt` then holds only the tokens after
  // them. The prompt's length is prompt_block_hashes.size() * block_size + prompt.size().
  std::vector<BlockHash> prompt_block_hashes;
};

// A token sampled for a request in a step (times are engine times, seconds).
struct TokenEvent {
  uint64_t request;
  uint32_t index;  // 0 for the first output token
  FinishReason finished = FinishReason::kNone;
  double time;  // the step's end: when the token exists
  // Filled on the first token: prompt tokens, of which served from the prefix cache.
  uint32_t prompt_tokens = 0;
  uint32_t cached_tokens = 0;
  double arrival = 0;
  double scheduled = 0;  // the start of the step that first scheduled it
};

struct KvEvent {
  enum class Kind { kStored, kRemoved, kAllCleared };
  Kind kind;
  std::vector<BlockHash> hashes;
  BlockHash parent = 0;          // kStored: the parent of hashes[0]; 0 for none
  std::vector<uint32_t> tokens;  // kStored: the blocks' token ids, concatenated
};

struct StepResult {
  double start = 0, end = 0;
  StepCost cost;
  uint32_t num_seqs = 0, num_tokens = 0;
  std::vector<TokenEvent> tokens;
  std::vector<KvEvent> kv_events;  // in the order they happened (removals while scheduling)
};

struct EngineStats {
  uint64_t prefix_cache_queries = 0;  // tokens looked up (first lookups, not after preemption)
  uint64_t prefix_cache_hits = 0;     // tokens found
  uint64_t preemptions = 0;
  uint64_t prompt_tokens = 0;  // counted once per request, at its first token
  uint64_t generation_tokens = 0;
  uint64_t steps = 0;
};

class Engine {
 public:
  Engine(EngineConfig config, HardwareSetup hw);

  const EngineConfig& config() const { return config_; }
  const HardwareSetup& hardware() const { return hw_; }

  // Queues a request arriving at `now` (arrivals come in time order; a step admits only
  // requests that arrived by its start). The caller checked it fits max_model_len.
  uint64_t Add(RequestSpec spec, double now);
  // Drops a request (client gone): its blocks are freed at the next step boundary.
  void Abort(uint64_t id);

  // Schedules the next step at `now` and returns its duration, or nullopt when nothing is
  // runnable. Call EndStep() before the next BeginStep().
  std::optional<double> BeginStep(double now);
  StepResult EndStep();
  bool in_step() const { return in_step_; }
  bool HasWork() const { return !running_.empty() || !waiting_.empty(); }
  // The arrival time of the first waiting request: a step that starts earlier cannot admit it.
  std::optional<double> NextArrival() const;

  // Forgets the prefix cache (vLLM's /reset_prefix_cache). False while requests run.
  bool ResetPrefixCache();
  // KV events raised outside a step (a reset); those of a step come in its StepResult.
  std::vector<KvEvent> TakeKvEvents();

  size_t num_running() const { return running_.size(); }
  size_t num_waiting() const { return waiting_.size(); }
  double kv_usage() const { return pool_.usage(); }
  const EngineStats& stats() const { return stats_; }
  const BlockPool& pool() const { return pool_; }

 private:
  struct Seq {
    uint64_t id;
    RequestSpec spec;
    uint32_t num_output = 0;     // sampled so far
    uint32_t num_computed = 0;   // tokens in the KV cache
    uint32_t cached_tokens = 0;  // prompt tokens hit on its first scheduling
    bool scheduled_before = false;
    double first_scheduled = 0;
    bool preempted = false;
    bool aborted = false;
    double arrival;
    std::vector<BlockId> blocks;
    // The chained hashes of its full blocks so far (prompt and output), each computed once;
    // the first `committed` of them are in the cache under this sequence's blocks.
    std::vector<BlockHash> chain;
    uint32_t committed = 0;
    // While waiting: the cached blocks of its prefix found so far, as of pool generation
    // hit_generation.
    std::vector<BlockId> hit_ids;
    uint64_t hit_generation = UINT64_MAX;
    uint32_t prompt_len = 0;
    uint32_t prompt_offset = 0;  // position of spec.prompt[0] (after the hashed blocks)
    uint32_t known() const { return prompt_len + num_output; }
    // Only positions from prompt_offset on have token ids.
    uint32_t token(uint32_t pos) const {
      return pos < prompt_len ? spec.prompt[pos - prompt_offset] : spec.output[pos - prompt_len];
    }
  };
  struct Scheduled {
    Seq* seq;
    uint32_t new_tokens;
  };

  uint32_t BlocksFor(uint32_t tokens) const {
    return (tokens + config_.block_size - 1) / config_.block_size;
  }
  uint32_t ChunkFor(const Seq& s, uint32_t budget) const;
  void Preempt(Seq* s);
  void Free(Seq* s);
  void PurgeAborted();
  bool TryAdmit(Seq* s, uint32_t budget, uint32_t* chunk);
  void CommitFullBlocks(Seq* s);
  // Hashes the sequence's full blocks up to its known tokens (each block once, ever).
  void ExtendChain(Seq* s);
  void DrainEvictions();

  EngineConfig config_;
  HardwareSetup hw_;
  BlockPool pool_;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Seq>> seqs_;
  std::vector<Seq*> running_;
  std::deque<Seq*> waiting_;
  bool in_step_ = false;
  double step_start_ = 0;
  StepCost step_cost_;
  std::vector<Scheduled> batch_;
  std::vector<KvEvent> kv_events_;
  EngineStats stats_;
};

const char* FinishReasonName(FinishReason r);

}  // namespace infergrid::engine_model
