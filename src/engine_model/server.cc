#include "engine_model/server.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace infergrid::engine_model {

Result<ServerSetup> MakeServer(const ServerOptions& o) {
  if (o.accelerator == nullptr || o.model == nullptr)
    return Status::Error("an accelerator and a model profile are required");
  if (o.tp == 0) return Status::Error("--tp: must be at least 1");
  if (o.block_size == 0 || o.block_size > 1024)
    return Status::Error("--block-size: expected 1..1024");
  ServerSetup s;
  HardwareSetup& hw = s.hw;
  hw.accelerator = o.accelerator;
  hw.model = o.model;
  hw.tp = o.tp;
  hw.dtype = o.dtype;
  hw.kv_bytes = o.kv_bytes;
  hw.gpu_memory_utilization = o.gpu_memory_utilization;

  EngineConfig& ec = s.engine;
  ec.block_size = o.block_size;
  if (o.num_gpu_blocks_override > 0) {
    ec.num_blocks = o.num_gpu_blocks_override;
  } else {
    auto blocks = KvCacheBlocks(hw, o.block_size);
    if (!blocks.ok()) return blocks.status();
    ec.num_blocks = *blocks;
  }
  // vLLM's online-serving defaults: devices of 70 GiB or more get 8192 tokens and 1024 seqs.
  const bool big = o.accelerator->hbm_bytes >= 70.0 * (1ull << 30);
  ec.max_num_batched_tokens =
      o.max_num_batched_tokens ? o.max_num_batched_tokens : (big ? 8192 : 2048);
  ec.max_num_seqs = o.max_num_seqs ? o.max_num_seqs : (big ? 1024 : 256);
  ec.long_prefill_token_threshold = o.long_prefill_token_threshold;
  ec.enable_prefix_caching = o.enable_prefix_caching;
  uint64_t capacity = static_cast<uint64_t>(ec.num_blocks) * ec.block_size;
  if (o.max_model_len > 0) {
    if (o.max_model_len > capacity) {
      return Status::Error(
          fmt::format("--max-model-len {} is more than the KV cache holds ({} tokens in {} blocks)",
                      o.max_model_len, capacity, ec.num_blocks));
    }
    ec.max_model_len = o.max_model_len;
  } else {
    ec.max_model_len = static_cast<uint32_t>(std::min<uint64_t>(o.model->max_model_len, capacity));
  }
  if (ec.max_model_len < 2) return Status::Error("the KV cache holds fewer than 2 tokens");
  return s;
}

ServerCapacity EstimateCapacity(const ServerSetup& s) {
  constexpr uint32_t kContext = 4096;
  ServerCapacity c;
  c.max_num_seqs = s.engine.max_num_seqs;
  c.kv_cache_tokens = static_cast<uint64_t>(s.engine.num_blocks) * s.engine.block_size;
  // Prefill: one step's full budget of new tokens, as chunks of 4k-token prompts.
  uint32_t budget = s.engine.max_num_batched_tokens;
  std::vector<SeqWork> prefill;
  for (uint32_t left = budget; left > 0;) {
    uint32_t n = std::min(left, kContext);
    prefill.push_back({n, 0});
    left -= n;
  }
  c.prefill_tokens_per_s = budget / RooflineStep(s.hw, prefill).seconds;
  // Decode: as many 4k-token sequences as the batch and the KV cache allow.
  uint64_t fit = std::max<uint64_t>(1, c.kv_cache_tokens / kContext);
  uint32_t batch = static_cast<uint32_t>(std::min<uint64_t>(fit, s.engine.max_num_seqs));
  std::vector<SeqWork> decode(batch, SeqWork{1, kContext});
  c.decode_tokens_per_s = batch / RooflineStep(s.hw, decode).seconds;
  return c;
}

EndpointCapacity CapacityOf(const ServerSetup& s, double price_per_hour) {
  ServerCapacity c = EstimateCapacity(s);
  EndpointCapacity e;
  e.prefill_tokens_per_s = c.prefill_tokens_per_s;
  e.decode_tokens_per_s = c.decode_tokens_per_s;
  e.max_num_seqs = c.max_num_seqs;
  e.kv_cache_tokens = c.kv_cache_tokens;
  e.price_per_hour = price_per_hour;
  return e;
}

}  // namespace infergrid::engine_model
