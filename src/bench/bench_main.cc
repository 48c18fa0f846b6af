#include "bench/bench_main.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "bench/driver.h"
#include "bench/fleet_probe.h"
#include "bench/gateways.h"
#include "bench/process.h"
#include "bench/report.h"
#include "bench/report_html.h"
#include "bench/trace.h"
#include "common/signals.h"
#include "common/strings.h"
#include "http/url.h"
#include "plan/fleet.h"
#include "plan/simulator.h"
#include "workload/workload.h"

namespace infergrid::bench {

using json = nlohmann::json;
namespace fs = std::filesystem;

void AddBenchFlags(CLI::App* c, BenchFlags* f) {
  c->add_option("--workload", f->workload, "A Workload file (the planner's: clients and turns)");
  c->add_option("--trace", f->trace,
                "A trace to replay, open loop: the bench's own or Mooncake-format (docs/bench.md)");
  c->add_option("--trace-block-size", f->trace_block_size,
                "Tokens per hash id of a Mooncake-format trace (default 512)");
  c->add_option("--fleet", f->fleet,
                "A Fleet file: the bench starts it as simulated servers (infergrid sim)");
  c->add_option("--endpoint", f->endpoints,
                "A model server already running, http://HOST:PORT (repeatable; instead of "
                "--fleet)");
  c->add_option("--model", f->model, "The model name to request (default: the fleet's model)");
  std::string names;
  for (const auto& n : BuiltinGatewayNames()) names += (names.empty() ? "" : ",") + n;
  c->add_option("--gateways", f->gateways,
                "Comma-separated gateways to compare (default: all of " + names +
                    "; none: only those of --gateway-url)");
  c->add_option("--gateway-url", f->gateway_urls,
                "Also a gateway you run: NAME=http://HOST:PORT (repeatable)");
  c->add_option("--time-scale", f->time_scale,
                "Fleet seconds per wall second (the simulator's --time-scale; default 1). "
                "Reported times are the fleet's.");
  c->add_option("--duration", f->duration_s, "Override the workload's duration (fleet seconds)");
  c->add_option("--warmup", f->warmup_s, "Override the workload's warmup (fleet seconds)");
  c->add_option("--requests", f->requests, "Stop sending after this many requests per gateway");
  c->add_option("--api", f->api, "chat (default) or completions");
  c->add_flag("--no-stream", f->no_stream, "Plain JSON replies instead of streaming");
  c->add_flag("--connection-per-request", f->connection_per_request,
              "Open a new connection for every request (default: one keep-alive connection per "
              "client); spreads a client's turns over gateway replicas sharing a port");
  c->add_option("--out", f->out,
                "Directory for report.json, report.html and logs (default "
                "bench-results/<time>)");
  c->add_option("--record", f->record, "Write what the first gateway's run sent, as a trace");
  c->add_option("--from-json", f->from_json,
                "Show a saved report.json again (with --html, render its page)");
  c->add_option("--html", f->html, "With --from-json: write the HTML report here");
  c->add_flag("--no-predict", f->no_predict, "Skip the planner's prediction for the same set-up");
  c->add_option("--drain-limit", f->drain_limit_s,
                "Fleet seconds after the duration to let requests finish (default 300)");
  c->add_option("--request-timeout", f->request_timeout_s,
                "Fleet seconds before a request is abandoned (default 600)");
  c->add_flag("--progress", f->progress, "A live progress line even when not on a terminal");
  c->add_flag("--no-progress", f->no_progress, "No live progress line");
}

namespace {

std::atomic<bool> g_interrupted{false};

template <typename T>
T RunAsync(http::awaitable<T> a) {
  http::asio::io_context io(1);
  std::optional<T> out;
  http::asio::co_spawn(io, std::move(a), [&](std::exception_ptr, T v) { out = std::move(v); });
  io.run();
  return std::move(*out);
}

Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return Status::Error(path + ": cannot write");
  return Status::Ok();
}

std::string UtcNow(const char* format) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

Result<ServerUrl> ParseEndpoint(const std::string& url) {
  auto hp = http::ParseHttpUrl(url);
  if (!hp.ok() || hp->port == 0) {
    return Status::Error(fmt::format("--endpoint '{}': expected http://HOST:PORT", url));
  }
  return ServerUrl{hp->host, hp->port};
}

// The hardware of a simulated server, for infergrid's config and the sim's flags.
std::string HardwareYaml(const plan::ServerGroup& g) {
  const auto& o = g.options;
  // Everything that sizes its KV cache and batch, so the gateway's KV reservation (flow
  // control) and its scorers see the servers as they are.
  std::string y = fmt::format(
      "{{accelerator: {}, model: {}, tp: {}, dtype: {}, kvCacheDtype: {}, "
      "gpuMemoryUtilization: {}, blockSize: {}, pricePerHour: {}",
      o.accelerator->name, o.model->name, o.tp,
      o.dtype == engine_model::Dtype::kFp8 ? "fp8" : "bf16", o.kv_bytes == 1 ? "fp8" : "auto",
      o.gpu_memory_utilization, o.block_size, g.price_per_hour);
  if (o.max_num_seqs > 0) y += fmt::format(", maxNumSeqs: {}", o.max_num_seqs);
  if (o.max_num_batched_tokens > 0)
    y += fmt::format(", maxNumBatchedTokens: {}", o.max_num_batched_tokens);
  if (o.num_gpu_blocks_override > 0)
    y += fmt::format(", kvCacheTokens: {}", uint64_t{o.num_gpu_blocks_override} * o.block_size);
  return y + "}";
}

std::vector<std::string> SimArgs(const std::string& self, const plan::ServerGroup& g,
                                 const std::string& model, double time_scale) {
  const auto& o = g.options;
  std::vector<std::string> a = {self,
                                "sim",
                                "--host",
                                "127.0.0.1",
                                "--port",
                                "0",
                                "--replicas",
                                std::to_string(g.count),
                                "--served-model-name",
                                model,
                                "--model-profile",
                                o.model->name,
                                "--accelerator",
                                o.accelerator->name,
                                "--tp",
                                std::to_string(o.tp),
                                "--dtype",
                                o.dtype == engine_model::Dtype::kFp8 ? "fp8" : "bf16",
                                "--kv-cache-dtype",
                                o.kv_bytes == 1 ? "fp8" : "auto",
                                "--gpu-memory-utilization",
                                fmt::format("{}", o.gpu_memory_utilization),
                                "--block-size",
                                std::to_string(o.block_size),
                                "--time-scale",
                                fmt::format("{}", time_scale),
                                "--enable-prompt-tokens-details"};
  auto opt = [&a](const char* flag, uint32_t v) {
    if (v == 0) return;
    a.push_back(flag);
    a.push_back(std::to_string(v));
  };
  opt("--num-gpu-blocks-override", o.num_gpu_blocks_override);
  opt("--max-num-seqs", o.max_num_seqs);
  opt("--max-num-batched-tokens", o.max_num_batched_tokens);
  opt("--max-model-len", o.max_model_len);
  opt("--long-prefill-token-threshold", o.long_prefill_token_threshold);
  if (!o.enable_prefix_caching) a.push_back("--no-enable-prefix-caching");
  return a;
}

std::string SelfPath() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "infergrid" : p.string();
}

void PrintProgress(const std::string& name, const DriverOptions::Progress& p) {
  std::fprintf(stderr,
               "\r  %-22s %5.0f/%.0f s  %6llu done  %5.1f req/s  p90 TTFT %6.3f s  %llu in flight"
               "  %llu failed   ",
               name.c_str(), p.t, p.duration, static_cast<unsigned long long>(p.done),
               p.requests_per_s, p.ttft_p90, static_cast<unsigned long long>(p.in_flight),
               static_cast<unsigned long long>(p.failed));
  std::fflush(stderr);
}

int FromJson(const BenchFlags& f) {
  std::ifstream in(f.from_json);
  if (!in) {
    std::cerr << "error: " << f.from_json << ": cannot open\n";
    return 2;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  json report = json::parse(ss.str(), nullptr, false);
  if (report.is_discarded() || !report.is_object() || !report.contains("runs")) {
    std::cerr << "error: " << f.from_json << ": not a report of infergrid bench\n";
    return 2;
  }
  std::cout << ReportTable(report);
  if (!f.html.empty()) {
    Status s = WriteText(f.html, RenderHtml(report));
    if (!s.ok()) {
      std::cerr << "error: " << s.message() << "\n";
      return 2;
    }
    std::cout << "report: " << f.html << "\n";
  }
  return 0;
}

}  // namespace

int RunBench(const BenchFlags& f) {
  if (!f.from_json.empty()) return FromJson(f);
  auto usage = [](const std::string& m) {
    std::cerr << "error: " << m << "\n";
    return 2;
  };
  if (f.workload.empty() == f.trace.empty()) return usage("give one of --workload and --trace");
  if (f.fleet.empty() == f.endpoints.empty()) {
    return usage("give one of --fleet (a simulated fleet) and --endpoint (servers running)");
  }
  if (!(f.time_scale > 0)) return usage("--time-scale must be > 0");
  if (f.api != "chat" && f.api != "completions") return usage("--api: chat or completions");
  if (!f.html.empty()) return usage("--html goes with --from-json (a run writes its own)");

  // What to send.
  std::optional<workload::WorkloadSpec> workload;
  double duration = f.duration_s, warmup = f.warmup_s;
  std::string workload_name;
  if (!f.workload.empty()) {
    auto w = workload::LoadWorkloadFile(f.workload);
    if (!w.ok()) return usage(w.status().message());
    workload = std::move(*w);
    if (duration > 0) workload->duration_s = duration;
    if (warmup >= 0) workload->warmup_s = warmup;
    if (workload->warmup_s >= workload->duration_s) {
      return usage("the warmup must be shorter than the duration");
    }
    duration = workload->duration_s;
    warmup = workload->warmup_s;
    workload_name = workload->name;
  } else {
    auto info = ScanTrace(f.trace, f.trace_block_size);
    if (!info.ok()) return usage(info.status().message());
    if (duration <= 0) duration = info->last_t + 1e-6;
    if (warmup < 0) warmup = 0;
    if (warmup >= duration) return usage("the warmup must be shorter than the duration");
    workload_name = f.trace;
  }

  // The fleet.
  Processes procs;
  std::vector<Upstream> upstreams;
  std::string model = f.model, fleet_name, fleet_description;
  std::optional<plan::Fleet> fleet;
  const std::string self = SelfPath();
  const std::string out = f.out.empty() ? "bench-results/" + UtcNow("%Y%m%d-%H%M%S") : f.out;
  std::error_code ec;
  fs::create_directories(out + "/logs", ec);
  if (ec) return usage(fmt::format("{}: cannot create: {}", out, ec.message()));
  const std::string logs = fs::absolute(out + "/logs").string();

  // A shell starts a background job with SIGINT ignored; the bench wants it (to stop in order).
  signal(SIGINT, SIG_DFL);
  sigset_t set = BlockStopSignals();
  std::thread([set] {
    int n = 0;
    while (true) {
      int sig = WaitForStopSignal(set);
      if (++n == 1) {
        g_interrupted = true;
        std::fprintf(stderr,
                     "\ninterrupted (signal %d): stopping the load, the gateways and the "
                     "fleet; again to quit at once\n",
                     sig);
      } else {
        _exit(130);  // the children follow (PR_SET_PDEATHSIG)
      }
    }
  }).detach();

  if (!f.fleet.empty()) {
    auto spec = plan::LoadFleetFile(f.fleet);
    if (!spec.ok()) return usage(spec.status().message());
    auto built = plan::BuildFleet(*spec);
    if (!built.ok()) return usage(f.fleet + ": " + built.status().message());
    fleet = std::move(*built);
    fleet_name = spec->name;
    if (model.empty()) model = spec->groups[0].options.model->hf_id;
    std::cerr << "starting the fleet (infergrid sim, time scale " << f.time_scale << "):\n";
    for (size_t g = 0; g < spec->groups.size(); ++g) {
      const auto& grp = spec->groups[g];
      fleet_description +=
          fmt::format("{}{} x {} {} tp{}", fleet_description.empty() ? "" : " + ", grp.count,
                      grp.options.accelerator->name, grp.options.model->name, grp.options.tp);
      std::string name = fmt::format("fleet-{}", grp.name);
      auto id = procs.Start(name, SimArgs(self, grp, model, f.time_scale), logs + "/" + name);
      if (!id.ok()) return usage(id.status().message());
      auto ports = procs.WaitForPorts(*id, grp.count, std::chrono::seconds(60));
      if (!ports.ok()) return usage(ports.status().message());
      for (uint16_t p : *ports) upstreams.push_back({"127.0.0.1", p, HardwareYaml(grp)});
      std::cerr << "  " << grp.count << " x " << grp.name << " on ports " << (*ports)[0] << "..."
                << ports->back() << "\n";
    }
  } else {
    if (model.empty()) return usage("--model is required with --endpoint");
    for (const auto& e : f.endpoints) {
      auto u = ParseEndpoint(e);
      if (!u.ok()) return usage(u.status().message());
      upstreams.push_back({u->host, u->port, ""});
    }
    fleet_name = "endpoints";
    fleet_description = fmt::format("{} servers given by --endpoint", upstreams.size());
  }
  std::vector<ServerUrl> servers;
  for (const auto& u : upstreams) servers.push_back({u.host, u.port});
  FleetProbe probe(servers);

  // The gateways.
  std::vector<GatewaySpec> gateways;
  {
    std::vector<std::string> names;
    if (f.gateways.empty()) {
      names = BuiltinGatewayNames();
    } else if (f.gateways != "none") {  // none: only the --gateway-url ones
      for (auto n : Split(f.gateways, ',')) {
        if (!n.empty()) names.emplace_back(n);
      }
    }
    for (const auto& n : names) {
      auto g = BuiltinGateway(n);
      if (!g.ok()) return usage("--gateways: " + g.status().message());
      // Missing programs are found before anything starts.
      if (std::string program = ProgramOf(g->kind); !program.empty()) {
        auto p = FindProgram(program);
        if (!p.ok()) return usage(p.status().message());
      }
      gateways.push_back(std::move(*g));
    }
    for (const auto& u : f.gateway_urls) {
      auto g = ExternalGateway(u);
      if (!g.ok()) return usage(g.status().message());
      gateways.push_back(std::move(*g));
    }
    if (gateways.empty()) return usage("no gateways to compare");
  }
  const int scrape_ms = std::max(20, static_cast<int>(100 / f.time_scale + 0.5));

  json report{{"kind", "infergrid-bench"},
              {"version", 1},
              {"started_at", UtcNow("%Y-%m-%dT%H:%M:%SZ")},
              {"workload",
               {{"name", workload_name},
                {"source", workload ? f.workload : f.trace},
                {"seed", workload ? workload->seed : 0},
                {"duration_s", duration},
                {"warmup_s", warmup},
                {"time_scale", f.time_scale},
                {"api", f.api},
                {"stream", !f.no_stream},
                {"requests_limit", f.requests}}},
              {"fleet",
               {{"name", fleet_name},
                {"description", fleet_description},
                {"servers", upstreams.size()},
                {"model", model}}},
              {"runs", json::array()},
              {"planner", nullptr}};

  // The planner's prediction for the same fleet, workload and seed.
  if (fleet && workload && !f.no_predict && f.requests == 0) {
    json policy_of = json::object(), reports = json::array();
    std::set<std::string> done;
    for (const auto& g : gateways) {
      if (g.planner_policy.empty()) continue;
      policy_of[g.name] = g.planner_policy;
      if (!done.insert(g.planner_policy).second) continue;
      plan::SimOptions so;
      so.scrape_interval_s = scrape_ms / 1000.0 * f.time_scale;
      so.drain_limit_s = f.drain_limit_s;
      auto r = plan::Simulate(*fleet, *workload, g.planner_policy, so, nullptr);
      if (!r.ok()) return usage(r.status().message());
      reports.push_back({{"policy", r->policy},
                         {"requests", r->requests},
                         {"ttft_p50", r->ttft_p50},
                         {"ttft_p90", r->ttft_p90},
                         {"ttft_p99", r->ttft_p99},
                         {"itl_p50", r->itl_p50},
                         {"prefix_hit_rate", r->prefix_hit_rate},
                         {"preemptions", r->preemptions},
                         {"output_tokens_per_min", r->output_tokens_per_min}});
    }
    if (!reports.empty()) report["planner"] = {{"policy_of", policy_of}, {"reports", reports}};
  }

  const bool show_progress = !f.no_progress && (f.progress || isatty(2));
  bool any_failed = false;
  for (size_t gi = 0; gi < gateways.size() && !g_interrupted; ++gi) {
    const GatewaySpec& g = gateways[gi];
    std::cerr << fmt::format("== {} ({})\n", g.name, g.description);
    Status reset = RunAsync(probe.ResetCaches(60));
    if (!reset.ok())
      std::cerr << "  warning: the fleet's caches were not reset: " << reset.message() << "\n";
    size_t id = SIZE_MAX;
    uint16_t port = g.port;
    std::string host = g.host;
    if (g.kind != GatewayKind::kExternal) {
      auto p = LaunchGateway(&procs, g, self, model, upstreams, scrape_ms, logs, &id);
      if (!p.ok()) {
        std::cerr << "  did not start: " << p.status().message() << "\n";
        report["runs"].push_back(RunJson(g, nullptr, p.status().message()));
        any_failed = true;
        continue;
      }
      port = *p;
    }
    DriverOptions o;
    o.host = host;
    o.port = port;
    o.model = model;
    o.chat = f.api == "chat";
    o.stream = !f.no_stream;
    o.connection_per_request = f.connection_per_request;
    o.time_scale = f.time_scale;
    o.duration_s = duration;
    o.warmup_s = warmup;
    o.max_requests = f.requests;
    o.drain_limit_s = f.drain_limit_s;
    o.request_timeout_s = f.request_timeout_s;
    o.workload = workload ? &*workload : nullptr;
    o.trace_path = f.trace;
    o.trace_block_size = f.trace_block_size;
    if (gi == 0) o.record_path = f.record;
    o.fleet = &probe;
    o.interrupted = &g_interrupted;
    if (show_progress) {
      o.progress = [&g](const DriverOptions::Progress& p) { PrintProgress(g.name, p); };
    }
    auto r = RunLoad(o);
    if (show_progress) std::fprintf(stderr, "\n");
    if (id != SIZE_MAX) procs.Stop(id);
    if (!r.ok()) {
      std::cerr << "  failed: " << r.status().message() << "\n";
      report["runs"].push_back(RunJson(g, nullptr, r.status().message()));
      any_failed = true;
      continue;
    }
    std::cerr << fmt::format("  {} requests measured, {} failed, in {:.0f} s\n", r->completed,
                             r->failed, r->wall_s);
    if (r->failed > 0) any_failed = true;
    report["runs"].push_back(RunJson(g, &*r, ""));
  }
  procs.StopAll();

  std::cout << ReportTable(report);
  Status s = WriteText(out + "/report.json", report.dump(1) + "\n");
  if (s.ok()) s = WriteText(out + "/report.html", RenderHtml(report));
  if (!s.ok()) {
    std::cerr << "error: " << s.message() << "\n";
    return 2;
  }
  std::cout << "report: " << out << "/report.html (data: " << out << "/report.json, logs: " << out
            << "/logs)\n";
  if (g_interrupted) return 130;
  return any_failed ? 1 : 0;
}

}  // namespace infergrid::bench
