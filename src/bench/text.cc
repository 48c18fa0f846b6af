#include "bench/text.h"

#include "common/hash.h"
#include "tokenizer/tokenizer.h"

namespace infergrid::bench {

void AppendSegmentText(uint64_t seed, uint32_t tokens, std::string* out) {
  constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;
  out->reserve(out->size() + tokens * 7);
  for (uint32_t i = 0; i < tokens; ++i) {
    *out += tokenizer::OutputWord(
        static_cast<uint32_t>(Mix64(seed + i * kGolden) % tokenizer::kOutputWords));
  }
}

}  // namespace infergrid::bench
