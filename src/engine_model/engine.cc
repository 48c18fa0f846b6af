#include "engine_model/engine.h"

#include <algorithm>

namespace infergrid::engine_model {

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kNone:
      break;
  }
  return "";
}

Engine::Engine(EngineConfig config, HardwareSetup hw)
    : config_(config), hw_(hw), pool_(config.num_blocks) {}

uint64_t Engine::Add(RequestSpec spec, double now) {
  auto seq = std::make_unique<Seq>();
  seq->id = next_id_++;
  seq->spec = std::move(spec);
  seq->chain = std::move(seq->spec.prompt_block_hashes);
  seq->prompt_offset = static_cast<uint32_t>(seq->chain.size()) * config_.block_size;
  seq->prompt_len = seq->prompt_offset + static_cast<uint32_t>(seq->spec.prompt.size());
  seq->arrival = now;
  seq->first_scheduled = -1;
  Seq* s = seq.get();
  seqs_.emplace(s->id, std::move(seq));
  waiting_.push_back(s);
  return s->id;
}

void Engine::Abort(uint64_t id) {
  auto it = seqs_.find(id);
  if (it != seqs_.end()) it->second->aborted = true;
}

void Engine::Free(Seq* s) {
  // Last block first, so a sequence's tail is evicted before its (likely shared) head.
  pool_.ReleaseLastFirst(s->blocks);
  s->blocks.clear();
}

void Engine::Preempt(Seq* s) {
  Free(s);
  s->committed = 0;
  s->num_computed = 0;
  s->preempted = true;
  waiting_.push_front(s);
  ++stats_.preemptions;
}

void Engine::PurgeAborted() {
  auto gone = [this](Seq* s) {
    if (!s->aborted) return false;
    Free(s);
    seqs_.erase(s->id);
    return true;
  };
  std::erase_if(running_, gone);
  std::erase_if(waiting_, gone);
}

uint32_t Engine::ChunkFor(const Seq& s, uint32_t budget) const {
  uint32_t n = std::min(s.known() - s.num_computed, budget);
  if (config_.long_prefill_token_threshold > 0) {
    n = std::min(n, config_.long_prefill_token_threshold);
  }
  return n;
}

void Engine::ExtendChain(Seq* s) {
  const uint32_t bs = config_.block_size;
  const uint32_t full = s->known() / bs;
  if (s->chain.size() >= full) return;
  std::vector<uint32_t> block(bs);
  for (uint32_t k = static_cast<uint32_t>(s->chain.size()); k < full; ++k) {
    for (uint32_t j = 0; j < bs; ++j) block[j] = s->token(k * bs + j);
    s->chain.push_back(HashBlock(k == 0 ? 0 : s->chain[k - 1], block));
  }
}

bool Engine::TryAdmit(Seq* s, uint32_t budget, uint32_t* chunk) {
  // Look up the longest cached prefix of full blocks, short of the last known token.
  size_t hit = 0;
  std::span<const BlockHash> lookup;
  if (config_.enable_prefix_caching) {
    ExtendChain(s);
    lookup = std::span(s->chain).first((s->known() - 1) / config_.block_size);
    // A request that waits is looked up again each step: continue from what was found last
    // time unless the cache has dropped anything since (long prompts make this the hot path).
    if (s->hit_generation != pool_.generation() || s->hit_ids.size() > lookup.size()) {
      s->hit_ids.clear();
      s->hit_generation = pool_.generation();
    }
    hit = pool_.ExtendCachedPrefix(lookup, &s->hit_ids);
  } else {
    s->hit_ids.clear();
  }
  const std::vector<BlockId>& hit_ids = s->hit_ids;
  uint32_t computed = static_cast<uint32_t>(hit) * config_.block_size;
  uint32_t remaining = s->known() - computed;
  uint32_t n = std::min(remaining, budget);
  if (config_.long_prefill_token_threshold > 0) {
    n = std::min(n, config_.long_prefill_token_threshold);
  }
  if (!config_.chunked_prefill && n < remaining) return false;
  uint32_t fresh = BlocksFor(computed + n) - static_cast<uint32_t>(hit);
  size_t free_after_hits = pool_.num_free() - pool_.FreeAmong(hit_ids);
  if (fresh > free_after_hits) return false;

  if (config_.enable_prefix_caching && !s->preempted) {  // vLLM counts first lookups only
    stats_.prefix_cache_queries += s->known();
    stats_.prefix_cache_hits += computed;
  }
  pool_.Acquire(hit_ids);
  s->blocks.assign(hit_ids.begin(), hit_ids.end());
  s->hit_ids = {};                    // admitted: the lookup is done
  auto more = pool_.Allocate(fresh);  // cannot fail: checked above
  s->blocks.insert(s->blocks.end(), more->begin(), more->end());
  s->committed = static_cast<uint32_t>(hit);
  s->num_computed = computed;
  if (!s->scheduled_before) {
    s->cached_tokens = std::min<uint32_t>(computed, s->prompt_len);
    s->scheduled_before = true;
  }
  *chunk = n;
  return true;
}

std::optional<double> Engine::BeginStep(double now) {
  PurgeAborted();
  batch_.clear();
  uint32_t budget = config_.max_num_batched_tokens;
  bool preempted = false;

  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Seq* s = running_[i];
    uint32_t n = ChunkFor(*s, budget);
    uint32_t need = BlocksFor(s->num_computed + n) - static_cast<uint32_t>(s->blocks.size());
    bool self_preempted = false;
    while (need > pool_.num_free()) {
      Seq* victim = running_.back();
      running_.pop_back();
      Preempt(victim);
      preempted = true;
      if (victim == s) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;
    auto more = pool_.Allocate(need);
    s->blocks.insert(s->blocks.end(), more->begin(), more->end());
    batch_.push_back({s, n});
    budget -= n;
    ++i;
  }
  // (A victim is always at or after index i, so nothing already in batch_ was preempted.)

  if (!preempted) {
    while (!waiting_.empty() && budget > 0 && running_.size() < config_.max_num_seqs) {
      Seq* s = waiting_.front();
      if (s->arrival > now) break;  // not arrived yet at this step's start (FIFO by arrival)
      uint32_t n = 0;
      if (!TryAdmit(s, budget, &n)) break;
      if (s->first_scheduled < 0) s->first_scheduled = now;
      waiting_.pop_front();
      running_.push_back(s);
      batch_.push_back({s, n});
      budget -= n;
    }
  }
  DrainEvictions();
  if (batch_.empty()) return std::nullopt;

  std::vector<SeqWork> work;
  work.reserve(batch_.size());
  for (const Scheduled& b : batch_) work.push_back({b.new_tokens, b.seq->num_computed});
  step_cost_ = RooflineStep(hw_, work);
  step_start_ = now;
  in_step_ = true;
  return step_cost_.seconds;
}

void Engine::CommitFullBlocks(Seq* s) {
  if (!config_.enable_prefix_caching) return;
  const uint32_t bs = config_.block_size;
  const uint32_t full = s->num_computed / bs;
  if (s->committed >= full) return;
  ExtendChain(s);
  const bool record = config_.record_kv_events;
  KvEvent stored{KvEvent::Kind::kStored, {}, 0, {}};
  auto flush = [&] {
    if (!stored.hashes.empty()) kv_events_.push_back(std::move(stored));
    stored = KvEvent{KvEvent::Kind::kStored, {}, 0, {}};
  };
  for (uint32_t k = s->committed; k < full; ++k) {
    BlockHash h = s->chain[k];
    if (!pool_.Commit(s->blocks[k], h)) {
      if (record) flush();
      continue;
    }
    if (!record) continue;
    if (stored.hashes.empty()) stored.parent = k == 0 ? 0 : s->chain[k - 1];
    stored.hashes.push_back(h);
    if (k * bs >= s->prompt_offset) {  // blocks given only by hash carry no token ids
      for (uint32_t j = 0; j < bs; ++j) stored.tokens.push_back(s->token(k * bs + j));
    }
  }
  if (record) flush();
  s->committed = full;
}

void Engine::DrainEvictions() {
  auto evicted = pool_.TakeEvicted();
  // One event per evicted block, as vLLM's block pool reports them.
  if (!config_.record_kv_events) return;
  for (BlockHash h : evicted) kv_events_.push_back({KvEvent::Kind::kRemoved, {h}, 0, {}});
}

StepResult Engine::EndStep() {
  StepResult r;
  r.start = step_start_;
  r.end = step_start_ + step_cost_.seconds;
  r.cost = step_cost_;
  r.num_seqs = static_cast<uint32_t>(batch_.size());
  in_step_ = false;
  ++stats_.steps;
  std::vector<Seq*> finished;
  for (const Scheduled& b : batch_) {
    Seq* s = b.seq;
    r.num_tokens += b.new_tokens;
    if (s->aborted) continue;  // freed by the next PurgeAborted
    s->num_computed += b.new_tokens;
    CommitFullBlocks(s);
    if (s->num_computed < s->known()) continue;  // a prefill chunk short of the end
    TokenEvent t{s->id, s->num_output, FinishReason::kNone, r.end};
    if (s->num_output == 0) {
      t.prompt_tokens = s->prompt_len;
      t.cached_tokens = s->cached_tokens;
      t.arrival = s->arrival;
      t.scheduled = s->first_scheduled;
      stats_.prompt_tokens += s->prompt_len;
    }
    ++s->num_output;
    ++stats_.generation_tokens;
    if (s->num_output >= s->spec.output.size()) {
      t.finished = s->spec.end_reason;
    } else if (s->known() >= config_.max_model_len) {
      t.finished = FinishReason::kLength;
    }
    if (t.finished != FinishReason::kNone) finished.push_back(s);
    r.tokens.push_back(t);
  }
  for (Seq* s : finished) {
    Free(s);
    std::erase(running_, s);
    seqs_.erase(s->id);
  }
  batch_.clear();
  r.kv_events = std::exchange(kv_events_, {});
  return r;
}

std::optional<double> Engine::NextArrival() const {
  for (Seq* s : waiting_) {
    if (!s->aborted) return s->arrival;
  }
  return std::nullopt;
}

std::vector<KvEvent> Engine::TakeKvEvents() { return std::exchange(kv_events_, {}); }

bool Engine::ResetPrefixCache() {
  if (!running_.empty() || in_step_) return false;
  pool_.ClearCache();
  pool_.TakeEvicted();
  if (config_.record_kv_events) kv_events_.push_back({KvEvent::Kind::kAllCleared, {}, 0, {}});
  return true;
}

}  // namespace infergrid::engine_model
