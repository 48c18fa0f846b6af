#include "gateway/recorder.h"

#include <fmt/format.h>

#include <cstdio>

#include "common/hash.h"
#include "common/log.h"

namespace infergrid::gateway {

namespace {
// Past this many distinct blocks the id map starts over (ids stay unique within a file's
// stretch; sharing across the restart is lost): about 1 GB of map at most.
constexpr size_t kMaxIds = 20'000'000;
}  // namespace

Result<std::unique_ptr<TraceRecorder>> TraceRecorder::Open(const config::Recording& cfg) {
  std::unique_ptr<TraceRecorder> r(new TraceRecorder(cfg));
  IG_RETURN_IF_ERROR(r->OpenFile());
  if (r->bytes_ > 0) r->Rotate();  // another run's ids and times: not continued
  return r;
}

void TraceRecorder::Begin(Time arrival) {
  std::lock_guard lock(mu_);
  in_gateway_.insert(arrival);
}

void TraceRecorder::Abandon(Time arrival) {
  std::lock_guard lock(mu_);
  EndLocked(arrival);
  WriteReadyLocked();
}

void TraceRecorder::EndLocked(Time arrival) {
  auto it = in_gateway_.find(arrival);
  if (it != in_gateway_.end()) in_gateway_.erase(it);
}

void TraceRecorder::WriteReadyLocked() {
  // A held line goes out once nothing that arrived before it is still in the gateway.
  while (!held_.empty() && (in_gateway_.empty() || held_.top().arrival <= *in_gateway_.begin())) {
    WriteLocked(held_.top().line);
    held_.pop();
  }
}

void TraceRecorder::WriteLocked(const std::string& line) {
  if (bytes_ > 0 && bytes_ + line.size() > cfg_.max_file_bytes) Rotate();
  out_ << line;
  bytes_ += line.size();
  if (++records_ % 64 == 0) out_.flush();
}

Status TraceRecorder::OpenFile() {
  out_.open(cfg_.path, std::ios::out | std::ios::app);
  if (!out_) return Status::Error("recording: cannot open " + cfg_.path + " for writing");
  out_.seekp(0, std::ios::end);
  bytes_ = static_cast<uint64_t>(std::max<std::streamoff>(0, out_.tellp()));
  return Status::Ok();
}

void TraceRecorder::Rotate() {
  out_.close();
  for (uint32_t k = cfg_.max_files; k >= 1; --k) {
    std::string from = k == 1 ? cfg_.path : fmt::format("{}.{}", cfg_.path, k - 1);
    std::string to = fmt::format("{}.{}", cfg_.path, k);
    std::rename(from.c_str(), to.c_str());  // a missing file is fine
  }
  Status s = OpenFile();
  if (!s.ok()) log::Error("{}", s.message());
}

uint32_t TraceRecorder::IdOf(uint64_t key) {
  if (ids_.size() >= kMaxIds) ids_.clear();
  auto [it, added] = ids_.emplace(key, next_id_);
  if (added) ++next_id_;
  return it->second;
}

void TraceRecorder::Record(Time arrival, std::span<const BlockHash> blocks16,
                           std::span<const uint32_t> own, uint32_t prompt_tokens,
                           uint32_t output_tokens, const std::string& session) {
  const uint32_t own_tokens = static_cast<uint32_t>(own.size());
  const uint32_t block = cfg_.block_size;
  const uint32_t stride = block / 16;
  const uint32_t tokens = prompt_tokens > 0 ? prompt_tokens : own_tokens;
  const size_t n = (size_t{tokens} + block - 1) / block;
  double ms = std::chrono::duration<double, std::milli>(arrival - t0_).count();
  std::lock_guard lock(mu_);
  line_.clear();
  fmt::format_to(std::back_inserter(line_),
                 R"({{"timestamp": {}, "input_length": {}, "output_length": {}, "hash_ids": [)",
                 static_cast<int64_t>(std::max(0.0, ms)), tokens, output_tokens);
  for (size_t j = 0; j < n; ++j) {
    uint64_t key;
    size_t end16 = (j + 1) * stride;
    if (end16 <= blocks16.size()) {
      key = blocks16[end16 - 1];  // a full block: the chain up to its end
    } else if (size_t{j} * block < own_tokens) {
      // The gateway's last, partial block: the chain to its last full 16 tokens, then the
      // tokens after them, so different tails are different blocks.
      size_t full = std::min(blocks16.size(), end16);
      uint64_t key_acc = full == 0 ? 0x7061727469616cull : blocks16[full - 1];
      for (size_t k = full * 16; k < own.size(); ++k) key_acc = Mix64(key_acc ^ (own[k] + 1));
      key = Mix64(key_acc ^ (uint64_t{own_tokens} - size_t{j} * block));
    } else {
      key = Mix64(0x657874726100ull ^ (++seq_ << 20) ^ j);  // beyond what it tokenized
    }
    fmt::format_to(std::back_inserter(line_), "{}{}", j ? ", " : "", IdOf(key));
  }
  line_ += "]";
  if (!session.empty()) {
    line_ += R"(, "session_id": )";
    // JSON-escape the key: it comes from a client.
    line_ += '"';
    for (char c : session) {
      if (c == '"' || c == '\\') {
        line_ += '\\';
        line_ += c;
      } else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x80) {
        // Control bytes, and any byte outside ASCII (so the line is valid UTF-8 whatever the
        // client sent): the same key always becomes the same string.
        fmt::format_to(std::back_inserter(line_), "\\u{:04x}", static_cast<unsigned char>(c));
      } else {
        line_ += c;
      }
    }
    line_ += '"';
  }
  line_ += "}\n";
  EndLocked(arrival);
  held_.push(Held{arrival, ++seq_, line_});
  WriteReadyLocked();
}

uint64_t TraceRecorder::records() const {
  std::lock_guard lock(mu_);
  return records_;
}

void TraceRecorder::Flush() {
  std::lock_guard lock(mu_);
  out_.flush();
}

TraceRecorder::~TraceRecorder() {
  std::lock_guard lock(mu_);
  // Whatever waited on requests that never ended (the gateway stopped): in order, now.
  while (!held_.empty()) {
    WriteLocked(held_.top().line);
    held_.pop();
  }
  out_.flush();
}

}  // namespace infergrid::gateway
