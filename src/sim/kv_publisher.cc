#include "sim/kv_publisher.h"

#include <nlohmann/json.hpp>
#include <zmq.hpp>

namespace infergrid::sim {

using engine_model::KvEvent;

namespace {

using OJson = nlohmann::ordered_json;  // keeps vLLM's field order in the map format

OJson Hashes(const std::vector<uint64_t>& hashes) {
  OJson a = OJson::array();
  for (uint64_t h : hashes) a.push_back(h);
  return a;
}

// One event, positional or keyed; fields in vLLM's declaration order.
OJson Event(const KvEvent& e, uint32_t block_size, KvEventFormat format) {
  std::vector<std::pair<const char*, OJson>> fields;
  switch (e.kind) {
    case KvEvent::Kind::kStored:
      fields = {{"type", "BlockStored"},
                {"block_hashes", Hashes(e.hashes)},
                {"parent_block_hash", e.parent == 0 ? OJson(nullptr) : OJson(e.parent)},
                {"token_ids", OJson(e.tokens)},
                {"block_size", block_size},
                {"lora_id", nullptr},
                {"medium", "GPU"},
                {"lora_name", nullptr}};
      break;
    case KvEvent::Kind::kRemoved:
      fields = {{"type", "BlockRemoved"}, {"block_hashes", Hashes(e.hashes)}, {"medium", "GPU"}};
      break;
    case KvEvent::Kind::kAllCleared:
      fields = {{"type", "AllBlocksCleared"}};
      break;
  }
  OJson out = format == KvEventFormat::kMap ? OJson::object() : OJson::array();
  for (auto& [k, v] : fields) {
    if (format == KvEventFormat::kMap) {
      out[k] = std::move(v);
    } else {
      out.push_back(std::move(v));
    }
  }
  return out;
}

}  // namespace

std::string EncodeKvEventBatch(std::span<const KvEvent> events, double ts, uint32_t block_size,
                               KvEventFormat format) {
  OJson list = OJson::array();
  for (const KvEvent& e : events) list.push_back(Event(e, block_size, format));
  OJson batch = OJson::array({OJson(ts), std::move(list), OJson(0)});  // rank 0
  std::vector<uint8_t> bytes = OJson::to_msgpack(batch);
  return std::string(bytes.begin(), bytes.end());
}

Result<std::unique_ptr<KvEventPublisher>> KvEventPublisher::Create(zmq::context_t& ctx,
                                                                   const std::string& endpoint,
                                                                   std::string topic,
                                                                   uint32_t block_size,
                                                                   KvEventFormat format) {
  std::unique_ptr<KvEventPublisher> p(new KvEventPublisher());
  try {
    p->socket_ = std::make_unique<zmq::socket_t>(ctx, zmq::socket_type::pub);
    p->socket_->set(zmq::sockopt::sndhwm, 100000);
    p->socket_->set(zmq::sockopt::linger, 0);
    p->socket_->bind(endpoint);
    p->endpoint_ = p->socket_->get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return Status::Error("kv events: cannot bind " + endpoint + ": " + e.what());
  }
  p->topic_ = std::move(topic);
  p->block_size_ = block_size;
  p->format_ = format;
  return p;
}

KvEventPublisher::~KvEventPublisher() = default;

void KvEventPublisher::Publish(std::span<const KvEvent> events, double ts) {
  if (events.empty()) return;
  std::string payload = EncodeKvEventBatch(events, ts, block_size_, format_);
  unsigned char seq[8];
  for (int i = 0; i < 8; ++i) seq[i] = static_cast<unsigned char>(seq_ >> (56 - 8 * i));
  ++seq_;
  try {
    socket_->send(zmq::buffer(topic_), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    socket_->send(zmq::buffer(seq, 8), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    socket_->send(zmq::buffer(payload), zmq::send_flags::dontwait);
  } catch (const zmq::error_t&) {
    // A PUB socket drops rather than fails; nothing to do on the step path.
  }
}

}  // namespace infergrid::sim
