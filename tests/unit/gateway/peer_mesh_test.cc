#include "gateway/peer_mesh.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

namespace infergrid::gateway {
namespace {

using namespace std::chrono_literals;
namespace asio = http::asio;

// An io_context running on its own thread, as the gateway's control thread does.
class IoThread {
 public:
  IoThread() : guard_(asio::make_work_guard(io_)), thread_([this] { io_.run(); }) {}
  ~IoThread() {
    guard_.reset();
    io_.stop();
    thread_.join();
  }
  asio::io_context& io() { return io_; }
  // Runs `f` on the io thread and waits for it.
  template <typename F>
  void Run(F f) {
    std::promise<void> done;
    asio::post(io_, [&] {
      f();
      done.set_value();
    });
    done.get_future().wait();
  }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::thread thread_;
};

// A replica: its mesh, and what its callbacks saw.
struct Node {
  Node(IoThread& t, std::vector<RoutingRecord> snap, uint16_t port) : io(t), snapshot(snap) {
    PeerMeshOptions o;
    o.listen_port = port;
    PeerMeshCallbacks cb;
    cb.on_record = [this](const RoutingRecord& r) {
      std::lock_guard lock(mu);
      received.push_back(r);
    };
    cb.snapshot = [this] {
      ++snapshots_taken;
      return snapshot;
    };
    cb.on_peers_changed = [this](size_t n) {
      std::lock_guard lock(mu);
      peer_counts.push_back(n);
    };
    mesh = std::make_unique<PeerMesh>(t.io(), o, cb);
  }
  ~Node() { Stop(); }
  void Stop() {
    io.Run([this] {
      if (mesh) mesh->Stop();
      mesh.reset();
    });
  }
  std::vector<RoutingRecord> Received() {
    std::lock_guard lock(mu);
    return received;
  }
  size_t ReceivedCount() {
    std::lock_guard lock(mu);
    return received.size();
  }
  std::vector<size_t> PeerCounts() {
    std::lock_guard lock(mu);
    return peer_counts;
  }
  std::string Address() const { return "127.0.0.1:" + std::to_string(mesh->port()); }

  IoThread& io;
  const std::vector<RoutingRecord> snapshot;
  std::atomic<int> snapshots_taken{0};
  std::mutex mu;
  std::vector<RoutingRecord> received;
  std::vector<size_t> peer_counts;
  std::unique_ptr<PeerMesh> mesh;
};

std::unique_ptr<Node> StartNode(IoThread& t, std::vector<RoutingRecord> snapshot = {},
                                uint16_t port = 0) {
  auto n = std::make_unique<Node>(t, std::move(snapshot), port);
  Status s = n->mesh->Start();
  EXPECT_TRUE(s.ok()) << s.message();
  return n;
}

// Polls `pred` until it holds or `limit` passes; returns its last value.
template <typename F>
bool WaitFor(F pred, std::chrono::milliseconds limit = 10s) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// Checks that `pred` holds throughout `span` (for things that must not happen).
template <typename F>
bool HoldsFor(F pred, std::chrono::milliseconds span) {
  auto until = std::chrono::steady_clock::now() + span;
  while (std::chrono::steady_clock::now() < until) {
    if (!pred()) return false;
    std::this_thread::sleep_for(2ms);
  }
  return pred();
}

RoutingRecord Rec(std::string pool, uint32_t tokens, std::string session = "") {
  RoutingRecord r;
  r.pool = std::move(pool);
  r.endpoint_url = "http://10.0.0.1:8000";
  r.session_key = std::move(session);
  r.prefix_keys = {tokens, uint64_t{tokens} << 32};
  r.prompt_tokens = tokens;
  return r;
}

// Both directions connected and each side streaming to the other.
bool Linked(Node& a, Node& b) {
  return a.snapshots_taken >= 1 && b.snapshots_taken >= 1 && a.mesh->connected_peers() == 1 &&
         b.mesh->connected_peers() == 1;
}

TEST(PeerMesh, RecordsFlowBothWaysIntact) {
  IoThread t;
  auto a = StartNode(t);
  auto b = StartNode(t);
  EXPECT_NE(a->mesh->replica_id(), b->mesh->replica_id());
  a->mesh->SetPeers({b->Address()});
  b->mesh->SetPeers({a->Address()});
  ASSERT_TRUE(WaitFor([&] { return Linked(*a, *b); }));

  RoutingRecord big;
  big.pool = "chat";
  big.endpoint_url = "http://gpu-7.internal:8000";
  big.session_key = "session-\xe2\x9c\x93-42";
  for (uint64_t i = 0; i < 1000; ++i) big.prefix_keys.push_back(i * 0x9e3779b97f4a7c15ull);
  big.prefix_keys[1] = std::numeric_limits<uint64_t>::max();
  big.prompt_tokens = 4000000000u;
  a->mesh->Publish(big);
  ASSERT_TRUE(WaitFor([&] { return b->ReceivedCount() >= 1; }));
  EXPECT_EQ(b->Received()[0], big);

  RoutingRecord small = Rec("embed", 7);  // no session, few keys
  small.prefix_keys.clear();
  b->mesh->Publish(small);
  ASSERT_TRUE(WaitFor([&] { return a->ReceivedCount() >= 1; }));
  EXPECT_EQ(a->Received()[0], small);

  EXPECT_EQ(a->mesh->connected_peers(), 1u);
  EXPECT_EQ(b->mesh->connected_peers(), 1u);
  EXPECT_EQ(b->ReceivedCount(), 1u);
  EXPECT_EQ(a->ReceivedCount(), 1u);
  EXPECT_GE(a->mesh->stats().records_sent, 1u);
  EXPECT_GE(b->mesh->stats().records_received, 1u);
  EXPECT_EQ(a->mesh->stats().protocol_errors, 0u);
  EXPECT_EQ(a->PeerCounts(), std::vector<size_t>{1});
}

TEST(PeerMesh, SnapshotArrivesInOrderBeforeLiveRecords) {
  IoThread t;
  auto a = StartNode(t, {Rec("snap", 1), Rec("snap", 2, "s"), Rec("snap", 3)});
  // A publishes all along, from another thread, before and after B appears.
  std::atomic<bool> done{false};
  std::thread publisher([&] {
    for (uint32_t i = 0; !done; ++i) {
      a->mesh->Publish(Rec("live", i));
      std::this_thread::sleep_for(1ms);
    }
  });
  auto b = StartNode(t);
  b->mesh->SetPeers({a->Address()});
  a->mesh->SetPeers({b->Address()});
  bool got = WaitFor([&] { return b->ReceivedCount() >= 13; });
  done = true;
  publisher.join();
  ASSERT_TRUE(got);
  auto recs = b->Received();
  EXPECT_EQ(recs[0], Rec("snap", 1));
  EXPECT_EQ(recs[1], Rec("snap", 2, "s"));
  EXPECT_EQ(recs[2], Rec("snap", 3));
  for (size_t i = 3; i < recs.size(); ++i) {
    EXPECT_EQ(recs[i].pool, "live") << i;
    if (i > 3) {
      EXPECT_GT(recs[i].prompt_tokens, recs[i - 1].prompt_tokens) << i;
    }
  }
  EXPECT_EQ(a->mesh->stats().snapshots_sent, 1u);
}

TEST(PeerMesh, LargeSnapshotSpansFramesInOrder) {
  IoThread t;
  std::vector<RoutingRecord> snap;
  for (uint32_t i = 0; i < 12000; ++i) snap.push_back(Rec("snap", i));
  auto a = StartNode(t, snap);
  auto b = StartNode(t);
  a->mesh->SetPeers({b->Address()});
  ASSERT_TRUE(WaitFor([&] { return b->ReceivedCount() >= snap.size(); }));
  EXPECT_EQ(b->Received(), snap);
  EXPECT_EQ(a->mesh->stats().records_sent, snap.size());
}

TEST(PeerMesh, ReconnectsAndReconcilesAfterPeerRestart) {
  IoThread t;
  auto a = StartNode(t, {Rec("snap", 1), Rec("snap", 2)});
  auto b = StartNode(t);
  a->mesh->SetPeers({b->Address()});
  b->mesh->SetPeers({a->Address()});
  ASSERT_TRUE(WaitFor([&] { return Linked(*a, *b); }));
  uint16_t b_port = b->mesh->port();

  b.reset();  // Stop and destroy
  ASSERT_TRUE(WaitFor([&] { return a->mesh->connected_peers() == 0; }));
  for (uint32_t i = 0; i < 100; ++i) a->mesh->Publish(Rec("while-away", i));

  auto b2 = StartNode(t, {}, b_port);
  ASSERT_EQ(b2->mesh->port(), b_port);
  b2->mesh->SetPeers({a->Address()});
  ASSERT_TRUE(WaitFor([&] {
    return a->snapshots_taken >= 2 && a->mesh->connected_peers() == 1 && b2->ReceivedCount() >= 2;
  }));
  a->mesh->Publish(Rec("live", 9));
  ASSERT_TRUE(WaitFor([&] { return b2->ReceivedCount() >= 3; }));
  auto recs = b2->Received();
  EXPECT_EQ(recs[0], Rec("snap", 1));
  EXPECT_EQ(recs[1], Rec("snap", 2));
  EXPECT_EQ(recs[2], Rec("live", 9));
  EXPECT_EQ(a->PeerCounts(), (std::vector<size_t>{1, 0, 1}));
  EXPECT_GE(a->mesh->stats().connects, 2u);
}

TEST(PeerMesh, DialingItselfIsDetectedAndDropped) {
  IoThread t;
  auto m = StartNode(t, {Rec("snap", 1)});
  m->mesh->SetPeers({m->Address()});
  ASSERT_TRUE(WaitFor([&] { return m->mesh->stats().connects >= 1; }));
  for (uint32_t i = 0; i < 10; ++i) m->mesh->Publish(Rec("mine", i));
  // It never counts itself, never sends itself a snapshot or records, and does not redial
  // (backoff would have redialled within this span).
  EXPECT_TRUE(HoldsFor(
      [&] {
        return m->mesh->connected_peers() == 0 && m->ReceivedCount() == 0 &&
               m->snapshots_taken == 0 && m->mesh->stats().connects == 1;
      },
      600ms));
  EXPECT_TRUE(m->PeerCounts().empty());
  EXPECT_EQ(m->mesh->stats().protocol_errors, 0u);
}

// Connects to 127.0.0.1:port, sends `bytes`, and reports whether the server closes the
// connection within a few seconds (reading and ignoring whatever it sends first).
bool SendAndExpectClose(uint16_t port, const std::string& bytes) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  bool closed = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size())) {
    char buf[4096];
    while (true) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n > 0) continue;
      closed = n == 0 || errno == ECONNRESET;
      break;
    }
  }
  ::close(fd);
  return closed;
}

std::string Frame(const nlohmann::json& j) {
  std::vector<uint8_t> body = nlohmann::json::to_msgpack(j);
  uint32_t n = static_cast<uint32_t>(body.size());
  std::string out = {static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                     static_cast<char>(n >> 8), static_cast<char>(n)};
  out.append(reinterpret_cast<const char*>(body.data()), body.size());
  return out;
}

TEST(PeerMesh, GarbageClosesTheConnectionAndIsCounted) {
  IoThread t;
  auto m = StartNode(t);
  uint16_t port = m->mesh->port();
  // A length over 64 MiB.
  EXPECT_TRUE(SendAndExpectClose(port, std::string(4, '\xff')));
  // Bytes that are not MessagePack (0xc1 is never used).
  EXPECT_TRUE(SendAndExpectClose(port, std::string("\0\0\0\x05\xc1\xc1\xc1\xc1\xc1", 9)));
  // MessagePack, but records before any hello.
  EXPECT_TRUE(SendAndExpectClose(port, Frame({{"t", "recs"}, {"r", nlohmann::json::array()}})));
  // A good hello, then a record whose keys are not integers: nothing of that frame applies.
  auto hello = Frame({{"t", "hello"}, {"v", 1}, {"id", "intruder"}});
  nlohmann::json good_rec = {{"p", "x"}, {"e", "http://a:1"}, {"s", ""}, {"k", {1}}, {"n", 1}};
  nlohmann::json bad_rec = {{"p", "x"}, {"e", "http://a:1"}, {"s", ""}, {"k", {"one"}}, {"n", 1}};
  auto recs = Frame({{"t", "recs"}, {"r", {good_rec, bad_rec}}});
  EXPECT_TRUE(SendAndExpectClose(port, hello + recs));
  EXPECT_TRUE(WaitFor([&] { return m->mesh->stats().protocol_errors >= 4; }));
  EXPECT_EQ(m->ReceivedCount(), 0u);

  // Still serves a real peer afterwards.
  auto b = StartNode(t);
  b->mesh->SetPeers({m->Address()});
  ASSERT_TRUE(WaitFor([&] { return b->snapshots_taken >= 1 && m->mesh->connected_peers() == 1; }));
  b->mesh->Publish(Rec("after", 1));
  ASSERT_TRUE(WaitFor([&] { return m->ReceivedCount() >= 1; }));
  EXPECT_EQ(m->Received()[0], Rec("after", 1));
  EXPECT_TRUE(WaitFor([&] { return m->mesh->connected_peers() == 1; }));
}

TEST(PeerMesh, FullMeshOfThreeDeliversEachRecordOnce) {
  IoThread t;
  std::vector<std::unique_ptr<Node>> n;
  for (int i = 0; i < 3; ++i) n.push_back(StartNode(t));
  for (int i = 0; i < 3; ++i) {
    std::vector<std::string> peers;
    for (int j = 0; j < 3; ++j)
      if (j != i) peers.push_back(n[j]->Address());
    n[i]->mesh->SetPeers(peers);
  }
  ASSERT_TRUE(WaitFor([&] {
    for (auto& x : n)
      if (x->snapshots_taken < 2 || x->mesh->connected_peers() != 2) return false;
    return true;
  }));
  for (int i = 0; i < 3; ++i) n[i]->mesh->Publish(Rec("from" + std::to_string(i), i));
  ASSERT_TRUE(WaitFor([&] {
    for (auto& x : n)
      if (x->ReceivedCount() < 2) return false;
    return true;
  }));
  // Nothing more arrives: no duplicates, no echoes.
  EXPECT_TRUE(HoldsFor(
      [&] {
        for (auto& x : n)
          if (x->ReceivedCount() != 2) return false;
        return true;
      },
      200ms));
  for (int i = 0; i < 3; ++i) {
    std::multiset<std::string> pools;
    for (const auto& r : n[i]->Received()) pools.insert(r.pool);
    std::multiset<std::string> want;
    for (int j = 0; j < 3; ++j)
      if (j != i) want.insert("from" + std::to_string(j));
    EXPECT_EQ(pools, want) << "replica " << i;
  }
}

TEST(PeerMesh, SetPeersClosesConnectionsToPeersNoLongerListed) {
  IoThread t;
  auto a = StartNode(t);
  auto b = StartNode(t);
  a->mesh->SetPeers({b->Address()});  // one direction only
  ASSERT_TRUE(
      WaitFor([&] { return a->mesh->connected_peers() == 1 && b->mesh->connected_peers() == 1; }));
  a->mesh->SetPeers({});
  ASSERT_TRUE(
      WaitFor([&] { return a->mesh->connected_peers() == 0 && b->mesh->connected_peers() == 0; }));
  EXPECT_EQ(b->PeerCounts(), (std::vector<size_t>{1, 0}));
  a->mesh->Publish(Rec("nobody", 1));
  EXPECT_EQ(b->ReceivedCount(), 0u);
}

TEST(PeerMesh, NoCallbackAfterStop) {
  IoThread t;
  auto a = StartNode(t);
  auto b = StartNode(t);
  a->mesh->SetPeers({b->Address()});
  b->mesh->SetPeers({a->Address()});
  ASSERT_TRUE(WaitFor([&] { return Linked(*a, *b); }));
  std::atomic<bool> stop{false};
  std::thread publisher([&] {
    for (uint32_t i = 0; !stop; ++i) {
      a->mesh->Publish(Rec("flood", i));
      if (i % 16 == 0) std::this_thread::sleep_for(100us);
    }
  });
  bool flowing = WaitFor([&] { return b->ReceivedCount() >= 100; });
  if (!flowing) {
    stop = true;
    publisher.join();
    FAIL() << "records did not flow";
  }
  t.Run([&] { b->mesh->Stop(); });
  size_t at_stop = b->ReceivedCount();
  auto counts_at_stop = b->PeerCounts();
  EXPECT_EQ(b->mesh->connected_peers(), 0u);
  std::this_thread::sleep_for(50ms);  // give a late callback the chance to show up
  stop = true;
  publisher.join();
  EXPECT_EQ(b->ReceivedCount(), at_stop);
  EXPECT_EQ(b->PeerCounts(), counts_at_stop);
  EXPECT_TRUE(WaitFor([&] { return a->mesh->connected_peers() == 0; }));
}

}  // namespace
}  // namespace infergrid::gateway
