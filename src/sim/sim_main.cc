#include "sim/sim_main.h"

#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>
#include <zmq.hpp>

#include "common/host_port.h"
#include "common/log.h"
#include "common/signals.h"
#include "engine_model/profiles.h"
#include "engine_model/server.h"
#include "sim/replica.h"

namespace infergrid::sim {

namespace asio = http::asio;

using engine_model::FindAccelerator;
using engine_model::FindModel;

namespace {

std::string Names(bool models) {
  return models ? engine_model::ModelNames() : engine_model::AcceleratorNames();
}

// "tcp://*:5557" with replica i -> "tcp://*:(5557+i)", as vLLM offsets by data-parallel rank.
Result<std::string> OffsetEndpoint(const std::string& ep, uint32_t i) {
  if (i == 0) return ep;
  auto colon = ep.rfind(':');
  if (colon == std::string::npos || !ep.starts_with("tcp://")) {
    return Status::Error("--kv-events-endpoint: with --replicas > 1 it must be tcp://HOST:PORT");
  }
  int port = std::atoi(ep.c_str() + colon + 1);
  if (port <= 0) return Status::Error("--kv-events-endpoint: no port in " + ep);
  return fmt::format("{}:{}", ep.substr(0, colon), port + static_cast<int>(i));
}

Result<std::vector<ReplicaOptions>> Build(SimFlags f) {
  const auto* accel = FindAccelerator(f.accelerator);
  if (!accel)
    return Status::Error("--accelerator: unknown '" + f.accelerator + "' (one of " + Names(false) +
                         ")");
  const auto* model = FindModel(f.model_profile);
  if (!model)
    return Status::Error("--model-profile: unknown '" + f.model_profile + "' (one of " +
                         Names(true) + ")");
  auto dtype = engine_model::ParseDtype(f.dtype);
  if (!dtype) return Status::Error("--dtype: expected bf16 or fp8, got '" + f.dtype + "'");
  auto kv_bytes = engine_model::ParseKvCacheBytes(f.kv_cache_dtype);
  if (!kv_bytes) {
    return Status::Error("--kv-cache-dtype: expected auto, bf16 or fp8, got '" + f.kv_cache_dtype +
                         "'");
  }
  if (f.tp == 0) return Status::Error("--tp: must be at least 1");
  if (f.replicas == 0 || f.replicas > 1024) return Status::Error("--replicas: expected 1..1024");
  if (!(f.time_scale > 0)) return Status::Error("--time-scale: must be > 0");
  if (f.block_size == 0 || f.block_size > 1024)
    return Status::Error("--block-size: expected 1..1024");
  if (f.gpu_memory_utilization <= 0 || f.gpu_memory_utilization > 1) {
    return Status::Error("--gpu-memory-utilization: expected (0, 1]");
  }
  if (f.error_rate < 0 || f.error_rate > 1 || f.stall_rate < 0 || f.stall_rate > 1) {
    return Status::Error("--error-rate and --stall-rate are fractions in [0, 1]");
  }
  auto out_len = OutputLength::Parse(f.output_len);
  if (!out_len.ok()) return out_len.status();

  if (!f.kv_events_config.empty()) {
    auto j = nlohmann::json::parse(f.kv_events_config, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return Status::Error("--kv-events-config: expected a JSON object");
    if (j.value("enable_kv_cache_events", false) &&
        j.value("publisher", std::string("zmq")) == "zmq") {
      f.kv_events_endpoint = j.value("endpoint", std::string("tcp://*:5557"));
      f.kv_events_topic = j.value("topic", std::string());
    }
  }
  KvEventFormat kv_format;
  if (f.kv_events_format == "array") {
    kv_format = KvEventFormat::kArray;
  } else if (f.kv_events_format == "map") {
    kv_format = KvEventFormat::kMap;
  } else {
    return Status::Error("--kv-events-format: expected array or map");
  }

  engine_model::ServerOptions so;
  so.accelerator = accel;
  so.model = model;
  so.tp = f.tp;
  so.dtype = *dtype;
  so.kv_bytes = *kv_bytes;
  so.gpu_memory_utilization = f.gpu_memory_utilization;
  so.block_size = f.block_size;
  so.num_gpu_blocks_override = f.num_gpu_blocks_override;
  so.max_num_seqs = f.max_num_seqs;
  so.max_num_batched_tokens = f.max_num_batched_tokens;
  so.long_prefill_token_threshold = f.long_prefill_token_threshold;
  so.max_model_len = f.max_model_len;
  so.enable_prefix_caching = !f.no_prefix_caching;
  IG_ASSIGN_OR_RETURN(engine_model::ServerSetup setup, engine_model::MakeServer(so));
  engine_model::HardwareSetup hw = setup.hw;
  if (f.compute_efficiency > 0) hw.compute_efficiency = f.compute_efficiency;
  if (f.memory_efficiency > 0) hw.memory_efficiency = f.memory_efficiency;
  if (f.step_overhead_ms >= 0) hw.step_overhead_s = f.step_overhead_ms / 1000;
  const engine_model::EngineConfig& ec = setup.engine;

  std::vector<ReplicaOptions> out;
  for (uint32_t i = 0; i < f.replicas; ++i) {
    ReplicaOptions o;
    o.host = f.host;
    o.port = f.port == 0 ? 0 : static_cast<uint16_t>(f.port + i);
    o.index = i;
    o.served_names =
        f.served_model_names.empty() ? std::vector<std::string>{model->name} : f.served_model_names;
    o.root = model->hf_id;
    o.engine = ec;
    o.hw = hw;
    o.seed = f.seed;
    o.output_length = *out_len;
    o.prompt_tokens_details = f.prompt_tokens_details;
    o.faults.error_rate = f.error_rate;
    o.faults.added_latency_s = f.added_latency_ms / 1000;
    o.faults.stall_rate = f.stall_rate;
    o.faults.stall_s = f.stall_ms / 1000;
    o.faults.crash_after = f.crash_after;
    o.faults.slow_start_s = f.slow_start_s;
    if (!f.kv_events_endpoint.empty()) {
      IG_ASSIGN_OR_RETURN(auto ep, OffsetEndpoint(f.kv_events_endpoint, i));
      o.kv_events_endpoint = ep;
      o.kv_events_topic = f.kv_events_topic;
      o.kv_events_format = kv_format;
    }
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace

void AddSimFlags(CLI::App* c, SimFlags* f) {
  c->add_option("--host", f->host, "Address to listen on (default 0.0.0.0)");
  c->add_option("--port", f->port, "Port of replica 0; replica i listens on port+i (0: any)");
  c->add_option("--replicas", f->replicas, "Independent servers in this process (default 1)");
  c->add_option("--threads", f->threads, "Threads serving them (default: min(replicas, cores))");
  c->add_option("--served-model-name", f->served_model_names,
                "Model name(s) served (repeatable; default: the profile's name)");
  c->add_option("--model-profile", f->model_profile, "Model profile: " + Names(true));
  c->add_option("--accelerator", f->accelerator, "Accelerator profile: " + Names(false));
  c->add_option("--tp", f->tp, "Tensor-parallel degree (default 1)");
  c->add_option("--dtype", f->dtype, "Weights and matmuls: bf16 (default) or fp8");
  c->add_option("--kv-cache-dtype", f->kv_cache_dtype, "KV cache: auto (bf16, default) or fp8");
  c->add_option("--time-scale", f->time_scale, "Model seconds per wall second (default 1)");
  c->add_option("--seed", f->seed, "Seed for output text and faults (default 0)");
  c->add_option("--gpu-memory-utilization", f->gpu_memory_utilization, "Default 0.9");
  c->add_option("--block-size", f->block_size, "Tokens per KV block (default 16)");
  c->add_option("--num-gpu-blocks-override", f->num_gpu_blocks_override,
                "KV blocks, instead of computing them from the profiles");
  c->add_option("--max-num-seqs", f->max_num_seqs, "Default: vLLM's for the device");
  c->add_option("--max-num-batched-tokens", f->max_num_batched_tokens,
                "Default: vLLM's for the device");
  c->add_option("--max-model-len", f->max_model_len, "Default: the model's, within the KV cache");
  c->add_option("--long-prefill-token-threshold", f->long_prefill_token_threshold,
                "Default 0 (off)");
  c->add_flag("--no-enable-prefix-caching", f->no_prefix_caching, "Turn prefix caching off");
  c->add_option("--compute-efficiency", f->compute_efficiency,
                "Achieved/peak FLOP/s (default 0.5)");
  c->add_option("--memory-efficiency", f->memory_efficiency,
                "Achieved/peak HBM bandwidth (default 0.75)");
  c->add_option("--step-overhead-ms", f->step_overhead_ms, "Fixed cost per step (default 1.5)");
  c->add_option(
      "--output-len", f->output_len,
      "Output lengths: none (max_tokens; 256 if absent), N, uniform:MIN:MAX, normal:MEAN:STD");
  c->add_flag("--enable-prompt-tokens-details", f->prompt_tokens_details,
              "Report usage.prompt_tokens_details.cached_tokens");
  c->add_option("--error-rate", f->error_rate, "Fault: share of completions answered 500");
  c->add_option("--added-latency-ms", f->added_latency_ms, "Fault: delay before the engine");
  c->add_option("--stall-rate", f->stall_rate, "Fault: share of engine steps that stall");
  c->add_option("--stall-ms", f->stall_ms, "Fault: length of a stall");
  c->add_option("--crash-after", f->crash_after, "Fault: crash after N completions");
  c->add_option("--slow-start-s", f->slow_start_s, "Fault: answer 503 for this long after start");
  c->add_option("--kv-events-endpoint", f->kv_events_endpoint,
                "Publish KV-cache events on this ZMQ PUB endpoint (tcp://*:5557); replica i "
                "binds port+i");
  c->add_option("--kv-events-topic", f->kv_events_topic, "ZMQ topic (default empty)");
  c->add_option("--kv-events-format", f->kv_events_format, "array (default) or map");
  c->add_option("--kv-events-config", f->kv_events_config, "vLLM's KVEventsConfig JSON");
}

int RunSim(const SimFlags& flags) {
  auto built = Build(flags);
  if (!built.ok()) {
    std::cerr << "error: " << built.status().message() << "\n";
    return 2;
  }
  sigset_t set = BlockStopSignals();
  uint32_t threads =
      flags.threads
          ? flags.threads
          : std::min<uint32_t>(flags.replicas, std::max(1u, std::thread::hardware_concurrency()));
  SimClock clock(flags.time_scale);
  zmq::context_t zctx(1);
  std::vector<std::unique_ptr<asio::io_context>> ios;
  for (uint32_t t = 0; t < threads; ++t) ios.push_back(std::make_unique<asio::io_context>(1));
  std::vector<std::unique_ptr<Replica>> replicas;
  for (auto& o : *built) {
    size_t t = o.index % threads;
    replicas.push_back(std::make_unique<Replica>(*ios[t], clock, std::move(o), &zctx));
    Status s = replicas.back()->Start();
    if (!s.ok()) {
      std::cerr << "error: replica " << replicas.size() - 1 << ": " << s.message() << "\n";
      for (auto& r : replicas) r->Shutdown();
      return 1;
    }
  }
  const auto& e = replicas[0]->engine().config();
  const auto& hw = replicas[0]->engine().hardware();
  log::Info(
      "{} x {} on {} (tp {}, {}): {} KV blocks of {} tokens, max_model_len {}, "
      "max_num_seqs {}, max_num_batched_tokens {}, time scale {}",
      flags.replicas, hw.model->name, hw.accelerator->name, hw.tp, flags.dtype, e.num_blocks,
      e.block_size, e.max_model_len, e.max_num_seqs, e.max_num_batched_tokens, flags.time_scale);
  for (size_t i = 0; i < replicas.size(); ++i) {
    std::printf("replica %zu listening on port %u\n", i, replicas[i]->port());
  }
  std::fflush(stdout);
  std::vector<std::thread> workers;
  for (auto& io : ios) {
    workers.emplace_back([&io] {
      auto guard = asio::make_work_guard(*io);
      io->run();
    });
  }
  int sig = WaitForStopSignal(set);
  log::Info("signal {}: stopping", sig);
  for (auto& io : ios) io->stop();
  for (auto& w : workers) w.join();
  for (auto& r : replicas) r->Shutdown();
  ios.clear();  // destroys suspended handlers, which still reach their replicas
  replicas.clear();
  return 0;
}

}  // namespace infergrid::sim
