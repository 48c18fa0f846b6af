#pragma once
// Hardware and model profiles for the roofline step-time model. Every figure is from a public
// specification; docs/sim-model.md cites each one.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace infergrid::engine_model {

struct AcceleratorProfile {
  std::string name;        // "h200"
  std::string display;     // "NVIDIA H200 SXM"
  double bf16_flops;       // peak dense bf16 FLOP/s per chip
  double fp8_flops;        // peak dense fp8 FLOP/s per chip
  double hbm_bytes;        // HBM capacity per chip
  double hbm_bytes_per_s;  // HBM bandwidth per chip
};

struct ModelProfile {
  std::string name;   // "llama-3.1-8b"
  std::string hf_id;  // "meta-llama/Llama-3.1-8B-Instruct"
  uint32_t layers;
  uint32_t hidden;
  uint32_t heads;           // query heads
  uint32_t kv_heads;        // 0 for multi-head latent attention (MLA)
  uint32_t head_dim;        // per-head q/k dimension used in attention FLOPs
  uint32_t mla_kv_dim = 0;  // MLA: latent + rope dims cached per token per layer
  double total_params;
  double active_params;  // per token (== total for dense models)
  uint32_t max_model_len;

  bool is_moe() const { return active_params < total_params; }
  // KV-cache bytes one token occupies across all layers, all tensor-parallel ranks together,
  // at `kv_bytes` bytes per element (2 for bf16).
  double KvBytesPerToken(double kv_bytes = 2) const;
  // The same on one of `tp` ranks: GQA heads are split over ranks (replicated once tp exceeds
  // the KV heads); MLA's latent cache is replicated on every rank, as vLLM does.
  double KvBytesPerTokenPerRank(uint32_t tp, double kv_bytes = 2) const;
};

enum class Dtype { kBf16, kFp8 };
std::optional<Dtype> ParseDtype(std::string_view s);
inline double BytesPerParam(Dtype d) { return d == Dtype::kFp8 ? 1.0 : 2.0; }
// Bytes per KV-cache element for vLLM's --kv-cache-dtype: auto or bf16 (2), fp8 (1).
std::optional<double> ParseKvCacheBytes(std::string_view s);

const std::vector<AcceleratorProfile>& Accelerators();
const std::vector<ModelProfile>& Models();
const AcceleratorProfile* FindAccelerator(std::string_view name);
// The profiles' names, comma-separated, for help texts and errors.
std::string AcceleratorNames();
std::string ModelNames();
const ModelProfile* FindModel(std::string_view name);

}  // namespace infergrid::engine_model
