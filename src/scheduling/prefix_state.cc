#include "scheduling/prefix_state.h"

#include <fmt/format.h>

#include <algorithm>

namespace infergrid::scheduling {

PrefixState::PrefixState(PrefixParams p)
    : p_(p),
      stride_(std::max(1u, p.index_block_size / std::max(1u, p.block_size))),
      entry_tokens_(p.block_size * stride_),
      index_(p.capacity_entries > 0 ? p.capacity_entries : kDefaultCapacityTokens / entry_tokens_) {
}

void PrefixKeys(const RequestInfo& req, uint32_t block_size, uint32_t stride,
                std::vector<BlockHash>* chain, std::vector<BlockHash>* keys) {
  std::span<const BlockHash> full;
  if (req.block_size == block_size && !req.prompt_block_hashes.empty()) {
    full = req.prompt_block_hashes;
  } else {
    chain->clear();
    AppendBlockHashes(req.prompt_token_ids, block_size, chain);
    full = *chain;
  }
  keys->clear();
  for (size_t i = stride - 1; i < full.size(); i += stride) keys->push_back(full[i]);
}

void PrefixState::Prepare(const RequestInfo& req, std::span<const EndpointSnapshot> endpoints) {
  if (prepared_) return;
  prepared_ = true;
  committed_ = false;
  size_t n = 0;
  for (const EndpointSnapshot& e : endpoints) n = std::max(n, e.index + 1);
  index_.Reserve(n);
  if (p_.capacity_entries == 0) {
    for (const EndpointSnapshot& e : endpoints) {
      uint64_t kv = e.capacity.kv_cache_tokens;
      size_t cap = (kv > 0 ? kv : kDefaultCapacityTokens) / entry_tokens_;
      if (index_.capacity(e.index) != cap) index_.SetCapacity(e.index, cap);
    }
  }
  PrefixKeys(req, p_.block_size, stride_, &chain_, &keys_);
  prompt_tokens_ = std::max<double>(
      {1.0, double(req.prompt_tokens_estimate), double(keys_.size()) * entry_tokens_});
  cached_.assign(index_.num_endpoints(), 0.0);
  matches_.clear();
  index_.Match(keys_, &matches_);
  for (auto [e, n] : matches_) cached_[e] = std::min(prompt_tokens_, double(n) * entry_tokens_);
}

void PrefixState::Commit(size_t endpoint) {
  if (!prepared_ || committed_) return;
  committed_ = true;
  index_.Insert(endpoint, keys_);
}

void PrefixState::Record(size_t endpoint, std::span<const BlockHash> keys) {
  index_.Insert(endpoint, keys);
}

Result<PrefixState*> SharedState::Prefix(const PrefixParams& p) {
  if (!prefix_) {
    prefix_ = std::make_unique<PrefixState>(p);
  } else if (!(prefix_->params() == p)) {
    const PrefixParams& q = prefix_->params();
    return Status::Error(
        fmt::format("the profile's plugins share one prefix index, already made with blockSize {}, "
                    "indexBlockSize {}, lruCapacityPerServer {}; give the same values",
                    q.block_size, q.index_block_size, q.capacity_entries));
  }
  return prefix_.get();
}

}  // namespace infergrid::scheduling
