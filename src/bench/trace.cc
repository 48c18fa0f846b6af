#include "bench/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "bench/text.h"
#include "workload/mooncake.h"

namespace infergrid::bench {

using json = nlohmann::json;

std::string TraceLine(const TraceRequest& r) {
  std::string out = fmt::format("{{\"t\":{:.6f}", r.t);
  if (!r.session.empty()) out += ",\"session\":" + json(r.session).dump();
  if (r.chat) {
    out += ",\"messages\":" + r.messages_json;
  } else {
    out += ",\"prompt\":" + json(r.prompt).dump(-1, ' ', false, json::error_handler_t::replace);
  }
  out += fmt::format(",\"max_tokens\":{}}}", r.max_tokens);
  return out;
}

Result<TraceRequest> ParseTraceLine(std::string_view line) {
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded()) return Status::Error("not valid JSON");
  if (!j.is_object()) return Status::Error("expected a JSON object");
  for (const auto& [k, v] : j.items()) {
    if (k != "t" && k != "session" && k != "messages" && k != "prompt" && k != "max_tokens") {
      return Status::Error(fmt::format(
          "unknown field '{}'; expected one of: max_tokens, messages, prompt, session, t", k));
    }
  }
  TraceRequest r;
  auto t = j.find("t");
  if (t == j.end()) return Status::Error("missing required field 't' (seconds from the start)");
  if (!t->is_number() || !(t->get<double>() >= 0)) {
    return Status::Error("field 't': expected a number of seconds >= 0");
  }
  r.t = t->get<double>();
  if (auto s = j.find("session"); s != j.end()) {
    if (!s->is_string()) return Status::Error("field 'session': expected a string");
    r.session = s->get<std::string>();
  }
  auto m = j.find("messages");
  auto p = j.find("prompt");
  if ((m == j.end()) == (p == j.end())) {
    return Status::Error("give exactly one of 'messages' (chat) and 'prompt' (completion)");
  }
  if (m != j.end()) {
    if (!m->is_array() || m->empty()) {
      return Status::Error("field 'messages': expected a non-empty array");
    }
    for (size_t i = 0; i < m->size(); ++i) {
      const json& msg = (*m)[i];
      if (!msg.is_object() || !msg.contains("role") || !msg["role"].is_string() ||
          !msg.contains("content") || !msg["content"].is_string()) {
        return Status::Error(fmt::format(
            "field 'messages[{}]': expected an object with string 'role' and 'content'", i));
      }
    }
    r.chat = true;
    r.messages_json = m->dump();
  } else {
    if (!p->is_string()) return Status::Error("field 'prompt': expected a string");
    r.chat = false;
    r.prompt = p->get<std::string>();
  }
  auto mt = j.find("max_tokens");
  if (mt == j.end()) return Status::Error("missing required field 'max_tokens'");
  if (!mt->is_number_integer() || mt->get<int64_t>() < 1 || mt->get<int64_t>() > 10000000) {
    return Status::Error("field 'max_tokens': expected an integer from 1 to 10000000");
  }
  r.max_tokens = static_cast<uint32_t>(mt->get<int64_t>());
  return r;
}

Result<std::unique_ptr<TraceReader>> TraceReader::Open(const std::string& path,
                                                       uint32_t block_size) {
  if (block_size == 0) return Status::Error("the trace's block size must be > 0");
  std::unique_ptr<TraceReader> r(new TraceReader(path));
  r->block_size_ = block_size;
  r->in_.open(path);
  if (!r->in_) return Status::Error(fmt::format("{}: cannot open", path));
  return r;
}

Result<std::optional<TraceRequest>> TraceReader::Next() {
  std::string text;
  while (std::getline(in_, text)) {
    ++line_;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    Result<TraceRequest> r = Status::Error("");
    if (text.find("\"input_length\"") != std::string::npos) {
      // A Mooncake-format line.
      auto m = workload::ParseMooncakeLine(text, line_, path_, block_size_);
      if (!m.ok()) return m.status();
      if (m->timestamp_ms < 0) {
        return Status::Error(fmt::format(
            "{}:{}: timestamp: the bench replays Mooncake traces by timestamp; a turn given "
            "only by its delay is replayed by `infergrid plan --trace`",
            path_, line_));
      }
      if (mooncake_t0_ms_ < 0) mooncake_t0_ms_ = m->timestamp_ms;
      TraceRequest q;
      q.t = (m->timestamp_ms - mooncake_t0_ms_) / 1000;
      q.session = m->session_id;
      q.chat = false;
      q.max_tokens = std::max(1u, m->output_length);
      if (m->text_input) {
        q.prompt = *m->text_input;
      } else if (m->hash_ids.empty()) {
        AppendSegmentText(workload::BlockSeed(~uint64_t{0} - m->line), m->input_length, &q.prompt);
      } else {
        uint32_t left = m->input_length;
        for (uint64_t id : m->hash_ids) {
          uint32_t n = std::min(left, block_size_);
          AppendSegmentText(workload::BlockSeed(id), n, &q.prompt);
          left -= n;
        }
      }
      r = std::move(q);
    } else {
      r = ParseTraceLine(text);
      if (!r.ok())
        return Status::Error(fmt::format("{}:{}: {}", path_, line_, r.status().message()));
    }
    if (r->t < last_t_) {
      return Status::Error(fmt::format("{}:{}: field 't': {} is before the previous line's {}",
                                       path_, line_, r->t, last_t_));
    }
    last_t_ = r->t;
    return std::optional<TraceRequest>(std::move(*r));
  }
  if (in_.bad()) return Status::Error(fmt::format("{}:{}: read error", path_, line_ + 1));
  return std::optional<TraceRequest>();
}

Result<TraceInfo> ScanTrace(const std::string& path, uint32_t block_size) {
  auto reader = TraceReader::Open(path, block_size);
  if (!reader.ok()) return reader.status();
  TraceInfo info;
  while (true) {
    auto r = (*reader)->Next();
    if (!r.ok()) return r.status();
    if (!r->has_value()) break;
    ++info.requests;
    info.last_t = (*r)->t;
  }
  if (info.requests == 0) return Status::Error(fmt::format("{}: no requests", path));
  return info;
}

}  // namespace infergrid::bench
