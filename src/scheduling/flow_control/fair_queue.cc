#include "scheduling/flow_control/fair_queue.h"

#include <algorithm>
#include <tuple>

namespace infergrid::scheduling::flow {

namespace {
// Releases older than this no longer count towards the release rate.
constexpr double kRateWindowS = 10;
}  // namespace

struct FairQueue::Class {
  ClassSpec spec;
  bool retired = false;
  double vtime = 0;        // the start tag of the last flow served (the class's virtual time)
  double queued_cost = 0;  // estimated tokens waiting in this class
  // Backlogged flows by (virtual time, serial): the front is served next.
  std::set<std::tuple<double, uint64_t, Flow*>> active;
};

struct FairQueue::Flow {
  std::string tenant;
  Class* cls = nullptr;
  double weight = 1;
  double vtime = 0;
  uint64_t serial = 0;
  bool active = false;
  std::deque<QueuedItem> continuing;  // turns of sessions seen before
  std::deque<QueuedItem> fresh;       // everything else
  bool empty() const { return continuing.empty() && fresh.empty(); }
};

FairQueue::FairQueue(std::vector<ClassSpec> classes, std::vector<TenantSpec> tenants,
                     FairQueueOptions options) {
  Reconfigure(std::move(classes), std::move(tenants), options);
}

FairQueue::~FairQueue() = default;

void FairQueue::Reconfigure(std::vector<ClassSpec> classes, std::vector<TenantSpec> tenants,
                            FairQueueOptions options) {
  options_ = options;
  for (auto& [name, c] : classes_) c->retired = true;
  for (auto& spec : classes) {
    auto& c = classes_[spec.name];
    if (!c) c = std::make_unique<Class>();
    c->spec = spec;
    c->retired = false;
  }
  by_priority_.clear();
  for (auto& [name, c] : classes_) by_priority_.push_back(c.get());
  std::stable_sort(by_priority_.begin(), by_priority_.end(), [](const Class* a, const Class* b) {
    return a->spec.priority > b->spec.priority;
  });
  tenants_.clear();
  for (auto& t : tenants) tenants_[t.name] = t;
  for (auto& [key, f] : flows_) {
    auto it = tenants_.find(f->tenant);
    if (it == tenants_.end() || it->second.weight == f->weight) continue;
    bool was_active = f->active;
    if (was_active) Deactivate(f.get());
    f->weight = it->second.weight;
    if (was_active) Activate(f.get());
  }
}

const ClassSpec* FairQueue::FindClass(const std::string& name) const {
  auto it = classes_.find(name);
  if (it == classes_.end() || it->second->retired) return nullptr;
  return &it->second->spec;
}

double FairQueue::MaxWait(const std::string& klass) const {
  auto it = classes_.find(klass);
  if (it != classes_.end() && it->second->spec.max_wait_s > 0) return it->second->spec.max_wait_s;
  return options_.queue_timeout_s;
}

FairQueue::Flow* FairQueue::FlowFor(const std::string& tenant, const std::string& klass) {
  auto& f = flows_[{tenant, klass}];
  if (!f) {
    f = std::make_unique<Flow>();
    f->tenant = tenant;
    f->cls = classes_.at(klass).get();
    auto t = tenants_.find(tenant);
    f->weight = t == tenants_.end() ? 1.0 : t->second.weight;
    f->serial = flows_.size();
  }
  return f.get();
}

void FairQueue::Activate(Flow* f) {
  // A flow that was idle starts at the class's virtual time: it banked no credit.
  if (!f->active) f->vtime = std::max(f->vtime, f->cls->vtime);
  f->cls->active.emplace(f->vtime, f->serial, f);
  f->active = true;
}

void FairQueue::Deactivate(Flow* f) {
  f->cls->active.erase({f->vtime, f->serial, f});
  f->active = false;
}

bool FairQueue::SeenSession(uint64_t session, double now_s) {
  auto it = sessions_.find(session);
  if (it != sessions_.end()) {
    bool recent = now_s - it->second.last_s <= options_.session_ttl_s;
    it->second.last_s = now_s;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return recent;
  }
  lru_.push_front(session);
  sessions_.emplace(session, Seen{now_s, lru_.begin()});
  while (sessions_.size() > std::max<size_t>(1, options_.max_sessions)) {
    sessions_.erase(lru_.back());
    lru_.pop_back();
  }
  return false;
}

double FairQueue::ReleaseRate(double now_s) const {
  if (releases_.size() < 2) return 0;
  double span = now_s - releases_.front().first;
  if (span < 0.5) return 0;
  return (released_ - releases_.front().second) / span;
}

double FairQueue::ExpectedWait(const std::string& klass, double now_s) const {
  auto it = classes_.find(klass);
  if (it == classes_.end()) return 0;
  double rate = ReleaseRate(now_s);
  if (rate <= 0) return 0;
  double ahead = 0;
  for (const Class* c : by_priority_) {
    if (c->spec.priority >= it->second->spec.priority) ahead += c->queued_cost;
  }
  return ahead / rate;
}

FairQueue::Pushed FairQueue::Push(const Arrival& a) {
  Pushed p;
  const ClassSpec* spec = FindClass(a.klass);
  if (spec == nullptr) {
    p.refusal = Refusal::kUnknownClass;
    return p;
  }
  if (size_ >= options_.max_queued) {
    p.refusal = Refusal::kQueueFull;
    return p;
  }
  p.expected_wait_s = ExpectedWait(a.klass, a.now_s);
  if (spec->sheddable && p.expected_wait_s > MaxWait(a.klass)) {
    p.refusal = Refusal::kExpectedWaitTooLong;
    return p;
  }
  p.continuing = a.session != 0 && SeenSession(a.session, a.now_s);
  Flow* f = FlowFor(a.tenant, a.klass);
  QueuedItem item;
  item.id = next_id_++;
  item.user = a.user;
  item.tenant = a.tenant;
  item.klass = a.klass;
  item.cost = std::max(0.0, a.cost);
  item.arrival_s = a.now_s;
  item.deadline_s = a.now_s + MaxWait(a.klass);
  item.continuing = p.continuing;
  bool was_empty = f->empty();
  (p.continuing ? f->continuing : f->fresh).push_back(item);
  f->cls->queued_cost += item.cost;
  where_[item.id] = f;
  ++size_;
  if (was_empty) Activate(f);
  p.id = item.id;
  p.deadline_s = item.deadline_s;
  return p;
}

bool FairQueue::UseContinuingLane(const Flow& f, double now_s) const {
  if (f.continuing.empty()) return false;
  if (f.fresh.empty()) return true;
  if (!options_.prefer_continuing_sessions ||
      now_s - f.fresh.front().arrival_s >= options_.new_session_max_delay_s) {
    return f.continuing.front().id < f.fresh.front().id;  // plain FIFO
  }
  return true;
}

FairQueue::Flow* FairQueue::NextFlow() {
  for (Class* c : by_priority_) {
    if (!c->active.empty()) return std::get<2>(*c->active.begin());
  }
  return nullptr;
}

const QueuedItem* FairQueue::Peek(double now_s) {
  Flow* f = NextFlow();
  if (f == nullptr) return nullptr;
  return UseContinuingLane(*f, now_s) ? &f->continuing.front() : &f->fresh.front();
}

QueuedItem FairQueue::Pop(double now_s) {
  Flow* f = NextFlow();
  auto& lane = UseContinuingLane(*f, now_s) ? f->continuing : f->fresh;
  QueuedItem item = std::move(lane.front());
  lane.pop_front();
  --size_;
  where_.erase(item.id);
  f->cls->queued_cost = std::max(0.0, f->cls->queued_cost - item.cost);
  // Start-time fair queuing: the class's clock moves to the start tag of what is served.
  Deactivate(f);
  f->cls->vtime = f->vtime;
  f->vtime += item.cost / f->weight;
  if (!f->empty()) {
    f->cls->active.emplace(f->vtime, f->serial, f);
    f->active = true;
  }
  NoteRelease(item.cost, now_s);
  return item;
}

void FairQueue::NoteRelease(double cost, double now_s) {
  released_ += cost;
  releases_.emplace_back(now_s, released_);
  while (releases_.size() > 2 && releases_.front().first < now_s - kRateWindowS) {
    releases_.pop_front();
  }
}

void FairQueue::NoteAdmitted(const Arrival& a) {
  if (a.session != 0) SeenSession(a.session, a.now_s);
  NoteRelease(std::max(0.0, a.cost), a.now_s);
}

bool FairQueue::Remove(uint64_t id, QueuedItem* out) {
  auto it = where_.find(id);
  if (it == where_.end()) return false;
  Flow* f = it->second;
  where_.erase(it);
  for (auto* lane : {&f->continuing, &f->fresh}) {
    auto pos =
        std::find_if(lane->begin(), lane->end(), [id](const QueuedItem& q) { return q.id == id; });
    if (pos == lane->end()) continue;
    f->cls->queued_cost = std::max(0.0, f->cls->queued_cost - pos->cost);
    if (out) *out = std::move(*pos);
    lane->erase(pos);
    --size_;
    break;
  }
  if (f->empty() && f->active) Deactivate(f);
  return true;
}

void FairQueue::Correct(const std::string& tenant, const std::string& klass, double estimated,
                        double actual) {
  auto it = flows_.find({tenant, klass});
  if (it == flows_.end()) return;
  Flow* f = it->second.get();
  double delta = (actual - estimated) / f->weight;
  if (f->active) {
    Deactivate(f);
    f->vtime += delta;
    f->cls->active.emplace(f->vtime, f->serial, f);
    f->active = true;
  } else {
    f->vtime += delta;
  }
}

size_t FairQueue::queued(const std::string& tenant, const std::string& klass) const {
  auto it = flows_.find({tenant, klass});
  if (it == flows_.end()) return 0;
  return it->second->continuing.size() + it->second->fresh.size();
}

}  // namespace infergrid::scheduling::flow
