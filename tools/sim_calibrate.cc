// sim_calibrate: runs the engine model in virtual time on published serving measurements
// and prints, for each, the published figure, the model's, and the error. The figures in
// docs/sim-model.md ("How close it is") come from this program:
//
//   build/release/sim_calibrate
//
// Each case is a closed loop: C clients each send a request (I prompt tokens, distinct, so
// nothing is served from the prefix cache; O output tokens), and the next as soon as one
// ends, as the benchmark tools that produced the figures do. Clients start spread over one
// request's unloaded latency (a load generator's clients drift apart; a synchronized start
// would queue every prefill at once), and the first round is not counted. Batch latency
// cases (rounds = 1) start together and are all counted, as vLLM's latency benchmark runs.

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "engine_model/engine.h"
#include "engine_model/profiles.h"
#include "engine_model/roofline.h"

using namespace infergrid::engine_model;

namespace {

struct Case {
  const char* name;
  const char* source;
  const char* model;
  const char* accel;
  uint32_t tp;
  Dtype dtype;
  uint32_t concurrency, input, output, rounds;
  // Published: mean end-to-end latency (ms), TTFT (ms), ITL (ms), output tokens/s; 0 = none.
  double e2e_ms, ttft_ms, itl_ms, tput;
};

struct Measured {
  double e2e_ms = 0, ttft_ms = 0, itl_ms = 0, tput = 0;
};

Measured Run(const Case& c, double stagger_s) {
  HardwareSetup hw;
  hw.accelerator = FindAccelerator(c.accel);
  hw.model = FindModel(c.model);
  hw.tp = c.tp;
  hw.dtype = c.dtype;
  hw.kv_bytes = c.dtype == Dtype::kFp8 ? 1 : 2;  // fp8 deployments keep an fp8 KV cache
  EngineConfig ec;
  ec.num_blocks = *KvCacheBlocks(hw, ec.block_size);
  ec.max_num_batched_tokens = 8192;
  ec.max_num_seqs = 1024;
  ec.max_model_len = c.input + c.output + 1;
  Engine e(ec, hw);
  uint32_t next_token = 1000;
  auto spec = [&] {
    RequestSpec s;
    for (uint32_t i = 0; i < c.input; ++i) s.prompt.push_back(next_token++);
    s.output.assign(c.output, 7);
    return s;
  };
  double now = 0;
  std::vector<double> starts;  // initial arrivals still to come, latest first
  for (uint32_t i = c.concurrency; i-- > 0;) starts.push_back(stagger_s * i / c.concurrency);
  const bool steady = c.rounds > 1;
  uint32_t left = c.concurrency * (c.rounds - 1);   // requests sent after a previous one ends
  const size_t ids = c.concurrency * c.rounds + 1;  // the engine numbers requests from 1
  std::vector<double> last_tok(ids, 0), first_arrival(ids, 0);
  std::vector<bool> counted(ids, !steady);
  double sum_e2e = 0, sum_ttft = 0, sum_itl = 0, t_begin = -1, t_end = 0;
  uint64_t done = 0, itl_n = 0, out_tokens = 0;
  for (;;) {
    while (!starts.empty() && starts.back() <= now) {
      starts.pop_back();
      e.Add(spec(), now);
    }
    auto d = e.BeginStep(now);
    if (!d) {
      if (starts.empty()) break;
      now = starts.back();
      continue;
    }
    now += *d;
    StepResult r = e.EndStep();
    for (const auto& t : r.tokens) {
      bool count = counted[t.request];
      if (count) {
        ++out_tokens;
        if (t_begin < 0) t_begin = r.start;
        t_end = t.time;
      }
      if (t.index == 0) {
        if (count) sum_ttft += t.time - t.arrival;
        first_arrival[t.request] = t.arrival;
      } else if (count) {
        sum_itl += t.time - last_tok[t.request];
        ++itl_n;
      }
      last_tok[t.request] = t.time;
      if (t.finished != FinishReason::kNone) {
        if (count) {
          sum_e2e += t.time - first_arrival[t.request];
          ++done;
        }
        if (left > 0) {
          --left;
          uint64_t id = e.Add(spec(), now);
          counted[id] = true;
        }
      }
    }
  }
  Measured m;
  m.e2e_ms = 1000 * sum_e2e / done;
  m.ttft_ms = 1000 * sum_ttft / done;
  m.itl_ms = itl_n ? 1000 * sum_itl / itl_n : 0;
  m.tput = t_end > t_begin ? out_tokens / (t_end - t_begin) : 0;
  return m;
}

void Row(const char* what, double published, double model) {
  if (published <= 0) return;
  std::printf("    %-22s published %9.2f   model %9.2f   error %+6.1f%%\n", what, published, model,
              100 * (model - published) / published);
}

}  // namespace

int main() {
  const std::vector<Case> cases = {
      // vLLM nightly benchmark, latency test: 32 in, 128 out, batch 8, bf16.
      {"vLLM latency_llama8B_tp1 (H100)", "vLLM nightly CI", "llama-3.1-8b", "h100", 1,
       Dtype::kBf16, 8, 32, 128, 1, 997.54, 0, 0, 0},
      {"vLLM latency_llama8B_tp1 (H200)", "vLLM nightly CI", "llama-3.1-8b", "h200", 1,
       Dtype::kBf16, 8, 32, 128, 1, 833.42, 0, 0, 0},
      {"vLLM latency_llama70B_tp4 (H100)", "vLLM nightly CI", "llama-3.1-70b", "h100", 4,
       Dtype::kBf16, 8, 32, 128, 1, 2444.47, 0, 0, 0},
      {"vLLM latency_llama70B_tp4 (H200)", "vLLM nightly CI", "llama-3.1-70b", "h200", 4,
       Dtype::kBf16, 8, 32, 128, 1, 2077.53, 0, 0, 0},
      // NVIDIA NIM 1.8.0 (TensorRT-LLM), Llama-3.3-70B, 2x H100 fp8, 5000 in / 500 out.
      {"NIM 70B fp8 tp2 H100, c=1", "NVIDIA NIM benchmarks", "llama-3.1-70b", "h100", 2,
       Dtype::kFp8, 1, 5000, 500, 3, 0, 406.77, 18.58, 51.67},
      {"NIM 70B fp8 tp2 H100, c=25", "NVIDIA NIM benchmarks", "llama-3.1-70b", "h100", 2,
       Dtype::kFp8, 25, 5000, 500, 8, 0, 688.69, 38.75, 623.4},
      {"NIM 70B fp8 tp2 H100, c=50", "NVIDIA NIM benchmarks", "llama-3.1-70b", "h100", 2,
       Dtype::kFp8, 50, 5000, 500, 8, 0, 834.51, 59.73, 814.37},
  };
  for (const Case& c : cases) {
    Case single = c;
    single.concurrency = 1;
    single.rounds = 1;
    double unloaded_s = Run(single, 0).e2e_ms / 1000;
    Measured m = Run(c, c.rounds > 1 ? unloaded_s : 0);
    std::printf("%s  [%s: %s, %s x%u, %u clients, %u in / %u out]\n", c.name, c.source, c.model,
                c.accel, c.tp, c.concurrency, c.input, c.output);
    Row("e2e latency (ms)", c.e2e_ms, m.e2e_ms);
    Row("TTFT (ms)", c.ttft_ms, m.ttft_ms);
    Row("ITL (ms)", c.itl_ms, m.itl_ms);
    Row("output tokens/s", c.tput, m.tput);
  }
  return 0;
}
