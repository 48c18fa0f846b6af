// infergrid: one binary, subcommands. `gateway` runs the OpenAI-compatible gateway; `sim` runs
// simulated model servers; `plan` compares routing policies in virtual time; `bench` drives
// HTTP load through infergrid, nginx and HAProxy side by side; `config validate`
// checks a v1 configuration file.

#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>

#include "bench/bench_main.h"
#include "common/log.h"
#include "common/signals.h"
#include "config/config.h"
#include "gateway/gateway.h"
#include "gateway/tenancy.h"
#include "plan/plan_main.h"
#include "scheduling/registry.h"
#include "sim/sim_main.h"

using namespace infergrid;

namespace {

// The file's bytes; empty if it cannot be read (mid-rewrite, say: the next look sees it).
std::string ReadWhole(const std::string& path) {
  if (path.empty()) return "";
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Parses and validates a config file: the schema, then every scheduling plugin's parameters.
Result<config::Gateway> LoadConfig(const std::string& path) {
  IG_ASSIGN_OR_RETURN(config::Gateway g, config::LoadGatewayFile(path));
  IG_RETURN_IF_ERROR(scheduling::ValidateProfiles(g));
  return g;
}

int RunGateway(const std::string& config_path, const std::string& model,
               const std::vector<std::string>& endpoints, const std::string& listen,
               bool listen_given) {
  Result<config::Gateway> cfg = Status::Error("");
  if (!config_path.empty()) {
    if (!model.empty() || !endpoints.empty()) {
      std::cerr << "error: --config cannot be combined with --model or --endpoint\n";
      return 2;
    }
    cfg = LoadConfig(config_path);
    if (cfg.ok() && listen_given) {
      auto hp = ParseHostPort(listen);
      if (!hp.ok()) {
        std::cerr << "error: --listen: " << hp.status().message() << "\n";
        return 2;
      }
      cfg->listen_host = hp->first;
      cfg->listen_port = hp->second;
    }
  } else {
    cfg = config::FromFlags(model, endpoints, listen);
  }
  if (!cfg.ok()) {
    std::cerr << "error: " << cfg.status().message() << "\n";
    return 2;
  }
  // Block the stop signals in every thread; the main thread waits for them below.
  sigset_t set = BlockStopSignals(/*reload=*/true);

  auto gw = gateway::Gateway::Create(std::move(cfg).value());
  if (!gw.ok()) {
    std::cerr << "error: " << gw.status().message() << "\n";
    return 2;
  }
  Status s = (*gw)->Start();
  if (!s.ok()) {
    std::cerr << "error: " << s.message() << "\n";
    return 1;
  }
  // The bound port on stdout, for scripts and tests that listen on port 0.
  std::printf("listening on port %u\n", (*gw)->port());
  if ((*gw)->peer_port() != 0) std::printf("peering on port %u\n", (*gw)->peer_port());
  std::fflush(stdout);

  // Reloads (SIGHUP, a change of the file, POST /admin/reload) read the file again, validate it
  // whole, and apply it atomically or not at all (docs/zero-downtime.md). Whichever reads the
  // file notes its bytes, so the watcher does not reload what was already loaded.
  struct Seen {
    std::mutex mu;
    std::string text;
  };
  auto seen = std::make_shared<Seen>();
  seen->text = ReadWhole(config_path);
  auto load = [config_path, listen, listen_given, seen]() -> Result<config::Gateway> {
    {
      std::lock_guard lock(seen->mu);
      seen->text = ReadWhole(config_path);
    }
    IG_ASSIGN_OR_RETURN(config::Gateway next, LoadConfig(config_path));
    if (listen_given) {
      IG_ASSIGN_OR_RETURN(auto hp, ParseHostPort(listen));
      next.listen_host = hp.first;
      next.listen_port = hp.second;
    }
    return next;
  };
  if (!config_path.empty()) (*gw)->SetConfigLoader(load);
  auto reload = [&](const char* why) {
    auto next = load();
    Status st = next.ok() ? (*gw)->Reload(*next) : next.status();
    if (!next.ok()) (*gw)->CountReload(false);
    if (!st.ok()) {
      log::Error("{}: {} not reloaded, the running configuration stays: {}", why, config_path,
                 st.message());
    } else {
      log::Info("{}: configuration reloaded from {}", why, config_path);
    }
  };
  int sig;
  while (true) {
    // The running configuration's settings, however it was last reloaded.
    Duration watch = config_path.empty() ? Duration{0} : (*gw)->lifecycle().config_watch_interval;
    sig = watch.count() > 0 ? WaitForSignalFor(set, watch) : WaitForStopSignal(set);
    if (sig == 0) {  // the interval passed: has the file changed?
      std::string text = ReadWhole(config_path);
      bool changed;
      {
        std::lock_guard lock(seen->mu);
        changed = !text.empty() && text != seen->text;
      }
      if (changed) reload("config file changed");
      continue;
    }
    if (sig != SIGHUP) break;
    if (config_path.empty()) {
      log::Warn("SIGHUP: no --config file to reload");
      continue;
    }
    reload("SIGHUP");
  }
  // A graceful stop: no new connections, not ready, in-flight streams finish (up to the
  // deadline), then exit 0.
  Duration shutdown_timeout = (*gw)->lifecycle().shutdown_timeout;
  log::Info("signal {}: draining (up to {}s), then stopping", sig,
            std::chrono::duration_cast<std::chrono::seconds>(shutdown_timeout).count());
  size_t left = (*gw)->Shutdown(shutdown_timeout);
  log::Info("stopped{}", left ? fmt::format(", {} requests cut at the deadline", left) : "");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"infergrid: an LLM inference gateway"};
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Debug logging");

  auto* gw = app.add_subcommand("gateway", "Run the OpenAI-compatible gateway");
  std::string config_path, model, listen = "0.0.0.0:8000";
  std::vector<std::string> endpoints;
  gw->add_option("--config", config_path, "A v1 configuration file (kind: Gateway)");
  gw->add_option("--model", model, "Quick start: the model name the endpoints serve");
  gw->add_option("--endpoint", endpoints, "Quick start: a model server URL (repeatable)");
  auto* listen_opt =
      gw->add_option("--listen", listen, "HOST:PORT to listen on (default 0.0.0.0:8000)");

  auto* sim_cmd = app.add_subcommand(
      "sim", "Run simulated vLLM-compatible model servers (an engine model instead of a GPU)");
  sim::SimFlags sim_flags;
  sim::AddSimFlags(sim_cmd, &sim_flags);

  auto* plan_cmd = app.add_subcommand(
      "plan", "Compare routing policies on a simulated fleet and workload, in virtual time");
  plan::PlanFlags plan_flags;
  plan::AddPlanFlags(plan_cmd, &plan_flags);

  auto* bench_cmd = app.add_subcommand(
      "bench", "Drive HTTP load through infergrid, nginx and HAProxy to a fleet, side by side");
  bench::BenchFlags bench_flags;
  bench::AddBenchFlags(bench_cmd, &bench_flags);

  auto* cfg = app.add_subcommand("config", "Work with configuration files");
  cfg->require_subcommand(1);
  auto* validate = cfg->add_subcommand("validate", "Validate a v1 configuration file");
  std::string validate_path;
  validate->add_option("file", validate_path, "The file")->required();
  auto* hash_key = cfg->add_subcommand(
      "hash-key", "Print the SHA-256 of an API key read from standard input (for apiKeySha256)");

  CLI11_PARSE(app, argc, argv);
  if (verbose) log::SetLevel(log::Level::kDebug);

  if (*gw) return RunGateway(config_path, model, endpoints, listen, listen_opt->count() > 0);
  if (*sim_cmd) return sim::RunSim(sim_flags);
  if (*plan_cmd) return plan::RunPlan(plan_flags);
  if (*bench_cmd) return bench::RunBench(bench_flags);
  if (*hash_key) {
    std::string key((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    while (!key.empty() && (key.back() == '\n' || key.back() == '\r')) key.pop_back();
    if (key.empty()) {
      std::cerr << "error: no key on standard input\n";
      return 2;
    }
    std::cout << gateway::Sha256Hex(key) << "\n";
    return 0;
  }
  if (*validate) {
    auto g = LoadConfig(validate_path);
    if (!g.ok()) {
      std::cerr << g.status().message() << "\n";
      return 1;
    }
    size_t eps = 0;
    for (const auto& p : g->pools) eps += p.endpoints.size();
    std::cout << validate_path << ": valid (" << g->pools.size() << " pools, " << eps
              << " endpoints, " << g->profiles.size() << " scheduling profiles)\n";
    return 0;
  }
  return 0;
}
