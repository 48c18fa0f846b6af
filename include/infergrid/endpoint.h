#pragma once
// What the scheduler knows about one model server at the moment of a decision. Built by the
// live gateway from its own accounting and scraped metrics, and by the planner from its
// simulated fleet. A plain value: no I/O, no locks.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace infergrid {

struct EndpointSnapshot {
  size_t index = 0;                  // position in the pool's endpoint list; stable per pool
  const std::string* url = nullptr;  // owned by the pool; valid for the call
  const std::map<std::string, std::string>* labels = nullptr;

  bool healthy = true;  // false: ejected or known down; the healthy filter drops it

  // The gateway's own accounting (always present).
  uint32_t in_flight = 0;                // requests sent and not yet finished
  uint64_t in_flight_prompt_tokens = 0;  // their estimated prompt tokens
  double ttft_ewma_seconds = 0;          // recent time to first token seen by the gateway

  // Scraped from the server's /metrics; meaningful only when metrics_fresh.
  bool metrics_fresh = false;
  double num_requests_running = 0;
  double num_requests_waiting = 0;
  double kv_cache_usage = 0;  // 0..1
};

}  // namespace infergrid
