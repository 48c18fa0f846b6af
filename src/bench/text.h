#pragma once
// The bench's prompts: a workload segment (seed, length in tokens) as text. Each word is one
// token of infergrid's tokenizer (tokenizer::OutputWord: a leading space and at most 8
// letters), so a segment of n tokens is exactly n tokens at the simulator and the gateway,
// and equal seeds give equal text, hence equal KV blocks: the reuse structure the planner
// models survives the trip over HTTP. Against a real model's tokenizer a word is one or two
// tokens. Pure.

#include <cstdint>
#include <string>

namespace infergrid::bench {

// Appends `tokens` words drawn from `seed`.
void AppendSegmentText(uint64_t seed, uint32_t tokens, std::string* out);

}  // namespace infergrid::bench
