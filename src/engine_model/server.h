#pragma once
// One model server as a whole: its hardware setup and its engine's configuration, built from
// the few choices an operator makes (accelerator, model, tensor parallelism, dtypes, vLLM's
// limits), with vLLM's defaults for the rest; and what such a server can do per second, from
// the roofline. Shared by the simulator, the planner's fleets and the gateway (which scores
// endpoints by capacity and price). Pure.

#include <cstdint>

#include "common/result.h"
#include "engine_model/engine.h"
#include "engine_model/profiles.h"
#include "engine_model/roofline.h"
#include "infergrid/endpoint.h"

namespace infergrid::engine_model {

struct ServerOptions {
  const AcceleratorProfile* accelerator = nullptr;  // required
  const ModelProfile* model = nullptr;              // required
  uint32_t tp = 1;
  Dtype dtype = Dtype::kBf16;
  double kv_bytes = 2;  // 1 for an fp8 KV cache
  double gpu_memory_utilization = 0.9;
  uint32_t block_size = 16;
  uint32_t num_gpu_blocks_override = 0;  // 0: from memory
  uint32_t max_num_seqs = 0;             // 0: vLLM's online-serving default for the device
  uint32_t max_num_batched_tokens = 0;   // 0: likewise
  uint32_t long_prefill_token_threshold = 0;
  uint32_t max_model_len = 0;  // 0: the model's, capped by what the KV cache holds
  bool enable_prefix_caching = true;
};

struct ServerSetup {
  HardwareSetup hw;
  EngineConfig engine;
};

// Fails when the model does not fit, or max_model_len exceeds the KV cache; the messages name
// vLLM's flags (--tp, --max-model-len) so callers can prefix their own context.
Result<ServerSetup> MakeServer(const ServerOptions& o);

// What a server sustains, from the roofline (the scheduler's unit of capacity, so different
// hardware compares fairly).
struct ServerCapacity {
  double prefill_tokens_per_s = 0;  // a full token budget of prefill at 4k tokens of context
  double decode_tokens_per_s = 0;   // a full decode batch (as many 4k-token sequences as fit)
  uint32_t max_num_seqs = 0;
  uint64_t kv_cache_tokens = 0;
};
ServerCapacity EstimateCapacity(const ServerSetup& s);

// The capacity the scheduler sees for such a server, with its price per hour.
EndpointCapacity CapacityOf(const ServerSetup& s, double price_per_hour);

}  // namespace infergrid::engine_model
