#include "gateway/peer_mesh.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <array>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <unordered_set>

#include "common/host_port.h"
#include "common/log.h"

namespace infergrid::gateway {

using namespace infergrid::http;
using nlohmann::json;

namespace {

constexpr uint32_t kMaxFrame = 64u << 20;    // larger frames close the connection
constexpr size_t kMaxQueue = 100000;         // records queued per outbound peer
constexpr size_t kMaxBatchRecords = 5000;    // records per frame we send
constexpr size_t kMaxBatchBytes = 4u << 20;  // and their encoded size per frame
constexpr size_t kFlushBatch = 4096;         // published records encoded per io turn
constexpr auto kBackoffMin = std::chrono::milliseconds(100);
constexpr auto kBackoffMax = std::chrono::seconds(2);
constexpr auto kConnectTimeout = std::chrono::seconds(5);
constexpr auto kHelloTimeout = std::chrono::seconds(10);
constexpr auto kWriteTimeout = std::chrono::seconds(30);
constexpr int kProtocolVersion = 1;

using Bytes = std::vector<uint8_t>;
using Encoded = std::shared_ptr<const Bytes>;  // one record's MessagePack, shared by all peers

std::string EndpointString(const tcp::endpoint& ep) {
  if (ep.address().is_v6()) return fmt::format("[{}]:{}", ep.address().to_string(), ep.port());
  return fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

std::string GenerateReplicaId() {
  std::random_device rd;
  std::mt19937_64 gen(
      (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  return fmt::format("{:016x}", gen());
}

Encoded EncodeRecord(const RoutingRecord& r) {
  json j = json::object();
  j["p"] = r.pool;
  j["e"] = r.endpoint_url;
  j["s"] = r.session_key;
  j["k"] = r.prefix_keys;
  j["n"] = r.prompt_tokens;
  auto out = std::make_shared<Bytes>();
  json::to_msgpack(j, *out);
  return out;
}

void PutBigEndian32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

// A whole frame (length prefix included) holding `j`.
Bytes EncodeFrame(const json& j) {
  Bytes out(4, 0);
  json::to_msgpack(j, out);  // appends
  PutBigEndian32(out.data(), static_cast<uint32_t>(out.size() - 4));
  return out;
}

// The length prefix and the start of {"t":"recs","r":[...]} for `n` records whose encodings
// total `body` bytes; the records themselves follow it on the wire.
Bytes RecsFrameHead(size_t n, size_t body) {
  Bytes h = {0, 0, 0, 0, 0x82, 0xa1, 't', 0xa4, 'r', 'e', 'c', 's', 0xa1, 'r'};
  if (n < 16) {
    h.push_back(static_cast<uint8_t>(0x90 | n));
  } else if (n < 65536) {
    h.push_back(0xdc);
    h.push_back(static_cast<uint8_t>(n >> 8));
    h.push_back(static_cast<uint8_t>(n));
  } else {
    h.push_back(0xdd);
    h.resize(h.size() + 4);
    PutBigEndian32(h.data() + h.size() - 4, static_cast<uint32_t>(n));
  }
  PutBigEndian32(h.data(), static_cast<uint32_t>(h.size() - 4 + body));
  return h;
}

bool IsNonNegativeInteger(const json& j) {
  return j.is_number_unsigned() || (j.is_number_integer() && j.get<int64_t>() >= 0);
}

bool ParseRecord(const json& j, RoutingRecord& r) {
  if (!j.is_object()) return false;
  auto p = j.find("p");
  auto e = j.find("e");
  if (p == j.end() || !p->is_string() || e == j.end() || !e->is_string()) return false;
  r.pool = p->get_ref<const std::string&>();
  r.endpoint_url = e->get_ref<const std::string&>();
  r.session_key.clear();
  r.prefix_keys.clear();
  r.prompt_tokens = 0;
  if (auto s = j.find("s"); s != j.end()) {
    if (!s->is_string()) return false;
    r.session_key = s->get_ref<const std::string&>();
  }
  if (auto k = j.find("k"); k != j.end()) {
    if (!k->is_array()) return false;
    r.prefix_keys.reserve(k->size());
    for (const auto& key : *k) {
      if (!IsNonNegativeInteger(key)) return false;
      r.prefix_keys.push_back(key.get<uint64_t>());
    }
  }
  if (auto n = j.find("n"); n != j.end()) {
    if (!IsNonNegativeInteger(*n) || n->get<uint64_t>() > std::numeric_limits<uint32_t>::max())
      return false;
    r.prompt_tokens = static_cast<uint32_t>(n->get<uint64_t>());
  }
  return true;
}

// The replica id of a valid hello frame, or empty.
std::string ParseHello(const Bytes& body) {
  json j = json::from_msgpack(body.begin(), body.end(), true, false);
  if (j.is_discarded() || !j.is_object()) return {};
  auto t = j.find("t");
  auto v = j.find("v");
  auto id = j.find("id");
  if (t == j.end() || !t->is_string() || t->get_ref<const std::string&>() != "hello") return {};
  if (v == j.end() || !v->is_number_integer() || v->get<int64_t>() != kProtocolVersion) return {};
  if (id == j.end() || !id->is_string()) return {};
  return id->get<std::string>();
}

enum class FrameRead { kOk, kIoError, kBadLength };

// Reads one frame's body into `body`.
awaitable<FrameRead> ReadFrame(tcp::socket& sock, Bytes& body, error_code& ec) {
  uint8_t head[4];
  co_await asio::async_read(sock, asio::buffer(head), with_ec(ec));
  if (ec) co_return FrameRead::kIoError;
  uint32_t len = (uint32_t{head[0]} << 24) | (uint32_t{head[1]} << 16) | (uint32_t{head[2]} << 8) |
                 uint32_t{head[3]};
  if (len == 0 || len > kMaxFrame) co_return FrameRead::kBadLength;
  if (body.capacity() > (1u << 20) && len < (1u << 20)) Bytes().swap(body);  // give back a big one
  body.resize(len);
  co_await asio::async_read(sock, asio::buffer(body), with_ec(ec));
  co_return ec ? FrameRead::kIoError : FrameRead::kOk;
}

void SetSocketOptions(tcp::socket& sock) {
  error_code ec;
  sock.set_option(tcp::no_delay(true), ec);
  sock.set_option(asio::socket_base::keep_alive(true), ec);
#ifdef TCP_KEEPIDLE
  // Notice a peer that vanished without a FIN (a host gone) within about half a minute.
  int idle = 10, interval = 5, count = 3;
  ::setsockopt(sock.native_handle(), IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(sock.native_handle(), IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(sock.native_handle(), IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
#endif
}

// One TCP connection, either direction. `deadline` bounds the pending operation (connect,
// hello, a write): its watchdog closes the socket when it passes. `wake` is where the
// writer of an outbound connection waits for records.
struct Conn {
  explicit Conn(asio::io_context& io) : sock(io), deadline(io), wake(io) {
    deadline.expires_at(asio::steady_timer::time_point::max());
  }
  void Close() {
    closed = true;
    error_code ec;
    sock.close(ec);
    deadline.cancel();
    wake.cancel();
  }
  void ClearDeadline() {
    if (deadline.expiry() != asio::steady_timer::time_point::max())
      deadline.expires_at(asio::steady_timer::time_point::max());
  }

  tcp::socket sock;
  asio::steady_timer deadline;
  asio::steady_timer wake;
  bool closed = false;
  std::string remote_id;  // set once its hello is accepted
  bool registered = false;
};

awaitable<void> Watchdog(std::shared_ptr<Conn> c) {
  while (!c->closed) {
    if (c->deadline.expiry() <= asio::steady_timer::clock_type::now()) {
      c->Close();
      break;
    }
    error_code ec;
    co_await c->deadline.async_wait(with_ec(ec));
  }
}

// Reads and discards whatever arrives until the connection ends, then closes it (so the
// writer of an outbound connection learns that the peer went away).
awaitable<void> DrainUntilClosed(std::shared_ptr<Conn> c) {
  std::array<uint8_t, 512> buf;
  while (!c->closed) {
    error_code ec;
    co_await c->sock.async_read_some(asio::buffer(buf), with_ec(ec));
    if (ec) break;
  }
  c->Close();
}

void LogException(std::exception_ptr e) {
  if (!e) return;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    log::Error("peer mesh: {}", x.what());
  } catch (...) {
    log::Error("peer mesh: unknown exception");
  }
}

// An address dialled (one per resolved address, shared by the peer entries resolving to it).
struct Dialler {
  Dialler(asio::io_context& io, tcp::endpoint e) : ep(std::move(e)), retry(io) {}
  tcp::endpoint ep;
  int refs = 0;          // peer entries resolving to it
  bool stopped = false;  // no longer wanted, or found to be ourselves
  bool live = false;     // handshake done: takes published records
  std::shared_ptr<Conn> conn;
  asio::steady_timer retry;
  std::deque<Encoded> queue;
};

// A configured HOST:PORT.
struct Peer {
  Peer(asio::io_context& io, std::string h, uint16_t p)
      : host(std::move(h)), port(p), resolver(io), timer(io) {}
  std::string host;
  uint16_t port;
  bool stopped = false;
  std::set<tcp::endpoint> eps;
  tcp::resolver resolver;
  asio::steady_timer timer;
};

}  // namespace

struct PeerMesh::Impl : std::enable_shared_from_this<PeerMesh::Impl> {
  Impl(asio::io_context& io_, PeerMeshOptions options_, PeerMeshCallbacks callbacks_)
      : io(io_), options(std::move(options_)), callbacks(std::move(callbacks_)), acceptor(io_) {
    if (options.replica_id.empty()) options.replica_id = GenerateReplicaId();
    desired_peers = options.peers;
    json hello = {{"t", "hello"}, {"v", kProtocolVersion}, {"id", options.replica_id}};
    hello_frame = EncodeFrame(hello);
  }

  // ---- io thread ----
  void OnStart();
  void ReconcilePeers();
  void SetEndpoints(const std::shared_ptr<Peer>& p, const std::set<tcp::endpoint>& eps);
  void AcquireEndpoint(const tcp::endpoint& ep);
  void ReleaseEndpoint(const tcp::endpoint& ep);
  void Flush();
  void Register(Conn& c, const std::string& id);
  void Unregister(Conn& c);
  void Stop();
  bool DuplicateOutbound(const Dialler& d, const std::string& id) const;

  static awaitable<void> AcceptLoop(std::shared_ptr<Impl> self);
  static awaitable<void> Serve(std::shared_ptr<Impl> self, std::shared_ptr<Conn> c);
  static awaitable<void> ResolveLoop(std::shared_ptr<Impl> self, std::shared_ptr<Peer> p);
  static awaitable<void> Dial(std::shared_ptr<Impl> self, std::shared_ptr<Dialler> d);
  static awaitable<void> Stream(Impl& self, Dialler& d, const std::shared_ptr<Conn>& c,
                                const std::string& id, const std::string& where);
  static awaitable<error_code> WriteRecords(Conn& c, std::deque<Encoded>& q, size_t& written);

  template <typename A>
  void Spawn(A&& a) {
    asio::co_spawn(io, std::forward<A>(a), LogException);
  }

  asio::io_context& io;
  PeerMeshOptions options;
  PeerMeshCallbacks callbacks;
  tcp::acceptor acceptor;
  uint16_t port = 0;
  Bytes hello_frame;

  std::atomic<bool> started{false};
  std::atomic<bool> stopped{false};

  // Publish() -> Flush().
  std::mutex pending_mu;
  std::deque<RoutingRecord> pending;
  std::atomic<bool> flush_posted{false};
  std::atomic<size_t> live_outbound{0};

  std::mutex peers_mu;
  std::vector<std::string> desired_peers;

  // io thread only.
  std::map<std::string, std::shared_ptr<Peer>> peers;
  std::map<tcp::endpoint, std::shared_ptr<Dialler>> diallers;
  std::set<tcp::endpoint> self_endpoints;
  std::unordered_set<std::shared_ptr<Conn>> inbound;
  std::map<std::string, int> ids;  // replica id -> live connections
  size_t reported_peers = 0;

  std::atomic<size_t> connected{0};
  std::atomic<uint64_t> records_sent{0}, records_received{0}, snapshots_sent{0}, connects{0},
      connect_failures{0}, protocol_errors{0}, dropped{0};
};

void PeerMesh::Impl::OnStart() {
  if (stopped) return;
  Spawn(AcceptLoop(shared_from_this()));
  ReconcilePeers();
}

void PeerMesh::Impl::ReconcilePeers() {
  if (stopped || !started) return;
  std::set<std::string> want;
  {
    std::lock_guard lock(peers_mu);
    want.insert(desired_peers.begin(), desired_peers.end());
  }
  for (auto it = peers.begin(); it != peers.end();) {
    if (want.count(it->first)) {
      ++it;
      continue;
    }
    auto p = it->second;
    p->stopped = true;
    p->timer.cancel();
    p->resolver.cancel();
    SetEndpoints(p, {});
    it = peers.erase(it);
  }
  for (const auto& spec : want) {
    if (peers.count(spec)) continue;
    auto hp = ParseHostPort(spec);
    if (!hp.ok()) {
      log::Warn("peer mesh: ignoring peer {}", hp.status().message());
      continue;
    }
    auto p = std::make_shared<Peer>(io, hp->first, hp->second);
    peers[spec] = p;
    Spawn(ResolveLoop(shared_from_this(), p));
  }
}

void PeerMesh::Impl::SetEndpoints(const std::shared_ptr<Peer>& p,
                                  const std::set<tcp::endpoint>& eps) {
  for (const auto& ep : eps)
    if (!p->eps.count(ep)) AcquireEndpoint(ep);
  for (const auto& ep : p->eps)
    if (!eps.count(ep)) ReleaseEndpoint(ep);
  p->eps = eps;
}

void PeerMesh::Impl::AcquireEndpoint(const tcp::endpoint& ep) {
  auto& d = diallers[ep];
  if (!d) {
    d = std::make_shared<Dialler>(io, ep);
    if (self_endpoints.count(ep)) {
      d->stopped = true;
    } else {
      Spawn(Dial(shared_from_this(), d));
    }
  }
  ++d->refs;
}

void PeerMesh::Impl::ReleaseEndpoint(const tcp::endpoint& ep) {
  auto it = diallers.find(ep);
  if (it == diallers.end()) return;
  auto d = it->second;
  if (--d->refs > 0) return;
  diallers.erase(it);
  d->stopped = true;
  d->retry.cancel();
  if (d->conn) d->conn->Close();
}

awaitable<void> PeerMesh::Impl::ResolveLoop(std::shared_ptr<Impl> self, std::shared_ptr<Peer> p) {
  error_code ec;
  auto literal = asio::ip::make_address(p->host, ec);
  if (!ec) {  // an address: nothing to look up, ever
    std::set<tcp::endpoint> eps = {tcp::endpoint(literal, p->port)};
    self->SetEndpoints(p, eps);
    co_return;
  }
  auto interval =
      std::max<Duration>(self->options.resolve_interval, std::chrono::milliseconds(100));
  std::string service = std::to_string(p->port);
  while (!self->stopped && !p->stopped) {
    auto results = co_await p->resolver.async_resolve(p->host, service, with_ec(ec));
    if (self->stopped || p->stopped) break;
    if (ec) {
      // Keep dialling what it resolved to before: a resolver hiccup is not a peer going away.
      log::Debug("peer mesh: cannot resolve {}: {}", p->host, ec.message());
    } else {
      std::set<tcp::endpoint> eps;
      for (const auto& r : results) eps.insert(r.endpoint());
      self->SetEndpoints(p, eps);
    }
    p->timer.expires_after(interval);
    co_await p->timer.async_wait(with_ec(ec));
  }
}

bool PeerMesh::Impl::DuplicateOutbound(const Dialler& d, const std::string& id) const {
  for (const auto& [ep, other] : diallers)
    if (other.get() != &d && other->live && other->conn && other->conn->remote_id == id)
      return true;
  return false;
}

awaitable<error_code> PeerMesh::Impl::WriteRecords(Conn& c, std::deque<Encoded>& q,
                                                   size_t& written) {
  // Takes a batch off the front of `q` and writes it as one frame. The frame is copied into
  // one buffer: gathering thousands of small encodings would cost a syscall per few of them.
  size_t n = 0, bytes = 0;
  while (n < q.size() && n < kMaxBatchRecords &&
         (n == 0 || bytes + q[n]->size() <= kMaxBatchBytes)) {
    bytes += q[n]->size();
    ++n;
  }
  Bytes frame = RecsFrameHead(n, bytes);
  size_t at = frame.size();
  frame.resize(at + bytes);
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(frame.data() + at, q[i]->data(), q[i]->size());
    at += q[i]->size();
  }
  q.erase(q.begin(), q.begin() + static_cast<ptrdiff_t>(n));
  error_code ec;
  c.deadline.expires_after(kWriteTimeout);
  co_await asio::async_write(c.sock, asio::buffer(frame), with_ec(ec));
  written = ec ? 0 : n;
  co_return ec;
}

// An outbound connection past its handshake: the snapshot, then published records until the
// connection or the mesh ends.
awaitable<void> PeerMesh::Impl::Stream(Impl& self, Dialler& d, const std::shared_ptr<Conn>& c,
                                       const std::string& id, const std::string& where) {
  d.live = true;
  self.live_outbound.fetch_add(1, std::memory_order_relaxed);
  log::Info("peer mesh: connected to {} (replica {})", where, id);
  self.Spawn(DrainUntilClosed(c));
  // The snapshot is taken in the same step as the connection starts taking published
  // records, so nothing falls between them (a record may come twice: harmless).
  std::deque<Encoded> snap;
  if (self.callbacks.snapshot) {
    for (const auto& r : self.callbacks.snapshot()) snap.push_back(EncodeRecord(r));
  }
  error_code ec;
  auto going = [&] { return !ec && !c->closed && !self.stopped && !d.stopped; };
  size_t written = 0;
  while (!snap.empty() && going()) {
    ec = co_await WriteRecords(*c, snap, written);
    self.records_sent.fetch_add(written, std::memory_order_relaxed);
  }
  if (going()) self.snapshots_sent.fetch_add(1, std::memory_order_relaxed);
  while (going()) {
    if (d.queue.empty()) {
      c->ClearDeadline();
      c->wake.expires_at(asio::steady_timer::time_point::max());
      error_code ignored;
      co_await c->wake.async_wait(with_ec(ignored));
      continue;
    }
    ec = co_await WriteRecords(*c, d.queue, written);
    self.records_sent.fetch_add(written, std::memory_order_relaxed);
  }
  d.live = false;
  self.live_outbound.fetch_sub(1, std::memory_order_relaxed);
  d.queue.clear();  // the next connection starts with a snapshot
  if (!self.stopped && !d.stopped) log::Info("peer mesh: lost {} (replica {})", where, id);
}

awaitable<void> PeerMesh::Impl::Dial(std::shared_ptr<Impl> self, std::shared_ptr<Dialler> d) {
  std::string where = EndpointString(d->ep);
  Duration backoff = kBackoffMin;
  Bytes body;
  while (!self->stopped && !d->stopped) {
    auto c = std::make_shared<Conn>(self->io);
    d->conn = c;
    self->Spawn(Watchdog(c));
    error_code ec;
    bool failed = true;      // counts as a failed connect and backs off
    bool is_self = false;    // dialled ourselves: stop for good
    bool duplicate = false;  // another address reaches the same replica
    c->deadline.expires_after(kConnectTimeout);
    co_await c->sock.async_connect(d->ep, with_ec(ec));
    if (self->stopped || d->stopped) break;
    // Connecting to a port nobody listens on can, rarely, connect the socket to itself.
    if (!ec && c->sock.local_endpoint(ec) == d->ep) ec = asio::error::connection_refused;
    if (!ec) {
      self->connects.fetch_add(1, std::memory_order_relaxed);
      SetSocketOptions(c->sock);
      c->deadline.expires_after(kHelloTimeout);
      co_await asio::async_write(c->sock, asio::buffer(self->hello_frame), with_ec(ec));
    }
    FrameRead fr = FrameRead::kIoError;
    if (!ec && !self->stopped && !d->stopped) fr = co_await ReadFrame(c->sock, body, ec);
    if (self->stopped || d->stopped) break;
    std::string id;
    if (fr == FrameRead::kOk) {
      id = ParseHello(body);
      if (id.empty()) self->protocol_errors.fetch_add(1, std::memory_order_relaxed);
    } else if (fr == FrameRead::kBadLength) {
      self->protocol_errors.fetch_add(1, std::memory_order_relaxed);
    }
    if (id == self->options.replica_id) {
      is_self = true;
    } else if (!id.empty() && self->DuplicateOutbound(*d, id)) {
      duplicate = true;
    } else if (!id.empty()) {
      failed = false;
      backoff = kBackoffMin;
      c->ClearDeadline();
      self->Register(*c, id);  // its callback may stop us
      if (!self->stopped && !d->stopped) co_await Stream(*self, *d, c, id, where);
    }
    c->Close();
    self->Unregister(*c);
    d->conn.reset();
    if (self->stopped || d->stopped) co_return;
    if (is_self) {
      log::Info("peer mesh: {} is this replica; not dialling it", where);
      self->self_endpoints.insert(d->ep);
      d->stopped = true;
      co_return;
    }
    Duration wait = backoff;
    if (duplicate) {
      log::Debug("peer mesh: {} reaches replica {} already connected", where, id);
      wait = kBackoffMax;
    } else if (failed) {
      self->connect_failures.fetch_add(1, std::memory_order_relaxed);
      log::Debug("peer mesh: cannot connect to {}: {}", where,
                 ec ? ec.message() : std::string("no hello"));
      backoff = std::min<Duration>(backoff * 2, kBackoffMax);
    }
    d->retry.expires_after(wait);
    error_code ignored;
    co_await d->retry.async_wait(with_ec(ignored));
  }
  if (d->conn) {
    d->conn->Close();
    d->conn.reset();
  }
}

awaitable<void> PeerMesh::Impl::AcceptLoop(std::shared_ptr<Impl> self) {
  while (!self->stopped) {
    error_code ec;
    tcp::socket sock(self->io);
    co_await self->acceptor.async_accept(sock, with_ec(ec));
    if (self->stopped) break;
    if (ec) {
      if (ec == asio::error::operation_aborted) break;
      log::Warn("peer mesh: accept: {}", ec.message());
      asio::steady_timer pause(self->io, std::chrono::milliseconds(100));  // e.g. out of fds
      co_await pause.async_wait(with_ec(ec));
      continue;
    }
    auto c = std::make_shared<Conn>(self->io);
    c->sock = std::move(sock);
    self->inbound.insert(c);
    self->Spawn(Serve(self, c));
  }
}

awaitable<void> PeerMesh::Impl::Serve(std::shared_ptr<Impl> self, std::shared_ptr<Conn> c) {
  self->Spawn(Watchdog(c));
  SetSocketOptions(c->sock);
  error_code ec;
  std::string where = EndpointString(c->sock.remote_endpoint(ec));
  // Our hello goes first: the dialler learns who we are (and whether we are itself).
  c->deadline.expires_after(kHelloTimeout);
  co_await asio::async_write(c->sock, asio::buffer(self->hello_frame), with_ec(ec));
  Bytes body;
  FrameRead fr = FrameRead::kIoError;
  if (!ec && !self->stopped) fr = co_await ReadFrame(c->sock, body, ec);
  bool ok = false;
  if (!self->stopped && fr != FrameRead::kIoError) {
    std::string id = fr == FrameRead::kOk ? ParseHello(body) : std::string();
    if (id.empty()) {
      self->protocol_errors.fetch_add(1, std::memory_order_relaxed);
      log::Warn("peer mesh: bad hello from {}", where);
    } else if (id != self->options.replica_id) {
      ok = true;
      c->ClearDeadline();
      self->Register(*c, id);
    }
  }
  std::vector<RoutingRecord> recs;
  while (ok && !self->stopped && !c->closed) {
    fr = co_await ReadFrame(c->sock, body, ec);
    if (self->stopped || fr == FrameRead::kIoError) break;
    json j;
    if (fr == FrameRead::kOk) j = json::from_msgpack(body.begin(), body.end(), true, false);
    bool good = fr == FrameRead::kOk && !j.is_discarded() && j.is_object();
    auto t = good ? j.find("t") : j.end();
    good = good && t != j.end() && t->is_string();
    if (good && t->get_ref<const std::string&>() == "recs") {
      auto r = j.find("r");
      good = r != j.end() && r->is_array();
      recs.clear();
      if (good) {
        recs.resize(r->size());
        for (size_t i = 0; good && i < recs.size(); ++i) good = ParseRecord((*r)[i], recs[i]);
      }
      if (good) {
        self->records_received.fetch_add(recs.size(), std::memory_order_relaxed);
        for (const auto& rec : recs) {
          if (self->stopped || c->closed) break;
          if (self->callbacks.on_record) self->callbacks.on_record(rec);
        }
      }
    }  // other frame types (a later version's) are skipped
    if (!good) {
      self->protocol_errors.fetch_add(1, std::memory_order_relaxed);
      log::Warn("peer mesh: malformed frame from {} (replica {})", where, c->remote_id);
      break;
    }
  }
  c->Close();
  self->Unregister(*c);
  self->inbound.erase(c);
}

void PeerMesh::Impl::Register(Conn& c, const std::string& id) {
  if (stopped) return;
  c.remote_id = id;
  c.registered = true;
  ++ids[id];
  size_t n = ids.size();
  connected.store(n);
  if (n != reported_peers) {
    reported_peers = n;
    if (callbacks.on_peers_changed) callbacks.on_peers_changed(n);
  }
}

void PeerMesh::Impl::Unregister(Conn& c) {
  if (!c.registered) return;
  c.registered = false;
  if (stopped) return;
  auto it = ids.find(c.remote_id);
  if (it != ids.end() && --it->second == 0) ids.erase(it);
  size_t n = ids.size();
  connected.store(n);
  if (n != reported_peers) {
    reported_peers = n;
    if (callbacks.on_peers_changed) callbacks.on_peers_changed(n);
  }
}

void PeerMesh::Impl::Flush() {
  // A bounded batch per turn, so that a flood of records does not hold the io thread.
  std::vector<RoutingRecord> recs;
  bool more = false;
  {
    std::lock_guard lock(pending_mu);
    size_t n = std::min(pending.size(), kFlushBatch);
    recs.assign(std::make_move_iterator(pending.begin()),
                std::make_move_iterator(pending.begin() + n));
    pending.erase(pending.begin(), pending.begin() + n);
    more = !pending.empty();
    if (!more) flush_posted.store(false);  // a Publish from now on posts the next turn
  }
  if (more) {
    auto self = shared_from_this();
    asio::post(io, [self] { self->Flush(); });
  }
  if (stopped || recs.empty()) return;
  std::vector<Dialler*> live;
  for (auto& [ep, d] : diallers)
    if (d->live && d->conn) live.push_back(d.get());
  if (live.empty()) return;
  for (const auto& r : recs) {
    Encoded e = EncodeRecord(r);
    for (auto* d : live) {
      if (d->queue.size() >= kMaxQueue) {
        dropped.fetch_add(1, std::memory_order_relaxed);
      } else {
        d->queue.push_back(e);
      }
    }
  }
  for (auto* d : live) d->conn->wake.cancel();
}

void PeerMesh::Impl::Stop() {
  if (stopped.exchange(true)) return;
  error_code ec;
  acceptor.close(ec);
  for (auto& [spec, p] : peers) {
    p->stopped = true;
    p->timer.cancel();
    p->resolver.cancel();
  }
  for (auto& [ep, d] : diallers) {
    d->stopped = true;
    d->retry.cancel();
    if (d->conn) d->conn->Close();
  }
  for (auto& c : inbound) c->Close();
  ids.clear();
  connected.store(0);
  {
    std::lock_guard lock(pending_mu);
    pending.clear();
  }
}

PeerMesh::PeerMesh(asio::io_context& io, PeerMeshOptions options, PeerMeshCallbacks callbacks)
    : impl_(std::make_shared<Impl>(io, std::move(options), std::move(callbacks))) {}

PeerMesh::~PeerMesh() { Stop(); }

Status PeerMesh::Start() {
  auto& m = *impl_;
  if (m.started.exchange(true)) return Status::Error("peer mesh already started");
  error_code ec;
  auto addr = asio::ip::make_address(m.options.listen_host, ec);
  tcp::endpoint ep;
  if (!ec) {
    ep = tcp::endpoint(addr, m.options.listen_port);
  } else {
    tcp::resolver resolver(m.io);
    auto results =
        resolver.resolve(m.options.listen_host, std::to_string(m.options.listen_port), ec);
    if (ec || results.empty()) {
      return Status::Error(fmt::format("peer mesh: cannot resolve listen host {}: {}",
                                       m.options.listen_host, ec.message()));
    }
    ep = results.begin()->endpoint();
  }
  m.acceptor.open(ep.protocol(), ec);
  if (!ec) m.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) m.acceptor.bind(ep, ec);
  if (!ec) m.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) m.port = m.acceptor.local_endpoint(ec).port();
  if (ec) {
    error_code ignored;
    m.acceptor.close(ignored);
    return Status::Error(
        fmt::format("peer mesh: cannot listen on {}: {}", EndpointString(ep), ec.message()));
  }
  log::Info("peer mesh: replica {} listening on {}:{}", m.options.replica_id, m.options.listen_host,
            m.port);
  auto self = impl_;
  asio::post(m.io, [self] { self->OnStart(); });
  return Status::Ok();
}

uint16_t PeerMesh::port() const { return impl_->port; }

const std::string& PeerMesh::replica_id() const { return impl_->options.replica_id; }

void PeerMesh::Publish(RoutingRecord r) {
  auto& m = *impl_;
  // Nobody to send to: a record published now would reach a peer that connects later in
  // its snapshot anyway.
  if (m.live_outbound.load(std::memory_order_relaxed) == 0 || m.stopped) return;
  {
    std::lock_guard lock(m.pending_mu);
    if (m.pending.size() >= kMaxQueue) {
      m.dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    m.pending.push_back(std::move(r));
  }
  if (!m.flush_posted.exchange(true)) {
    auto self = impl_;
    asio::post(m.io, [self] { self->Flush(); });
  }
}

void PeerMesh::SetPeers(std::vector<std::string> peers) {
  {
    std::lock_guard lock(impl_->peers_mu);
    impl_->desired_peers = std::move(peers);
  }
  auto self = impl_;
  asio::post(impl_->io, [self] { self->ReconcilePeers(); });
}

size_t PeerMesh::connected_peers() const { return impl_->connected.load(); }

PeerMeshStats PeerMesh::stats() const {
  const auto& m = *impl_;
  PeerMeshStats s;
  s.records_sent = m.records_sent.load();
  s.records_received = m.records_received.load();
  s.snapshots_sent = m.snapshots_sent.load();
  s.connects = m.connects.load();
  s.connect_failures = m.connect_failures.load();
  s.protocol_errors = m.protocol_errors.load();
  s.dropped = m.dropped.load();
  return s;
}

void PeerMesh::Stop() {
  if (impl_) impl_->Stop();
}

}  // namespace infergrid::gateway
