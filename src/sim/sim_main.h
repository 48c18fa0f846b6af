#pragma once
// `infergrid sim`: N simulated vLLM servers in one process (docs/sim-model.md).

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace infergrid::sim {

struct SimFlags {
  std::string host = "0.0.0.0";
  uint16_t port = 8000;
  uint32_t replicas = 1;
  uint32_t threads = 0;  // 0: min(replicas, cores)
  std::vector<std::string> served_model_names;
  std::string model_profile = "llama-3.1-8b";
  std::string accelerator = "h200";
  uint32_t tp = 1;
  std::string dtype = "bf16";
  std::string kv_cache_dtype = "auto";
  double time_scale = 1;
  uint64_t seed = 0;
  double gpu_memory_utilization = 0.9;
  uint32_t block_size = 16;
  uint32_t num_gpu_blocks_override = 0;
  uint32_t max_num_seqs = 0;            // 0: vLLM's default for the device
  uint32_t max_num_batched_tokens = 0;  // 0: vLLM's default for the device
  uint32_t max_model_len = 0;           // 0: the model's, capped by the KV cache
  uint32_t long_prefill_token_threshold = 0;
  bool no_prefix_caching = false;
  double compute_efficiency = 0;  // 0: the roofline's calibrated defaults
  double memory_efficiency = 0;
  double step_overhead_ms = -1;
  std::string output_len = "none";
  bool prompt_tokens_details = false;
  double error_rate = 0, added_latency_ms = 0, stall_rate = 0, stall_ms = 0, slow_start_s = 0;
  int64_t crash_after = -1;
  std::string kv_events_endpoint;  // enables publishing; replica i binds port + i
  std::string kv_events_topic;
  std::string kv_events_format = "array";
  std::string kv_events_config;  // vLLM's --kv-events-config JSON, as an alternative
};

void AddSimFlags(CLI::App* cmd, SimFlags* f);
int RunSim(const SimFlags& f);

}  // namespace infergrid::sim
