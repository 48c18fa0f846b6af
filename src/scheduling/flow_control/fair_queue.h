#pragma once
// The order in which requests waiting in a pool's queue are released (docs/qos.md): strict
// priority between classes; within a class, weighted fair queuing across tenants by estimated
// token cost (start-time fair queuing over per-tenant virtual times, so a tenant of weight 2
// gets twice the tokens of a tenant of weight 1 while both are backlogged, and an idle tenant
// banks no credit); within a tenant, FIFO, except that continuing turns of sessions it has
// seen go before its new sessions (agent-aware admission), until a new session has waited
// `new_session_max_delay_s`.
//
// Pure: no clock (times come in as seconds on the caller's clock), no locks; the caller
// serialises calls. Items are the caller's: the queue stores an opaque pointer.

#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace infergrid::scheduling::flow {

struct ClassSpec {
  std::string name;
  int32_t priority = 0;
  bool sheddable = false;
  double max_wait_s = 0;  // 0: the queue's default timeout
};

struct TenantSpec {
  std::string name;
  double weight = 1;
};

struct FairQueueOptions {
  size_t max_queued = 10000;
  double queue_timeout_s = 60;
  bool prefer_continuing_sessions = true;
  double new_session_max_delay_s = 10;
  double session_ttl_s = 600;     // a session not seen for this long is new again
  size_t max_sessions = 1 << 20;  // sessions remembered; the oldest are forgotten beyond it
};

struct QueuedItem {
  uint64_t id = 0;
  void* user = nullptr;  // the caller's
  std::string tenant;
  std::string klass;
  double cost = 0;  // estimated tokens
  double arrival_s = 0;
  double deadline_s = 0;  // arrival plus the class's wait limit
  bool continuing = false;
};

// Why an arrival was not queued.
enum class Refusal { kNone, kQueueFull, kExpectedWaitTooLong, kUnknownClass };

class FairQueue {
 public:
  FairQueue(std::vector<ClassSpec> classes, std::vector<TenantSpec> tenants,
            FairQueueOptions options);
  ~FairQueue();

  // Replaces classes, tenants and options; queued items stay, in their places. A class or
  // tenant that is gone keeps serving what it has queued (at its last priority and weight).
  void Reconfigure(std::vector<ClassSpec> classes, std::vector<TenantSpec> tenants,
                   FairQueueOptions options);

  struct Arrival {
    void* user = nullptr;
    std::string tenant;  // unknown names get weight 1
    std::string klass;
    double cost = 1;
    uint64_t session = 0;  // 0: none
    double now_s = 0;
  };
  struct Pushed {
    Refusal refusal = Refusal::kNone;
    uint64_t id = 0;             // when queued
    double deadline_s = 0;       // when queued: when it must leave the queue
    double expected_wait_s = 0;  // the estimate it was judged by (0 if unknown)
    bool continuing = false;
  };
  // Queues a request, unless the queue is full, or its class is sheddable and its expected
  // wait (the cost queued at its priority and above over the recent release rate) exceeds
  // the class's wait limit.
  Pushed Push(const Arrival& a);

  // A request that went at once without queueing (nothing was queued and there was room):
  // its session is remembered and its cost counts in the release rate, as if pushed and
  // popped, without touching the fair shares (they matter only while tenants wait).
  void NoteAdmitted(const Arrival& a);

  // The item Pop would release now, or null when empty. Valid until the next mutation.
  const QueuedItem* Peek(double now_s);
  // Releases Peek's item.
  QueuedItem Pop(double now_s);
  // Takes a queued item out (its client left, or its deadline passed); false if not queued.
  bool Remove(uint64_t id, QueuedItem* out = nullptr);

  // A released request finished having used `actual` tokens where `estimated` were charged:
  // its tenant's virtual time is corrected, so fairness holds in tokens actually served.
  void Correct(const std::string& tenant, const std::string& klass, double estimated,
               double actual);

  size_t size() const { return size_; }
  size_t queued(const std::string& tenant, const std::string& klass) const;
  // Seconds a request of `klass` arriving now is expected to wait (0 when unknown).
  double ExpectedWait(const std::string& klass, double now_s) const;
  // The wait limit of a class, in seconds.
  double MaxWait(const std::string& klass) const;
  const ClassSpec* FindClass(const std::string& name) const;
  // Tokens per second released recently (0 when unknown).
  double ReleaseRate(double now_s) const;

 private:
  struct Flow;
  struct Class;
  Flow* FlowFor(const std::string& tenant, const std::string& klass);
  Flow* NextFlow();
  bool UseContinuingLane(const Flow& f, double now_s) const;
  void Activate(Flow* f);
  void Deactivate(Flow* f);
  bool SeenSession(uint64_t session, double now_s);
  void NoteRelease(double cost, double now_s);

  FairQueueOptions options_;
  std::map<std::string, std::unique_ptr<Class>> classes_;
  std::vector<Class*> by_priority_;  // descending
  std::map<std::string, TenantSpec> tenants_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<Flow>> flows_;
  std::unordered_map<uint64_t, Flow*> where_;  // queued id -> its flow
  size_t size_ = 0;
  uint64_t next_id_ = 1;
  // Recent releases (time, cumulative cost) for the release rate.
  std::deque<std::pair<double, double>> releases_;
  double released_ = 0;
  // Sessions seen: id -> last time, with an LRU order for the bound.
  struct Seen {
    double last_s;
    std::list<uint64_t>::iterator lru;
  };
  std::unordered_map<uint64_t, Seen> sessions_;
  std::list<uint64_t> lru_;
};

}  // namespace infergrid::scheduling::flow
