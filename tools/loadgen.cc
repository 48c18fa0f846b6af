// loadgen: a closed-loop load generator for OpenAI-compatible streaming endpoints. C clients
// (connections) each send a streaming /v1/completions request, wait for its end, and send the
// next, until the duration is over. It records per request the time to first token (the
// first SSE event after the headers) and the end-to-end time, and prints a JSON summary.
//
//   loadgen --ports 8000:32 --concurrency 2000 --duration 30 --prompt-words 400 --max-tokens 64

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "http/asio.h"

using namespace infergrid::http;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string host = "127.0.0.1";
  std::string ports = "8000:1";  // BASE:COUNT
  uint32_t concurrency = 100;
  double duration_s = 10;
  double warmup_s = 0;
  uint32_t prompt_words = 100;
  uint32_t max_tokens = 32;
  std::string model;
  uint32_t threads = 1;
  double time_scale = 1;
};

struct Stats {
  std::vector<double> ttft, e2e, engine_ttft;  // engine_ttft: wall seconds, when reported
  uint64_t errors = 0, events = 0;
};

struct Shared {
  Options opt;
  std::vector<uint16_t> ports;
  Clock::time_point start, warm, end;
};

// The JSON body after its prompt's leading request number: built once per client, so the
// load generator spends little of the machine's CPU. Prompts differ between clients and
// requests from their first token (no accidental prefix sharing).
std::string BodyTail(const Options& o, uint32_t client) {
  std::string words;
  for (uint32_t i = 0; i < o.prompt_words; ++i) words += fmt::format(" w{}x{}", client, i % 97);
  std::string tail =
      words + "\",\"max_tokens\":" + std::to_string(o.max_tokens) + ",\"stream\":true";
  if (!o.model.empty()) tail += ",\"model\":" + nlohmann::json(o.model).dump();
  return tail + "}";
}

std::string RequestBytes(const std::string& tail, uint32_t client, uint64_t n) {
  std::string body = fmt::format("{{\"prompt\":\"r{}c{}:", n, client) + tail;
  return fmt::format(
      "POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
      "te: trailers\r\ncontent-length: {}\r\n\r\n{}",
      body.size(), body);
}

awaitable<void> Client(Shared& sh, Stats& st, uint32_t id) {
  auto ex = co_await asio::this_coro::executor;
  uint16_t port = sh.ports[id % sh.ports.size()];
  tcp::socket sock(ex);
  error_code ec;
  co_await sock.async_connect({asio::ip::make_address(sh.opt.host), port}, with_ec(ec));
  if (ec) {
    ++st.errors;
    co_return;
  }
  sock.set_option(tcp::no_delay(true), ec);
  std::string buf;
  buf.reserve(64 << 10);
  char tmp[16 << 10];
  const std::string tail = BodyTail(sh.opt, id);
  for (uint64_t n = 0; Clock::now() < sh.end; ++n) {
    std::string req = RequestBytes(tail, id, n);
    auto t0 = Clock::now();
    co_await asio::async_write(sock, asio::buffer(req), with_ec(ec));
    if (ec) break;
    buf.clear();
    size_t body_at = std::string::npos;
    double ttft = -1, engine_ttft = -1;
    bool ok = false;
    uint64_t events = 0;
    size_t scanned = 0, done_at = std::string::npos;
    for (;;) {
      size_t got = co_await sock.async_read_some(asio::buffer(tmp), with_ec(ec));
      if (ec) break;
      buf.append(tmp, got);
      if (body_at == std::string::npos) {
        auto h = buf.find("\r\n\r\n");
        if (h == std::string::npos) continue;
        if (buf.compare(0, 12, "HTTP/1.1 200") != 0) break;
        body_at = h + 4;
        scanned = body_at;
      }
      // Scan only what arrived since the last read (each byte once).
      size_t p;
      while ((p = buf.find("data: ", scanned)) != std::string::npos) {
        if (ttft < 0) ttft = std::chrono::duration<double>(Clock::now() - t0).count();
        if (buf.compare(p, 12, "data: [DONE]") == 0) done_at = p;
        ++events;
        scanned = p + 6;
      }
      scanned = std::max(scanned, buf.size() >= 5 ? buf.size() - 5 : 0);
      // The end: [DONE], then the last chunk "0\r\n", trailers, and an empty line.
      if (done_at == std::string::npos || buf.size() < 4 ||
          buf.compare(buf.size() - 4, 4, "\r\n\r\n") != 0) {
        continue;
      }
      size_t last = buf.find("\r\n0\r\n", done_at);
      if (last == std::string::npos || buf.size() < last + 7) continue;
      constexpr std::string_view kTrailer = "x-infergrid-engine-ttft-seconds: ";
      size_t t = buf.find(kTrailer, last);
      if (t != std::string::npos) {
        engine_ttft = std::strtod(buf.c_str() + t + kTrailer.size(), nullptr) / sh.opt.time_scale;
      }
      ok = true;
      break;
    }
    if (!ok) {
      ++st.errors;
      break;
    }
    if (t0 >= sh.warm) {
      st.ttft.push_back(ttft);
      if (engine_ttft >= 0) st.engine_ttft.push_back(engine_ttft);
      st.e2e.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      st.events += events;
    }
  }
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))];
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / v.size();
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"loadgen: closed-loop streaming load for OpenAI-compatible servers"};
  app.add_option("--host", o.host);
  app.add_option("--ports", o.ports, "BASE:COUNT (requests spread over COUNT ports)");
  app.add_option("--concurrency", o.concurrency, "Concurrent clients (connections)");
  app.add_option("--duration", o.duration_s, "Seconds of load");
  app.add_option("--warmup", o.warmup_s, "Seconds at the start not counted");
  app.add_option("--prompt-words", o.prompt_words, "Prompt length in words (about 2 tokens each)");
  app.add_option("--max-tokens", o.max_tokens);
  app.add_option("--model", o.model);
  app.add_option("--threads", o.threads);
  app.add_option("--time-scale", o.time_scale, "The simulator's --time-scale (for its trailers)");
  CLI11_PARSE(app, argc, argv);
  signal(SIGPIPE, SIG_IGN);

  Shared sh;
  sh.opt = o;
  auto colon = o.ports.find(':');
  int base = std::atoi(o.ports.substr(0, colon).c_str());
  int count = colon == std::string::npos ? 1 : std::atoi(o.ports.c_str() + colon + 1);
  for (int i = 0; i < count; ++i) sh.ports.push_back(static_cast<uint16_t>(base + i));
  sh.start = Clock::now();
  sh.warm = sh.start +
            std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.warmup_s));
  sh.end = sh.warm +
           std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.duration_s));

  std::vector<std::unique_ptr<asio::io_context>> ios;
  std::vector<Stats> stats(o.threads);
  for (uint32_t t = 0; t < o.threads; ++t) ios.push_back(std::make_unique<asio::io_context>(1));
  for (uint32_t c = 0; c < o.concurrency; ++c) {
    uint32_t t = c % o.threads;
    asio::co_spawn(*ios[t], Client(sh, stats[t], c), asio::detached);
  }
  std::vector<std::thread> threads;
  for (auto& io : ios) threads.emplace_back([&io] { io->run(); });
  for (auto& th : threads) th.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - sh.warm).count();

  Stats all;
  for (auto& s : stats) {
    all.ttft.insert(all.ttft.end(), s.ttft.begin(), s.ttft.end());
    all.e2e.insert(all.e2e.end(), s.e2e.begin(), s.e2e.end());
    all.engine_ttft.insert(all.engine_ttft.end(), s.engine_ttft.begin(), s.engine_ttft.end());
    all.errors += s.errors;
    all.events += s.events;
  }
  nlohmann::json out{{"requests", all.ttft.size()},
                     {"errors", all.errors},
                     {"seconds", elapsed},
                     {"requests_per_s", all.ttft.size() / elapsed},
                     {"sse_events_per_s", all.events / elapsed},
                     {"ttft_mean_s", Mean(all.ttft)},
                     {"ttft_p50_s", Percentile(all.ttft, 0.5)},
                     {"ttft_p99_s", Percentile(all.ttft, 0.99)},
                     {"e2e_mean_s", Mean(all.e2e)},
                     {"engine_ttft_reported", all.engine_ttft.size()},
                     {"engine_ttft_mean_s", Mean(all.engine_ttft)},
                     {"engine_ttft_p50_s", Percentile(all.engine_ttft, 0.5)},
                     {"engine_ttft_p99_s", Percentile(all.engine_ttft, 0.99)},
                     // Served over engine-computed TTFT: 1.0 is exactly on schedule.
                     {"ttft_served_over_engine",
                      all.engine_ttft.size() == all.ttft.size() && Mean(all.engine_ttft) > 0
                          ? Mean(all.ttft) / Mean(all.engine_ttft)
                          : 0.0},
                     {"e2e_p50_s", Percentile(all.e2e, 0.5)}};
  std::printf("%s\n", out.dump(2).c_str());
  return all.errors > 0 ? 1 : 0;
}
