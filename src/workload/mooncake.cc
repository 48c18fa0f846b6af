#include "workload/mooncake.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "workload/workload.h"

namespace infergrid::workload {

using nlohmann::json;

namespace {

// A non-negative integer field that fits `max`.
Result<uint64_t> UInt(const json& j, const char* field, uint64_t max, const std::string& where) {
  const json& v = j.at(field);
  if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) {
    uint64_t x = v.get<uint64_t>();
    if (x <= max) return x;
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (d >= 0 && d == std::floor(d) && d <= double(max)) return static_cast<uint64_t>(d);
  }
  return Status::Error(
      fmt::format("{}: {}: expected an integer from 0 to {}, got {}", where, field, max, v.dump()));
}

Result<double> Millis(const json& j, const char* field, const std::string& where) {
  const json& v = j.at(field);
  if (v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0) {
    return v.get<double>();
  }
  return Status::Error(fmt::format("{}: {}: expected a number of milliseconds >= 0, got {}", where,
                                   field, v.dump()));
}

}  // namespace

Result<MooncakeRequest> ParseMooncakeLine(std::string_view text, size_t line,
                                          const std::string& source, uint32_t block_size) {
  const std::string where = fmt::format("{}:{}", source, line);
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Error(where + ": not a JSON object (one request a line)");
  }
  MooncakeRequest r;
  r.line = line;
  for (const char* required : {"input_length", "output_length"}) {
    if (!j.contains(required)) return Status::Error(where + ": " + required + ": missing");
  }
  IG_ASSIGN_OR_RETURN(uint64_t in, UInt(j, "input_length", 10'000'000, where));
  IG_ASSIGN_OR_RETURN(uint64_t out, UInt(j, "output_length", 10'000'000, where));
  r.input_length = static_cast<uint32_t>(in);
  r.output_length = static_cast<uint32_t>(out);
  if (j.contains("timestamp")) {
    IG_ASSIGN_OR_RETURN(r.timestamp_ms, Millis(j, "timestamp", where));
  }
  if (j.contains("session_id")) {
    const json& s = j["session_id"];
    if (s.is_string()) {
      r.session_id = s.get<std::string>();
    } else if (s.is_number_integer()) {
      r.session_id = s.dump();
    } else {
      return Status::Error(where + ": session_id: expected a string or an integer, got " +
                           s.dump());
    }
  }
  if (j.contains("delay")) {
    IG_ASSIGN_OR_RETURN(r.delay_ms, Millis(j, "delay", where));
    if (r.session_id.empty()) return Status::Error(where + ": delay: needs a session_id");
  }
  if (r.timestamp_ms < 0 && r.delay_ms < 0) {
    return Status::Error(where + ": timestamp: missing (or give session_id and delay)");
  }
  if (j.contains("hash_ids")) {
    const json& h = j["hash_ids"];
    if (!h.is_array()) return Status::Error(where + ": hash_ids: expected an array of integers");
    r.hash_ids.reserve(h.size());
    for (size_t i = 0; i < h.size(); ++i) {
      if (!(h[i].is_number_unsigned() || (h[i].is_number_integer() && h[i].get<int64_t>() >= 0))) {
        return Status::Error(fmt::format("{}: hash_ids[{}]: expected an integer >= 0, got {}",
                                         where, i, h[i].dump()));
      }
      r.hash_ids.push_back(h[i].get<uint64_t>());
    }
    // One id per block: ceil(input_length / block_size) of them.
    uint64_t blocks = (uint64_t{r.input_length} + block_size - 1) / block_size;
    if (r.hash_ids.size() != blocks) {
      return Status::Error(fmt::format(
          "{}: hash_ids: {} ids for input_length {} with {}-token blocks (expected {}); is "
          "--trace-block-size right?",
          where, r.hash_ids.size(), r.input_length, block_size, blocks));
    }
  }
  if (j.contains("text_input")) {
    if (!j["text_input"].is_string())
      return Status::Error(where + ": text_input: expected a string");
    r.text_input = j["text_input"].get<std::string>();
  }
  return r;
}

Result<std::unique_ptr<MooncakeReader>> MooncakeReader::Open(const std::string& path,
                                                             uint32_t block_size) {
  if (block_size == 0) return Status::Error("the trace's block size must be > 0");
  std::unique_ptr<MooncakeReader> r(new MooncakeReader(path, block_size));
  r->in_.open(path);
  if (!r->in_) return Status::Error("cannot read trace " + path);
  return r;
}

Result<std::optional<MooncakeRequest>> MooncakeReader::Next() {
  if (failed_) return std::optional<MooncakeRequest>();
  std::string text;
  while (std::getline(in_, text)) {
    ++line_;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto r = ParseMooncakeLine(text, line_, path_, block_size_);
    if (!r.ok()) {
      failed_ = true;
      return r.status();
    }
    return std::optional<MooncakeRequest>(std::move(*r));
  }
  if (in_.bad()) {
    failed_ = true;
    return Status::Error(fmt::format("{}:{}: read error", path_, line_));
  }
  return std::optional<MooncakeRequest>();
}

uint64_t BlockSeed(uint64_t hash_id) {
  // Apart from every other seed the workloads use: a trace's blocks share only with each other.
  return (hash_id + 1) * 0x9e3779b97f4a7c15ull ^ 0x6d6f6f6e63616b65ull;  // "mooncake"
}

void SynthesizePromptTokens(const MooncakeRequest& r, uint32_t block_size,
                            std::vector<uint32_t>* out) {
  if (r.hash_ids.empty()) {
    SegmentTokens(BlockSeed(~uint64_t{0} - r.line), r.input_length, out);
    return;
  }
  uint32_t left = r.input_length;
  for (uint64_t id : r.hash_ids) {
    uint32_t n = std::min(left, block_size);
    SegmentTokens(BlockSeed(id), n, out);
    left -= n;
  }
}

std::string MooncakeLine(const MooncakeRequest& r) {
  json j;
  if (r.timestamp_ms >= 0) j["timestamp"] = std::llround(r.timestamp_ms);
  j["input_length"] = r.input_length;
  j["output_length"] = r.output_length;
  j["hash_ids"] = r.hash_ids;
  if (!r.session_id.empty()) j["session_id"] = r.session_id;
  if (r.delay_ms >= 0) j["delay"] = std::llround(r.delay_ms);
  if (r.text_input) j["text_input"] = *r.text_input;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace infergrid::workload
