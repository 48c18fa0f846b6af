#pragma once
// Gateway replicas share their routing decisions with each other, so that every replica's
// prefix index and session table hold what all of them sent where (docs/zero-downtime.md).
//
// Topology: each replica listens on one TCP port and dials every peer it is given (HOST:PORT;
// a name resolving to several addresses, such as a Kubernetes headless Service, dials each;
// names are re-resolved every resolve_interval). A connection to itself is detected by the
// replica id in the hello and dropped. Records flow one way per connection: a replica sends
// on the connections it dialed and applies what arrives on those it accepted, so each pair
// carries each record once per direction.
//
// On every connection it dials, a replica first sends a hello, then a snapshot of its whole
// state (a restarted replica warms from its peers; peers cut off from each other reconcile
// when they meet again), then live records as they are published. Broken connections are
// redialled with backoff (100 ms doubling to 2 s). The accepting side sends its own hello
// first thing (the only frame it sends); the dialler waits for it before the snapshot, so a
// replica that dialled itself stops dialling that address without sending it anything.
//
// Wire format: frames of a 4-byte big-endian length then a MessagePack map (nlohmann-json's
// to_msgpack): {"t":"hello","v":1,"id":replica id} then {"t":"recs","r":[record, ...]} where a
// record is {"p":pool,"e":endpoint url,"s":session key,"k":[prefix keys (uint64)],"n":prompt
// tokens}. Frames over 64 MiB, or malformed, close the connection (counted).
//
// Threads: everything runs on the io_context given (the gateway's control thread), except
// Publish(), which any thread may call.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/duration.h"
#include "common/result.h"
#include "http/asio.h"

namespace infergrid::gateway {

// One routing decision: a request of `prompt_tokens` went to `endpoint_url` of `pool`; its
// session (if any) now lives there, and the prefix index keys of its prompt are cached there.
struct RoutingRecord {
  std::string pool;
  std::string endpoint_url;
  std::string session_key;            // empty: none
  std::vector<uint64_t> prefix_keys;  // the profile's prefix index keys; may be empty
  uint32_t prompt_tokens = 0;
  bool operator==(const RoutingRecord&) const = default;
};

struct PeerMeshOptions {
  std::string listen_host = "127.0.0.1";
  uint16_t listen_port = 0;        // 0: any
  std::vector<std::string> peers;  // HOST:PORT
  Duration resolve_interval = std::chrono::seconds(5);
  std::string replica_id;  // must be unique among replicas; empty: generated
};

struct PeerMeshCallbacks {
  // A record from a peer (live or from its snapshot), on the io_context's thread.
  std::function<void(const RoutingRecord&)> on_record;
  // This replica's whole state, to send to a newly connected peer: called on the io_context's
  // thread, once per new outbound connection. Oldest first (records are applied in order, so
  // the most recent ends up most recent at the peer).
  std::function<std::vector<RoutingRecord>()> snapshot;
  // The number of distinct peer replicas connected (either direction) changed.
  std::function<void(size_t)> on_peers_changed;
};

struct PeerMeshStats {
  uint64_t records_sent = 0;
  uint64_t records_received = 0;
  uint64_t snapshots_sent = 0;
  uint64_t connects = 0;  // outbound connections established
  uint64_t connect_failures = 0;
  uint64_t protocol_errors = 0;  // malformed frames, bad hello, oversized frames
  uint64_t dropped = 0;          // records dropped because a peer's send queue was full
};

class PeerMesh {
 public:
  PeerMesh(http::asio::io_context& io, PeerMeshOptions options, PeerMeshCallbacks callbacks);
  ~PeerMesh();

  // Binds and starts accepting and dialling. Call once.
  Status Start();
  uint16_t port() const;
  const std::string& replica_id() const;

  // Queues a record for every connected outbound peer. Thread-safe, never blocks; records
  // are batched into frames on the io_context's thread (sent within about a millisecond).
  // Each peer's queue is bounded (100,000 records); beyond it records are dropped (counted).
  void Publish(RoutingRecord r);

  // Replaces the peer list (a config reload); connections to peers no longer listed close.
  // Thread-safe.
  void SetPeers(std::vector<std::string> peers);

  // Distinct peer replicas connected now (by replica id, either direction). Thread-safe.
  size_t connected_peers() const;
  PeerMeshStats stats() const;  // thread-safe

  // Closes everything; no callback runs after it returns. Call on the io_context's thread or
  // after it stopped running. Idempotent.
  void Stop();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace infergrid::gateway
