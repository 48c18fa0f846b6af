#include "gateway/scraper.h"

#include <algorithm>
#include <cstdlib>

#include "common/log.h"

namespace infergrid::gateway {

using namespace infergrid::http;

Result<ScrapedMetrics> ExtractVllmMetrics(const std::vector<metrics::Sample>& samples) {
  ScrapedMetrics m;
  bool have_running = false, have_waiting = false, have_kv = false, have_new_kv = false;
  for (const auto& s : samples) {
    std::string_view n = s.name;
    if (n == "vllm:num_requests_running") {
      m.running += s.value;
      have_running = true;
    } else if (n == "vllm:num_requests_waiting") {
      m.waiting += s.value;
      have_waiting = true;
    } else if (n == "vllm:kv_cache_usage_perc") {
      m.kv_usage = have_new_kv ? std::max(m.kv_usage, s.value) : s.value;
      have_kv = have_new_kv = true;
    } else if (n == "vllm:gpu_cache_usage_perc" && !have_new_kv) {
      m.kv_usage = have_kv ? std::max(m.kv_usage, s.value) : s.value;
      have_kv = true;
    } else if (n == "vllm:prefix_cache_queries_total" || n == "vllm:prefix_cache_queries" ||
               n == "vllm:gpu_prefix_cache_queries_total" || n == "vllm:gpu_prefix_cache_queries") {
      m.prefix_queries += s.value;
    } else if (n == "vllm:prefix_cache_hits_total" || n == "vllm:prefix_cache_hits" ||
               n == "vllm:gpu_prefix_cache_hits_total" || n == "vllm:gpu_prefix_cache_hits") {
      m.prefix_hits += s.value;
    } else if (n == "vllm:cache_config_info") {
      // The KV cache's size: num_gpu_blocks of block_size tokens (summed over engines).
      auto blocks = s.labels.find("num_gpu_blocks");
      auto size = s.labels.find("block_size");
      if (blocks != s.labels.end() && size != s.labels.end()) {
        double b = std::strtod(blocks->second.c_str(), nullptr);
        double z = std::strtod(size->second.c_str(), nullptr);
        if (b > 0 && z > 0 && b * z < 1e15) m.kv_cache_tokens += b * z;
      }
    }
  }
  if (!have_running && !have_waiting && !have_kv) {
    return Status::Error(
        "no vllm:num_requests_running, vllm:num_requests_waiting or KV usage gauge");
  }
  return m;
}

Scraper::Scraper(asio::io_context& io, const config::Scrape& cfg, config::ActiveHealth active,
                 std::vector<EndpointState*> endpoints, GatewayMetrics* metrics,
                 ScraperCallbacks callbacks)
    : io_(io),
      cfg_(cfg),
      active_(std::move(active)),
      endpoints_(std::move(endpoints)),
      metrics_(metrics),
      callbacks_(std::move(callbacks)) {}

void Scraper::Start() {
  started_ = true;
  for (auto* e : endpoints_) {
    if (cfg_.enabled) asio::co_spawn(io_, Loop(e), asio::detached);
    asio::co_spawn(io_, ProbeLoop(e), asio::detached);
  }
}

void Scraper::AddEndpoint(EndpointState* e) {
  asio::post(io_, [this, e] {
    if (stopped_) return;
    endpoints_.push_back(e);
    if (!started_) return;
    if (cfg_.enabled) asio::co_spawn(io_, Loop(e), asio::detached);
    asio::co_spawn(io_, ProbeLoop(e), asio::detached);
  });
}

void Scraper::SetActiveHealth(config::ActiveHealth active) {
  asio::post(io_, [this, active = std::move(active)] { active_ = active; });
}

void Scraper::Stop() {
  asio::post(io_, [this] { stopped_ = true; });
}

awaitable<void> Scraper::Loop(EndpointState* e) {
  asio::steady_timer timer(io_);
  while (!stopped_) {
    auto next = std::chrono::steady_clock::now() + cfg_.interval;
    if (e->admin() != AdminState::kRemoved) co_await ScrapeOnce(e);
    timer.expires_at(next);
    error_code ec;
    co_await timer.async_wait(with_ec(ec));
  }
}

awaitable<void> Scraper::ProbeLoop(EndpointState* e) {
  asio::steady_timer timer(io_);
  while (!stopped_) {
    auto next = std::chrono::steady_clock::now() + active_.interval;
    if (active_.enabled && e->admin() != AdminState::kRemoved) {
      std::string path = active_.path;
      Fetched f = co_await Fetch(e, path, active_.timeout, "infergrid-health");
      bool ok = f.error.empty() && f.status >= 200 && f.status < 300;
      if (stopped_) co_return;
      // A connect either way is news of reachability (also with scraping off).
      if (f.error != "resolve") e->SetReachable(f.connected);
      metrics_->health_probes->With({e->url(), ok ? "pass" : "fail"})->Inc();
      if (callbacks_.on_probe) callbacks_.on_probe(e, ok);
    }
    timer.expires_at(next);
    error_code ec;
    co_await timer.async_wait(with_ec(ec));
  }
}

awaitable<Scraper::Fetched> Scraper::Fetch(EndpointState* e, std::string path, Duration timeout,
                                           const char* agent) {
  Fetched f;
  beast::tcp_stream stream(io_);
  error_code ec;
  std::vector<tcp::endpoint> targets;
  if (auto literal = LiteralEndpoint(e->target())) {
    targets.push_back(*literal);
  } else {
    tcp::resolver resolver(io_);
    std::string port = std::to_string(e->target().port);
    auto results = co_await resolver.async_resolve(e->target().host, port, with_ec(ec));
    if (ec) {
      f.error = "resolve";
      co_return f;
    }
    for (const auto& r : results) targets.push_back(r.endpoint());
  }
  stream.expires_after(timeout);
  co_await stream.async_connect(targets, with_ec(ec));
  if (ec) {
    f.error = ec == beast::error::timeout ? "timeout" : "connect";
    co_return f;
  }
  f.connected = true;
  StringRequest req{bhttp::verb::get, path, 11};
  req.set(bhttp::field::host, e->target().HostHeader());
  req.set(bhttp::field::user_agent, agent);
  req.keep_alive(false);
  co_await bhttp::async_write(stream, req, with_ec(ec));
  beast::flat_buffer buf;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(8 << 20);
  if (!ec) co_await bhttp::async_read(stream, buf, parser, with_ec(ec));
  if (ec) {
    f.error = ec == beast::error::timeout ? "timeout" : "read";
    co_return f;
  }
  f.status = static_cast<int>(parser.get().result_int());
  f.body = std::move(parser.get().body());
  error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  co_return f;
}

awaitable<void> Scraper::ScrapeOnce(EndpointState* e) {
  metrics_->scrapes->With({e->url()})->Inc();
  auto fail = [&](const char* reason) {
    metrics_->scrape_failures->With({e->url(), reason})->Inc();
  };
  std::string path = cfg_.path;
  Fetched f = co_await Fetch(e, path, cfg_.timeout, "infergrid-scraper");
  if (!f.connected) {
    fail(f.error.c_str());
    if (f.error != "resolve") e->SetReachable(false);
    co_return;
  }
  e->SetReachable(true);
  if (!f.error.empty()) {
    fail(f.error.c_str());
    co_return;
  }
  if (f.status != 200) {
    fail("http_status");
    co_return;
  }
  auto samples = metrics::ParseText(f.body);
  if (!samples.ok()) {
    fail("parse");
    log::Debug("scrape of {}: {}", e->url(), samples.status().message());
    co_return;
  }
  auto m = ExtractVllmMetrics(*samples);
  if (!m.ok()) {
    fail("missing_metrics");
    co_return;
  }
  m->at = std::chrono::steady_clock::now();
  if (e->SetScraped(*m) && callbacks_.on_restart) callbacks_.on_restart(e);
}

}  // namespace infergrid::gateway
