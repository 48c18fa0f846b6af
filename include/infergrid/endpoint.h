#pragma once
// What the scheduler knows about one model server at the moment of a decision. Built by the
// live gateway from its own accounting and scraped metrics, and by the planner from its
// simulated fleet. A plain value: no I/O, no locks.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace infergrid {

// What a server can do, from its hardware profile (accelerator, model, tensor parallelism)
// and its price; zeros where unknown, and scorers then fall back to treating endpoints alike.
struct EndpointCapacity {
  double prefill_tokens_per_s = 0;  // prompt tokens per second, compute-bound
  double decode_tokens_per_s = 0;   // output tokens per second at a full decode batch
  uint32_t max_num_seqs = 0;        // requests it runs at once
  uint64_t kv_cache_tokens = 0;     // tokens its KV cache holds
  double price_per_hour = 0;        // accelerator-hours of the whole server, in config's unit
};

struct EndpointSnapshot {
  size_t index = 0;                  // position in the pool's endpoint list; stable per pool
  const std::string* url = nullptr;  // owned by the pool; valid for the call
  const std::map<std::string, std::string>* labels = nullptr;

  bool healthy = true;  // false: ejected or known down; the healthy filter drops it

  // The gateway's own accounting (always present).
  uint32_t in_flight = 0;                // requests sent and not yet finished
  uint64_t in_flight_prompt_tokens = 0;  // their estimated prompt tokens
  // Of those, requests not yet past their first token, and their prompt tokens: the prefill
  // work the server still has queued for us.
  uint32_t in_flight_prefilling = 0;
  uint64_t in_flight_prefill_tokens = 0;
  double ttft_ewma_seconds = 0;  // recent time to first token seen by the gateway

  // Scraped from the server's /metrics; meaningful only when metrics_fresh.
  bool metrics_fresh = false;
  double num_requests_running = 0;
  double num_requests_waiting = 0;
  double kv_cache_usage = 0;  // 0..1

  EndpointCapacity capacity;
};

}  // namespace infergrid
