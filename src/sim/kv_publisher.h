#pragma once
// Publishes KV-cache events as vLLM's ZmqEventPublisher does (vllm/distributed/kv_events.py):
// a ZMQ PUB socket; each engine step with events sends one multipart message
//   [topic, 8-byte big-endian sequence number (from 0), msgpack(KVEventBatch)]
// where the batch is the array [ts, [event...], data_parallel_rank] and each event is either
// positional (vLLM before its map format: ["BlockStored", hashes, parent, token_ids,
// block_size, lora_id, medium, lora_name], ["BlockRemoved", hashes, medium],
// ["AllBlocksCleared"]) or a map keyed by "type" (vLLM's current format). Block hashes are
// unsigned 64-bit integers, as vLLM sends them by default. msgpack comes from nlohmann-json
// (Debian's msgpack-cxx conflicts with Boost 1.81).

#include <memory>
#include <span>
#include <string>

#include "common/result.h"
#include "engine_model/engine.h"

namespace zmq {
class context_t;
class socket_t;
}  // namespace zmq

namespace infergrid::sim {

enum class KvEventFormat { kArray, kMap };

// The msgpack payload of one batch.
std::string EncodeKvEventBatch(std::span<const engine_model::KvEvent> events, double ts,
                               uint32_t block_size, KvEventFormat format);

class KvEventPublisher {
 public:
  // Binds `endpoint` ("tcp://*:5557"). The context is shared by all replicas.
  static Result<std::unique_ptr<KvEventPublisher>> Create(zmq::context_t& ctx,
                                                          const std::string& endpoint,
                                                          std::string topic, uint32_t block_size,
                                                          KvEventFormat format);
  ~KvEventPublisher();

  // Sends one batch (nothing if `events` is empty). Never blocks: a slow subscriber loses
  // messages past the high-water mark, as with vLLM.
  void Publish(std::span<const engine_model::KvEvent> events, double ts);
  uint64_t sequence() const { return seq_; }
  // The endpoint bound, with the port resolved ("tcp://127.0.0.1:*" binds any free one).
  const std::string& endpoint() const { return endpoint_; }

 private:
  KvEventPublisher() = default;
  std::unique_ptr<zmq::socket_t> socket_;
  std::string topic_;
  std::string endpoint_;
  uint32_t block_size_ = 16;
  KvEventFormat format_ = KvEventFormat::kArray;
  uint64_t seq_ = 0;
};

}  // namespace infergrid::sim
