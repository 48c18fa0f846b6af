#include "bench/client.h"

#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>

namespace infergrid::bench {

using namespace infergrid::http;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

namespace {

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

uint32_t U32(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_unsigned() ? it->get<uint32_t>() : 0;
}

void ReadUsage(const json& usage, ChunkInfo* out) {
  if (!usage.is_object()) return;
  out->has_usage = true;
  out->prompt_tokens = U32(usage, "prompt_tokens");
  out->completion_tokens = U32(usage, "completion_tokens");
  auto d = usage.find("prompt_tokens_details");
  if (d != usage.end() && d->is_object()) out->cached_tokens = U32(*d, "cached_tokens");
}

// choices[0].delta.content (chat chunk), .message.content (chat reply) or .text.
void ReadContent(const json& j, ChunkInfo* out) {
  auto ch = j.find("choices");
  if (ch == j.end() || !ch->is_array() || ch->empty() || !(*ch)[0].is_object()) return;
  const json& c = (*ch)[0];
  for (const char* k : {"delta", "message"}) {
    auto d = c.find(k);
    if (d != c.end() && d->is_object()) {
      auto s = d->find("content");
      if (s != d->end() && s->is_string()) out->content = s->get<std::string>();
      return;
    }
  }
  auto t = c.find("text");
  if (t != c.end() && t->is_string()) out->content = t->get<std::string>();
}

// An SSE body, fed as it arrives: complete events are handed to the reply.
class SseReader {
 public:
  SseReader(Reply* r, Clock::time_point t0) : r_(r), t0_(t0) {}

  void Feed(std::string_view data) {
    buf_.append(data);
    size_t start = 0;
    while (true) {
      size_t end = buf_.find("\n\n", start);
      if (end == std::string::npos) break;
      Event(std::string_view(buf_).substr(start, end - start));
      start = end + 2;
    }
    buf_.erase(0, start);
  }
  bool done() const { return done_; }

 private:
  void Event(std::string_view ev) {
    while (!ev.empty() && (ev.front() == '\r' || ev.front() == '\n')) ev.remove_prefix(1);
    if (ev.substr(0, 5) != "data:") return;  // comments, other fields
    ev.remove_prefix(5);
    if (!ev.empty() && ev.front() == ' ') ev.remove_prefix(1);
    while (!ev.empty() && ev.back() == '\r') ev.remove_suffix(1);
    if (ev == "[DONE]") {
      done_ = true;
      return;
    }
    ChunkInfo c;
    if (!ParseChunk(ev, &c)) {
      if (r_->error.empty()) r_->error = "bad_response";
      return;
    }
    if (c.error) {
      if (r_->error.empty()) {
        r_->error = "stream_error";
        r_->error_detail = c.error_message;
      }
      return;
    }
    if (c.has_usage) {
      r_->had_usage = true;
      r_->prompt_tokens = c.prompt_tokens;
      r_->completion_tokens = c.completion_tokens;
      r_->cached_tokens = c.cached_tokens;
    }
    if (!c.content.empty()) {
      double t = Since(t0_);
      if (r_->chunks == 0) {
        r_->first_token_s = t;
      } else {
        r_->token_gaps.push_back(t - last_);
      }
      last_ = t;
      ++r_->chunks;
      r_->text += c.content;
    }
  }

  Reply* r_;
  Clock::time_point t0_;
  std::string buf_;
  double last_ = 0;
  bool done_ = false;
};

std::string ErrorMessage(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_object() &&
      j["error"].contains("message") && j["error"]["message"].is_string()) {
    return j["error"]["message"].get<std::string>();
  }
  return body.substr(0, 200);
}

}  // namespace

bool ParseChunk(std::string_view text, ChunkInfo* out) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  auto e = j.find("error");
  if (e != j.end() && !e->is_null()) {
    out->error = true;
    if (e->is_object() && e->contains("message") && (*e)["message"].is_string()) {
      out->error_message = (*e)["message"].get<std::string>();
    }
    return true;
  }
  auto u = j.find("usage");
  if (u != j.end()) ReadUsage(*u, out);
  ReadContent(j, out);
  return true;
}

Connection::Connection(any_io_executor ex, std::string host, uint16_t port)
    : ex_(std::move(ex)), host_(std::move(host)), port_(port) {}

Connection::~Connection() { Close(); }

void Connection::Close() {
  if (sock_) {
    error_code ignored;
    sock_->close(ignored);
    sock_.reset();
  }
}

awaitable<Reply> Connection::Post(const std::string& path, const std::string& body,
                                  const Headers& headers, bool stream, double timeout_s) {
  std::string req = fmt::format(
      "POST {} HTTP/1.1\r\nhost: {}:{}\r\ncontent-type: application/json\r\n"
      "content-length: {}\r\n",
      path, host_, port_, body.size());
  if (stream) req += "accept: text/event-stream\r\n";
  for (const auto& [k, v] : headers) req += k + ": " + v + "\r\n";
  req += "\r\n";
  req += body;
  bool retry = false;
  const Mode mode = stream ? Mode::kSse : Mode::kJson;
  Reply r = co_await Once(req, mode, timeout_s, &retry);
  if (retry) r = co_await Once(req, mode, timeout_s, &retry);
  co_return r;
}

awaitable<Reply> Connection::Simple(const std::string& method, const std::string& path,
                                    double timeout_s) {
  std::string req = fmt::format("{} {} HTTP/1.1\r\nhost: {}:{}\r\ncontent-length: 0\r\n\r\n",
                                method, path, host_, port_);
  bool retry = false;
  Reply r = co_await Once(req, Mode::kRaw, timeout_s, &retry);
  if (retry) r = co_await Once(req, Mode::kRaw, timeout_s, &retry);
  co_return r;
}

awaitable<Reply> Connection::Once(const std::string& request, Mode mode, double timeout_s,
                                  bool* reused_and_silent) {
  *reused_and_silent = false;
  Reply r;
  const bool reused = sock_ != nullptr;
  auto t0 = Clock::now();
  error_code ec;
  if (!sock_) {
    auto s = std::make_shared<tcp::socket>(ex_);
    asio::ip::address addr = asio::ip::make_address(host_, ec);
    if (!ec) {
      co_await s->async_connect({addr, port_}, with_ec(ec));
    } else {  // a name: resolved for each new connection
      tcp::resolver resolver(ex_);
      auto found = co_await resolver.async_resolve(host_, std::to_string(port_), with_ec(ec));
      if (!ec) co_await asio::async_connect(*s, found, with_ec(ec));
    }
    if (ec) {
      r.error = "connect";
      r.error_detail = ec.message();
      co_return r;
    }
    s->set_option(tcp::no_delay(true), ec);
    sock_ = std::move(s);
  }
  std::shared_ptr<tcp::socket> sock = sock_;
  auto timed_out = std::make_shared<bool>(false);
  asio::steady_timer timer(ex_);
  timer.expires_after(std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(timeout_s > 0 ? timeout_s : 1e6)));
  timer.async_wait([sock, timed_out](error_code e) {
    if (e) return;
    *timed_out = true;
    error_code ignored;
    sock->close(ignored);
  });
  auto fail = [&](const char* kind, error_code e) {
    r.error = *timed_out ? "timeout" : kind;
    r.error_detail = e.message();
    Close();
  };

  co_await asio::async_write(*sock, asio::buffer(request), with_ec(ec));
  if (ec) {
    if (reused && !*timed_out) *reused_and_silent = true;
    fail("write", ec);
    timer.cancel();
    co_return r;
  }
  bhttp::response_parser<bhttp::buffer_body> p;
  p.body_limit(boost::none);
  p.header_limit(64 * 1024);
  beast::flat_buffer buf;
  co_await bhttp::async_read_header(*sock, buf, p, with_ec(ec));
  if (ec) {
    if (reused && !*timed_out && !p.got_some() &&
        (ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == bhttp::error::end_of_stream)) {
      *reused_and_silent = true;
    }
    fail("read", ec);
    timer.cancel();
    co_return r;
  }
  r.status = p.get().result_int();
  const bool sse = mode == Mode::kSse && r.status == 200;
  SseReader sse_reader(&r, t0);
  std::string body;
  char chunk[16384];
  while (!p.is_done()) {
    p.get().body().data = chunk;
    p.get().body().size = sizeof chunk;
    co_await bhttp::async_read_some(*sock, buf, p, with_ec(ec));
    if (ec == bhttp::error::need_buffer) ec = {};
    if (ec) break;
    size_t n = sizeof chunk - p.get().body().size;
    if (sse) {
      sse_reader.Feed(std::string_view(chunk, n));
    } else {
      body.append(chunk, n);
    }
  }
  timer.cancel();
  r.total_s = Since(t0);
  if (ec) {
    fail("read", ec);
    co_return r;
  }
  if (!p.keep_alive()) Close();
  if (r.status != 200) {
    r.error = fmt::format("http_{}", r.status);
    r.error_detail = ErrorMessage(body);
    co_return r;
  }
  if (sse) {
    if (r.error.empty() && !sse_reader.done()) r.error = "incomplete";
  } else if (mode == Mode::kJson) {
    ChunkInfo c;
    if (ParseChunk(body, &c) && !c.error) {
      r.text = c.content;
      r.first_token_s = r.total_s;
      r.chunks = r.text.empty() ? 0 : 1;
      if (c.has_usage) {
        r.had_usage = true;
        r.prompt_tokens = c.prompt_tokens;
        r.completion_tokens = c.completion_tokens;
        r.cached_tokens = c.cached_tokens;
      }
    } else {
      r.error = "bad_response";
    }
  } else {
    r.text = std::move(body);  // a plain GET or POST (metrics, reset)
  }
  if (!r.had_usage) r.completion_tokens = r.chunks;
  co_return r;
}

}  // namespace infergrid::bench
