#pragma once
// What the plugins of one scheduling profile know about prompt prefixes, shared so a prompt is
// hashed and matched once per decision however many plugins read it (the prefix-cache and
// expected-ttft scorers), and recorded once per pick. Owned by the profile's SharedState;
// a plugin built without a scheduler (a unit test) owns a private one.
//
// Decision protocol: BeginDecision(), then any number of Prepare() (the first computes),
// reads, then Commit(chosen).
// Pure; not thread-safe (the scheduler is called by one thread at a time).

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/result.h"
#include "infergrid/endpoint.h"
#include "infergrid/request.h"
#include "scheduling/prefix_index/prefix_index.h"

namespace infergrid::scheduling {

struct PrefixParams {
  uint32_t block_size = 16;        // the servers' KV block size (vLLM's --block-size)
  uint32_t index_block_size = 64;  // tokens per index entry, a multiple of block_size
  size_t capacity_entries = 0;     // per endpoint; 0: from its KV size
  bool operator==(const PrefixParams&) const = default;
};

class PrefixState {
 public:
  static constexpr uint64_t kDefaultCapacityTokens = 2000000;  // when an endpoint's KV is unknown

  explicit PrefixState(PrefixParams p);
  const PrefixParams& params() const { return p_; }

  void BeginDecision() { prepared_ = false; }
  // Hashes the prompt into index keys and matches them on every endpoint; sizes each
  // endpoint's share of the index from its KV cache. Once per decision.
  void Prepare(const RequestInfo& req, std::span<const EndpointSnapshot> endpoints);
  // After Prepare: the prompt tokens an endpoint is estimated to hold, and the prompt's length.
  double CachedTokens(size_t endpoint) const {
    return endpoint < cached_.size() ? cached_[endpoint] : 0;
  }
  double PromptTokens() const { return prompt_tokens_; }
  bool prepared() const { return prepared_; }
  // Records that the prompt went to `endpoint`. Once per decision; a no-op before Prepare.
  void Commit(size_t endpoint);
  const PrefixIndex& index() const { return index_; }
  // The index keys of the prompt last prepared (what Commit records).
  std::span<const BlockHash> keys() const { return keys_; }
  // Records keys another replica sent to `endpoint` (their order as Commit's: head first).
  void Record(size_t endpoint, std::span<const BlockHash> keys);
  // Forgets what `endpoint` holds (its server restarted).
  void Forget(size_t endpoint) { index_.Clear(endpoint); }

 private:
  PrefixParams p_;
  uint32_t stride_, entry_tokens_;
  PrefixIndex index_;
  bool prepared_ = false;
  bool committed_ = false;
  double prompt_tokens_ = 0;
  std::vector<BlockHash> chain_, keys_;
  std::vector<std::pair<uint32_t, uint32_t>> matches_;
  std::vector<double> cached_;
};

// The index keys of a prompt: every `stride`-th hash of its chain of `block_size`-token blocks,
// taken from the request's hashes when their block size matches, else hashed from its tokens.
// `chain` is scratch space.
void PrefixKeys(const RequestInfo& req, uint32_t block_size, uint32_t stride,
                std::vector<BlockHash>* chain, std::vector<BlockHash>* keys);

// State shared by the plugins of one scheduling profile, owned by its Scheduler.
class SharedState {
 public:
  // The profile's prefix state, made on first use with `p`; a later plugin asking for other
  // parameters gets an error (the caller reports it at its own config position).
  Result<PrefixState*> Prefix(const PrefixParams& p);
  PrefixState* prefix() { return prefix_.get(); }

 private:
  std::unique_ptr<PrefixState> prefix_;
};

}  // namespace infergrid::scheduling
