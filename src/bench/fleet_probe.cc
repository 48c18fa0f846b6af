#include "bench/fleet_probe.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "bench/client.h"
#include "metrics/text_parser.h"

namespace infergrid::bench {

using namespace infergrid::http;

ServerCounters CountersFromText(std::string_view text) {
  ServerCounters c;
  auto samples = metrics::ParseText(text);
  if (!samples.ok()) return c;
  c.ok = true;
  for (const auto& s : *samples) {
    const std::string& n = s.name;
    if (n == "vllm:prefix_cache_queries_total") {
      c.prefix_queries += s.value;
    } else if (n == "vllm:prefix_cache_hits_total") {
      c.prefix_hits += s.value;
    } else if (n == "vllm:num_preemptions_total") {
      c.preemptions += s.value;
    } else if (n == "vllm:prompt_tokens_total") {
      c.prompt_tokens += s.value;
    } else if (n == "vllm:generation_tokens_total") {
      c.generation_tokens += s.value;
    } else if (n == "vllm:request_success_total") {
      c.requests += s.value;
    } else if (n == "vllm:kv_cache_usage_perc" || n == "vllm:gpu_cache_usage_perc") {
      c.kv_usage = std::max(c.kv_usage, s.value);
    } else if (n == "vllm:num_requests_running") {
      c.running += s.value;
    } else if (n == "vllm:num_requests_waiting") {
      c.waiting += s.value;
    }
  }
  return c;
}

FleetWindow Diff(const std::vector<ServerCounters>& start, const std::vector<ServerCounters>& end) {
  FleetWindow w;
  const size_t n = std::min(start.size(), end.size());
  w.complete = n > 0 && start.size() == end.size();
  double queries = 0, hits = 0, max_work = 0, sum_work = 0;
  for (size_t i = 0; i < n; ++i) {
    const ServerCounters& a = start[i];
    const ServerCounters& b = end[i];
    if (!a.ok || !b.ok) {
      w.complete = false;
      w.requests_per_server.push_back(0);
      continue;
    }
    double q = b.prefix_queries - a.prefix_queries, h = b.prefix_hits - a.prefix_hits;
    queries += q;
    hits += h;
    w.preemptions += b.preemptions - a.preemptions;
    w.requests_per_server.push_back(b.requests - a.requests);
    double work =
        (b.prompt_tokens - a.prompt_tokens) - h + (b.generation_tokens - a.generation_tokens);
    max_work = std::max(max_work, work);
    sum_work += work;
  }
  w.prefix_hit_rate = queries > 0 ? hits / queries : 0;
  w.load_spread = sum_work > 0 ? max_work / (sum_work / n) : 0;
  return w;
}

awaitable<std::vector<ServerCounters>> FleetProbe::Scrape() {
  auto ex = co_await asio::this_coro::executor;
  std::vector<ServerCounters> out;
  for (const auto& s : servers_) {
    Connection c(ex, s.host, s.port);
    Reply r = co_await c.Simple("GET", "/metrics", 5);
    out.push_back(r.error.empty() ? CountersFromText(r.text) : ServerCounters{});
  }
  co_return out;
}

awaitable<Status> FleetProbe::ResetCaches(double timeout_s) {
  auto ex = co_await asio::this_coro::executor;
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(timeout_s));
  for (const auto& s : servers_) {
    Connection c(ex, s.host, s.port);
    while (true) {
      Reply r = co_await c.Simple("POST", "/reset_prefix_cache", 5);
      if (r.error.empty()) break;
      if (r.status == 404 || r.status == 405) {
        co_return Status::Error(fmt::format(
            "{}:{}: no POST /reset_prefix_cache (vLLM serves it with VLLM_SERVER_DEV_MODE=1)",
            s.host, s.port));
      }
      if (std::chrono::steady_clock::now() > deadline) {
        co_return Status::Error(fmt::format("{}:{}: POST /reset_prefix_cache: {} {}", s.host,
                                            s.port, r.error, r.error_detail));
      }
      asio::steady_timer t(ex, std::chrono::milliseconds(100));
      error_code ec;
      co_await t.async_wait(with_ec(ec));
    }
  }
  co_return Status::Ok();
}

}  // namespace infergrid::bench
