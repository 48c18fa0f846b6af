#include "engine_model/roofline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace infergrid::engine_model {

double HardwareSetup::peak_flops() const {
  return dtype == Dtype::kFp8 ? accelerator->fp8_flops : accelerator->bf16_flops;
}

double HardwareSetup::WeightBytes() const { return model->total_params * BytesPerParam(dtype); }

StepCost RooflineStep(const HardwareSetup& hw, std::span<const SeqWork> batch) {
  const ModelProfile& m = *hw.model;
  const double tp = std::max(hw.tp, 1u);
  const double attn = 4.0 * m.layers * m.heads * m.head_dim;
  const double kv_rank = m.KvBytesPerTokenPerRank(hw.tp, hw.kv_bytes);
  double tokens = 0, attn_flops = 0, kv_bytes = 0;
  for (const SeqWork& s : batch) {
    tokens += s.new_tokens;
    attn_flops += attn * s.new_tokens * (s.context_before + (s.new_tokens + 1) / 2.0);
    kv_bytes += kv_rank * (static_cast<double>(s.context_before) + s.new_tokens);
  }
  StepCost c;
  if (tokens == 0) return c;
  double weights_read =
      m.is_moe() ? std::min(m.total_params, m.active_params * tokens) : m.total_params;
  c.flops = 2.0 * m.active_params * tokens + attn_flops;
  c.bytes = weights_read * BytesPerParam(hw.dtype) / tp + kv_bytes;
  c.compute_s = c.flops / tp / (hw.peak_flops() * hw.compute_efficiency);
  c.memory_s = c.bytes / (hw.accelerator->hbm_bytes_per_s * hw.memory_efficiency);
  c.overhead_s = hw.step_overhead_s + (hw.tp > 1 ? 2.0 * m.layers * hw.allreduce_latency_s : 0);
  c.seconds = std::max(c.compute_s, c.memory_s) + c.overhead_s;
  return c;
}

Result<uint32_t> KvCacheBlocks(const HardwareSetup& hw, uint32_t block_size) {
  const double tp = std::max(hw.tp, 1u);
  double usable = hw.accelerator->hbm_bytes * hw.gpu_memory_utilization;
  double weights = hw.WeightBytes() / tp;
  double left = usable - weights - hw.reserved_bytes_per_rank;
  double per_block = hw.model->KvBytesPerTokenPerRank(hw.tp, hw.kv_bytes) * block_size;
  if (left < per_block) {
    return Status::Error(fmt::format(
        "{} does not fit on {} x{}: {:.1f} GB of weights and {:.1f} GB reserved per chip, "
        "{:.1f} GB usable (gpu_memory_utilization {:.2f}); raise --tp or use fp8",
        hw.model->name, hw.accelerator->name, hw.tp, weights / 1e9,
        hw.reserved_bytes_per_rank / 1e9, usable / 1e9, hw.gpu_memory_utilization));
  }
  return static_cast<uint32_t>(std::min(std::floor(left / per_block), 4e9));
}

}  // namespace infergrid::engine_model
