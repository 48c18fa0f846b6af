#pragma once
// Step time from a roofline of hardware and model: a step (prefill chunks and decode tokens
// batched together, as vLLM's v1 scheduler runs them) takes the larger of its compute time and
// its memory time, plus a fixed overhead:
//
//   flops   = 2 * active_params * tokens  +  sum over sequences of
//             4 * layers * heads * head_dim * new_tokens * (context_before + (new_tokens+1)/2)
//   bytes   = weights read / tp  +  sum over sequences of kv_bytes_per_rank * (context_before +
//             new_tokens)          (read the cached context, write the new tokens)
//   step    = max(flops / tp / (peak * compute_eff), bytes / (hbm_bw * memory_eff)) + overhead
//             + (tp > 1 ? 2 * layers * allreduce_latency : 0)
//
// Weights read: all of them for a dense model; for a mixture of experts, min(total, active *
// tokens) (each token routes to different experts, so a large batch touches them all).

#include <cstdint>
#include <span>

#include "common/result.h"
#include "engine_model/profiles.h"

namespace infergrid::engine_model {

struct HardwareSetup {
  const AcceleratorProfile* accelerator = nullptr;
  const ModelProfile* model = nullptr;
  uint32_t tp = 1;
  Dtype dtype = Dtype::kBf16;  // weights and matmuls
  double kv_bytes = 2;         // per KV-cache element: 2 (auto, bf16) or 1 (fp8)
  // Calibrated against published measurements in docs/sim-model.md.
  double compute_efficiency = 0.5;     // achieved / peak FLOP/s
  double memory_efficiency = 0.75;     // achieved / peak HBM bandwidth
  double step_overhead_s = 0.0015;     // per step: scheduling, launch, sampling
  double allreduce_latency_s = 20e-6;  // per tensor-parallel all-reduce (two per layer)
  double gpu_memory_utilization = 0.9;
  double reserved_bytes_per_rank = 2e9;  // activations, CUDA graphs, workspace

  double peak_flops() const;
  double WeightBytes() const;  // all ranks together
};

// One sequence's share of a step.
struct SeqWork {
  uint32_t new_tokens;      // tokens computed this step (a prefill chunk, or 1 to decode)
  uint32_t context_before;  // tokens already in its KV cache
};

struct StepCost {
  double flops = 0;  // all ranks together
  double bytes = 0;  // per rank
  double compute_s = 0;
  double memory_s = 0;
  double overhead_s = 0;  // fixed per step, and the all-reduces when tp > 1
  double seconds = 0;     // max(compute_s, memory_s) + overhead_s
};

StepCost RooflineStep(const HardwareSetup& hw, std::span<const SeqWork> batch);

// The KV blocks of `block_size` tokens that fit per rank after weights and the reserve, or an
// error naming the shortfall when the model does not fit.
Result<uint32_t> KvCacheBlocks(const HardwareSetup& hw, uint32_t block_size);

}  // namespace infergrid::engine_model
