#include "engine_model/profiles.h"

#include <algorithm>

namespace infergrid::engine_model {

namespace {
constexpr double T = 1e12;
constexpr double G = 1e9;
constexpr double kGiB = 1024.0 * 1024 * 1024;  // Google and AWS state capacity in GiB
}  // namespace

// Sources for every figure: docs/sim-model.md, "Accelerator profiles".
const std::vector<AcceleratorProfile>& Accelerators() {
  static const std::vector<AcceleratorProfile> kAll = {
      {"h100", "NVIDIA H100 SXM", 989.4 * T, 1978.9 * T, 80 * G, 3.35 * T},
      {"h200", "NVIDIA H200 SXM", 989.4 * T, 1978.9 * T, 141 * G, 4.8 * T},
      {"b200", "NVIDIA B200 (HGX)", 2250 * T, 4500 * T, 180 * G, 7.7 * T},
      {"tpu-v6e", "Google TPU v6e (Trillium)", 918 * T, 918 * T, 32 * kGiB, 1.638 * T},
      {"tpu-v7", "Google TPU7x (Ironwood)", 2307 * T, 4614 * T, 192 * kGiB, 7.38 * T},
      {"trn2", "AWS Trainium2", 667 * T, 1299 * T, 96 * kGiB, 2.9 * T},
      {"trn3", "AWS Trainium3", 671 * T, 2517 * T, 144 * kGiB, 4.9 * T},
  };
  return kAll;
}

// Sources: each model's config.json on Hugging Face; docs/sim-model.md, "Model profiles".
const std::vector<ModelProfile>& Models() {
  static const std::vector<ModelProfile> kAll = {
      {"llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct", 32, 4096, 32, 8, 128, 0, 8.03 * G,
       8.03 * G, 131072},
      {"llama-3.1-70b", "meta-llama/Llama-3.1-70B-Instruct", 80, 8192, 64, 8, 128, 0, 70.55 * G,
       70.55 * G, 131072},
      {"qwen3-8b", "Qwen/Qwen3-8B", 36, 4096, 32, 8, 128, 0, 8.19 * G, 8.19 * G, 40960},
      {"qwen3-32b", "Qwen/Qwen3-32B", 64, 5120, 64, 8, 128, 0, 32.76 * G, 32.76 * G, 40960},
      // MLA: 128 heads with 192-dim q/k (128 nope + 64 rope); cached per token per layer:
      // kv_lora_rank 512 + qk_rope_head_dim 64.
      {"deepseek-v3", "deepseek-ai/DeepSeek-V3", 61, 7168, 128, 0, 192, 576, 671 * G, 37 * G,
       163840},
  };
  return kAll;
}

double ModelProfile::KvBytesPerToken(double kv_bytes) const {
  if (kv_heads == 0) return static_cast<double>(layers) * mla_kv_dim * kv_bytes;
  return 2.0 * layers * kv_heads * head_dim * kv_bytes;
}

double ModelProfile::KvBytesPerTokenPerRank(uint32_t tp, double kv_bytes) const {
  if (kv_heads == 0) return KvBytesPerToken(kv_bytes);
  uint32_t shards = std::min(std::max(tp, 1u), kv_heads);
  return KvBytesPerToken(kv_bytes) / shards;
}

std::optional<Dtype> ParseDtype(std::string_view s) {
  if (s == "bf16" || s == "bfloat16" || s == "auto") return Dtype::kBf16;
  if (s == "fp8") return Dtype::kFp8;
  return std::nullopt;
}

std::optional<double> ParseKvCacheBytes(std::string_view s) {
  if (s == "auto" || s == "bf16") return 2.0;
  if (s == "fp8") return 1.0;
  return std::nullopt;
}

const AcceleratorProfile* FindAccelerator(std::string_view name) {
  for (const auto& a : Accelerators()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

std::string AcceleratorNames() {
  std::string out;
  for (const auto& a : Accelerators()) out += (out.empty() ? "" : ", ") + a.name;
  return out;
}

std::string ModelNames() {
  std::string out;
  for (const auto& m : Models()) out += (out.empty() ? "" : ", ") + m.name;
  return out;
}

const ModelProfile* FindModel(std::string_view name) {
  for (const auto& m : Models()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

}  // namespace infergrid::engine_model
