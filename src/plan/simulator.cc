#include "plan/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <memory>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "common/hash.h"
#include "engine_model/engine.h"
#include "plan/policy.h"
#include "plan/stats.h"
#include "scheduling/flow_control/saturation.h"
#include "tokenizer/tokenizer.h"
#include "workload/conversation.h"
#include "workload/mooncake.h"

namespace infergrid::plan {

namespace {

using engine_model::Engine;
using engine_model::EngineStats;
using engine_model::FinishReason;
using workload::Client;
using workload::TurnPlan;
using Clock = std::chrono::steady_clock;

enum class Kind : uint8_t {
  kStepEnd,
  kTurn,
  kSessionArrival,
  kScrape,
  kWindowStart,
  kWindowEnd,
  kTraceArrival,  // the trace's next timestamped request
};

struct Event {
  double t;
  uint64_t seq;  // insertion order breaks ties, so runs are deterministic
  Kind kind;
  uint32_t id;
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

struct ServerState {
  std::unique_ptr<Engine> engine;
  bool busy = false;
  double busy_in_window = 0;
  uint64_t tokens_in_window = 0;  // prompt and output tokens computed by steps ending in it
  uint32_t in_flight = 0, prefilling = 0;
  uint64_t prompt_tokens = 0, prefill_tokens = 0;
  double ttft_ewma = 0;
  bool have_ttft = false;
  bool scraped = false;
  double running = 0, waiting = 0, kv = 0;
  std::vector<uint32_t> req_of;  // engine request id -> request slot
  EngineStats at_start, at_end;
  std::string url;
  std::map<std::string, std::string> labels;
};

struct ClientState {
  std::unique_ptr<Client> client;
  workload::TokenConversation convo{16};
  std::optional<TurnPlan> next;
  // A turn held in the gateway's queue (flow control): its plan and when it arrived.
  std::optional<TurnPlan> held;
  double held_since = 0;
  uint64_t last_session = 0;
  size_t last_server = SIZE_MAX;
  // A trace's request (no Client): its max_tokens, and its session's name.
  bool traced = false;
  uint32_t max_tokens = 0;
  std::string trace_session;
};

struct Req {
  uint32_t client = 0;
  uint32_t server = 0;
  uint64_t id = 0;
  double arrival = 0, first = -1, last = 0;
  uint32_t prompt_tokens = 0;
  uint32_t prefill_tokens = 0;  // the prompt less what the policy expected cached
  uint32_t produced = 0;
  uint32_t output_tokens = 0;  // planned
  uint64_t output_seed = 0;
  bool measured = false;
  RequestInfo info;  // without the prompt, for OnCompleted
};

class Simulation {
 public:
  Simulation(const Fleet& fleet, const workload::WorkloadSpec& w, const SimOptions& o)
      : fleet_(fleet), w_(w), o_(o) {}

  Status Init(const std::string& policy, const config::Gateway* gateway) {
    for (const Server& s : fleet_.servers) {
      ServerState st;
      st.engine = std::make_unique<Engine>(s.setup.engine, s.setup.hw);
      st.url = s.name;
      st.labels = {{"group", fleet_.group_names[s.group]},
                   {"accelerator", s.setup.hw.accelerator->name}};
      servers_.push_back(std::move(st));
      engines_.push_back(servers_.back().engine.get());
      max_model_len_.push_back(s.setup.engine.max_model_len);
    }
    PolicyContext ctx{&fleet_, engines_, o_.seed};
    IG_ASSIGN_OR_RETURN(policy_, MakePolicy(policy, ctx, gateway));
    // infergrid's own profiles come with its flow control, as the live gateway runs them:
    // a turn that no server has room for waits in the gateway (docs/qos.md).
    flow_ = (policy == "infergrid" || policy.rfind("profile:", 0) == 0) &&
            (gateway == nullptr || gateway->flow_control.enabled);
    if (gateway != nullptr) {
      const auto& sat = gateway->flow_control.saturation;
      thresholds_.max_requests = sat.max_requests_per_endpoint;
      thresholds_.kv_cache_utilization = sat.kv_cache_utilization;
      thresholds_.queue_depth = sat.queue_depth;
    }
    live_.resize(servers_.size());
    snaps_.resize(servers_.size());
    for (size_t i = 0; i < servers_.size(); ++i) {
      snaps_[i].index = i;
      snaps_[i].url = &servers_[i].url;
      snaps_[i].labels = &servers_[i].labels;
      snaps_[i].capacity = fleet_.servers[i].capacity;
    }
    model_ = fleet_.servers.empty() ? "" : fleet_.servers[0].setup.hw.model->name;
    return Status::Ok();
  }

  PolicyReport Run();
  const Status& trace_status() const { return trace_status_; }
  // Replays `trace` instead of the workload's clients. Call before Run.
  Status UseTrace(const TraceReplay& trace);

 private:
  void Push(double t, Kind k, uint32_t id) { events_.push(Event{t, seq_++, k, id}); }
  void StartClients();
  void ScheduleNext(uint32_t c, double t);
  void OnTurn(uint32_t c, double t);
  // Routes client c's turn `plan` (arrived at `arrival`) now, at t; false if flow control
  // holds it (no server has room).
  bool RouteTurn(uint32_t c, const TurnPlan& plan, double arrival, double t);
  void ReleaseHeld(double t);
  void OnStepEnd(uint32_t s, double t);
  void StartStep(uint32_t s, double t);
  void Complete(uint32_t slot, double t, bool ok);
  uint32_t NewClient(size_t group, uint64_t index, bool open_loop);
  uint32_t NewSlot();
  // Trace replay: reads up to the next timestamped request and schedules its arrival.
  void ReadTrace();
  // A trace request arrives now.
  void TraceArrive(workload::MooncakeRequest r, double t);
  // Its session's next turn, if one waits for this one to end.
  void TraceSessionNext(const std::string& session, double t);
  bool InWindow(double t) const { return t >= w_.warmup_s && t < w_.duration_s; }

  const Fleet& fleet_;
  const workload::WorkloadSpec& w_;
  SimOptions o_;
  std::unique_ptr<Policy> policy_;
  std::vector<ServerState> servers_;
  std::vector<const Engine*> engines_;
  std::vector<uint32_t> max_model_len_;
  std::vector<EndpointSnapshot> snaps_;
  std::string model_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  uint64_t seq_ = 0;

  // Trace replay.
  const TraceReplay* trace_ = nullptr;
  std::unique_ptr<workload::MooncakeReader> reader_;
  std::optional<workload::MooncakeRequest> pending_;  // the next timestamped request
  double trace_t0_ms_ = -1;
  double trace_last_at_ = 0;
  struct TraceSession {
    std::deque<workload::MooncakeRequest> waiting;  // turns that follow by delay
    uint32_t in_flight = 0;                         // its turns sent and not finished
    bool scheduled = false;                         // the next waiting turn has its event
    double ended = -1;                              // when its last turn ended
    size_t last_server = SIZE_MAX;                  // where its last turn went
  };
  // Schedules the session's next waiting turn if none of its turns is in flight: `delay`
  // after its last turn ended (or after `base` if none has), never before `now`.
  void ScheduleSessionTurn(const std::string& session, TraceSession& s, double base, double now);
  double now_ = 0;  // the event loop's time
  std::unordered_map<std::string, TraceSession> trace_sessions_;
  Status trace_status_;

  std::vector<ClientState> clients_;
  std::vector<uint32_t> free_clients_;
  std::vector<uint64_t> open_loop_count_;
  std::mt19937_64 arrivals_rng_;
  std::vector<Req> reqs_;
  std::vector<uint32_t> free_reqs_;
  uint64_t next_request_id_ = 1;
  uint64_t in_flight_ = 0;
  RequestInfo info_;
  std::vector<uint32_t> scratch_tokens_;
  // Flow control (infergrid's policies only).
  bool flow_ = false;
  scheduling::flow::SaturationThresholds thresholds_;
  std::deque<uint32_t> held_;                // clients whose turn waits, in arrival order
  std::vector<std::vector<uint32_t>> live_;  // per server: its requests' slots
  std::vector<EndpointSnapshot> roomy_;
  std::vector<scheduling::flow::RunningRequest> peak_scratch_;

  // Measurements.
  std::vector<double> ttft_, e2e_;
  LogHistogram itl_;
  uint64_t window_tokens_ = 0;
  uint64_t rejected_ = 0;
  uint64_t session_turns_ = 0, session_moves_ = 0;
  uint64_t decisions_ = 0;
  double decision_s_ = 0;
};

uint32_t Simulation::NewSlot() {
  uint32_t c;
  if (!free_clients_.empty()) {
    c = free_clients_.back();
    free_clients_.pop_back();
  } else {
    c = static_cast<uint32_t>(clients_.size());
    clients_.emplace_back();
  }
  return c;
}

Status Simulation::UseTrace(const TraceReplay& trace) {
  trace_ = &trace;
  IG_ASSIGN_OR_RETURN(reader_, workload::MooncakeReader::Open(trace.path, trace.block_size));
  return Status::Ok();
}

void Simulation::ReadTrace() {
  while (true) {
    auto next = reader_->Next();
    if (!next.ok()) {
      trace_status_ = next.status();  // reported by SimulateTrace; the run stops reading
      return;
    }
    if (!next->has_value()) return;
    workload::MooncakeRequest r = std::move(**next);
    if (r.timestamp_ms < 0) {  // follows its session's previous turn by `delay`
      std::string session = r.session_id;
      TraceSession& s = trace_sessions_[session];
      s.waiting.push_back(std::move(r));
      ScheduleSessionTurn(session, s, trace_last_at_, now_);
      continue;
    }
    if (r.timestamp_ms < trace_->from_ms) continue;
    if (trace_->to_ms >= 0 && r.timestamp_ms >= trace_->to_ms) return;
    if (trace_t0_ms_ < 0) trace_t0_ms_ = r.timestamp_ms;
    double at = (r.timestamp_ms - trace_t0_ms_) / 1000 / trace_->speed;
    trace_last_at_ = at;
    pending_ = std::move(r);
    Push(at, Kind::kTraceArrival, 0);
    return;
  }
}

void Simulation::TraceArrive(workload::MooncakeRequest r, double t) {
  uint32_t c = NewSlot();
  ClientState& cs = clients_[c];
  cs.client.reset();
  cs.traced = true;
  cs.max_tokens = std::max(1u, r.output_length);
  cs.trace_session = r.session_id;
  cs.convo = workload::TokenConversation(fleet_.block_size);
  scratch_tokens_.clear();
  if (r.text_input) {
    // The prompt itself: tokenized as the simulated servers would (a completion's prompt).
    scratch_tokens_ = tokenizer::Tokenize(*r.text_input, /*add_special_tokens=*/true);
  } else {
    workload::SynthesizePromptTokens(r, trace_->block_size, &scratch_tokens_);
  }
  cs.convo.Append(scratch_tokens_);
  TurnPlan plan;
  plan.output_tokens = std::max(1u, r.output_length);
  plan.output_seed = workload::BlockSeed(r.line) ^ 0x5eedull;
  plan.session_key = r.session_id;
  plan.session_id = r.session_id.empty() ? 0 : std::hash<std::string>{}(r.session_id);
  if (!r.session_id.empty()) ++trace_sessions_[r.session_id].in_flight;
  cs.next = std::move(plan);
  OnTurn(c, t);
}

void Simulation::ScheduleSessionTurn(const std::string& session, TraceSession& s, double base,
                                     double now) {
  if (s.in_flight > 0 || s.scheduled || s.waiting.empty()) return;
  double at = (s.ended >= 0 ? s.ended : base) + s.waiting.front().delay_ms / 1000 / trace_->speed;
  s.scheduled = true;
  uint32_t c = NewSlot();
  clients_[c].traced = true;
  clients_[c].trace_session = session;
  clients_[c].next.reset();  // OnTurn takes the turn from the session's queue
  Push(std::max(at, now), Kind::kTurn, c);
}

void Simulation::TraceSessionNext(const std::string& session, double t) {
  auto it = trace_sessions_.find(session);
  if (it == trace_sessions_.end()) return;
  TraceSession& s = it->second;
  if (s.in_flight > 0) --s.in_flight;
  s.ended = t;
  ScheduleSessionTurn(session, s, t, t);
}

uint32_t Simulation::NewClient(size_t group, uint64_t index, bool open_loop) {
  uint32_t c = NewSlot();
  ClientState& cs = clients_[c];
  cs.traced = false;
  cs.client = std::make_unique<Client>(w_, group, index, open_loop);
  cs.convo = workload::TokenConversation(fleet_.block_size);
  cs.last_server = SIZE_MAX;
  cs.last_session = 0;
  cs.next = cs.client->Next();
  return c;
}

void Simulation::StartClients() {
  arrivals_rng_.seed(w_.seed ^ 0xa5a5a5a5ull);
  open_loop_count_.assign(w_.groups.size(), 0);
  for (size_t g = 0; g < w_.groups.size(); ++g) {
    const workload::ClientGroup& grp = w_.groups[g];
    if (grp.count > 0) {
      for (uint32_t i = 0; i < grp.count; ++i) {
        uint32_t c = NewClient(g, i, false);
        double start = w_.ramp_up_s * i / grp.count;
        Push(start + clients_[c].next->delay_s, Kind::kTurn, c);
      }
    } else {
      Push(workload::NextSessionArrival(grp, 0, arrivals_rng_), Kind::kSessionArrival,
           static_cast<uint32_t>(g));
    }
  }
}

void Simulation::ScheduleNext(uint32_t c, double t) {
  ClientState& cs = clients_[c];
  if (cs.traced) {
    // A trace's request is one turn: its slot is free; its session's next turn may follow.
    cs.next.reset();
    free_clients_.push_back(c);
    if (!cs.trace_session.empty()) TraceSessionNext(cs.trace_session, t);
    return;
  }
  cs.next = cs.client->Next();
  if (cs.next && t + cs.next->delay_s < w_.duration_s) {
    Push(t + cs.next->delay_s, Kind::kTurn, c);
    return;
  }
  cs.next.reset();
  free_clients_.push_back(c);  // done: the slot (and its buffers) is reused
}

void Simulation::OnTurn(uint32_t c, double t) {
  ClientState& cs = clients_[c];
  if (cs.traced && !cs.next) {
    // A session's turn that followed by delay: its request waits in the session's queue.
    TraceSession& s = trace_sessions_[cs.trace_session];
    s.scheduled = false;
    free_clients_.push_back(c);
    if (s.waiting.empty()) return;
    workload::MooncakeRequest r = std::move(s.waiting.front());
    s.waiting.pop_front();
    TraceArrive(std::move(r), t);
    return;
  }
  TurnPlan plan = std::move(*cs.next);
  cs.next.reset();
  if (plan.new_session) cs.convo.Clear();
  for (const auto& seg : plan.append) cs.convo.AppendSegment(seg);
  if (!held_.empty() || !RouteTurn(c, plan, t, t)) {
    // Behind others already waiting, or no room: it waits its turn (FIFO).
    cs.held = std::move(plan);
    cs.held_since = t;
    held_.push_back(c);
  }
}

void Simulation::ReleaseHeld(double t) {
  while (!held_.empty()) {
    uint32_t c = held_.front();
    ClientState& cs = clients_[c];
    if (!RouteTurn(c, *cs.held, cs.held_since, t)) return;
    held_.pop_front();
    cs.held.reset();
  }
}

bool Simulation::RouteTurn(uint32_t c, const TurnPlan& plan, double arrival, double t) {
  ClientState& cs = clients_[c];
  const uint64_t prompt_len = cs.convo.length();

  info_.api = ApiKind::kChatCompletions;
  info_.model = model_;
  info_.pool = "plan";
  info_.stream = true;
  info_.prompt_tokens_estimate = static_cast<uint32_t>(std::min<uint64_t>(prompt_len, UINT32_MAX));
  info_.max_tokens =
      cs.traced ? cs.max_tokens : static_cast<uint32_t>(cs.client->group().output_tokens.max);
  info_.session_key = plan.session_key;
  info_.prompt_block_hashes.assign(cs.convo.blocks().begin(), cs.convo.blocks().end());
  info_.block_size = fleet_.block_size;
  info_.now_seconds = t;

  for (size_t i = 0; i < servers_.size(); ++i) {
    const ServerState& s = servers_[i];
    EndpointSnapshot& e = snaps_[i];
    e.in_flight = s.in_flight;
    e.in_flight_prompt_tokens = s.prompt_tokens;
    e.in_flight_prefilling = s.prefilling;
    e.in_flight_prefill_tokens = s.prefill_tokens;
    e.ttft_ewma_seconds = s.ttft_ewma;
    e.metrics_fresh = s.scraped;
    e.num_requests_running = s.running;
    e.num_requests_waiting = s.waiting;
    e.kv_cache_usage = s.kv;
  }
  std::span<const EndpointSnapshot> candidates = snaps_;
  if (flow_) {
    // As the gateway judges room: the peak KV of what it has in flight there plus this turn,
    // each request growing to the max_tokens the bench sends (its planned output).
    auto peak_kv = [&](size_t i) {
      peak_scratch_.clear();
      for (uint32_t slot : live_[i]) {
        const Req& q = reqs_[slot];
        uint32_t done = std::min(q.produced, q.output_tokens);
        peak_scratch_.push_back({double(q.prompt_tokens) + done, double(q.output_tokens - done)});
      }
      peak_scratch_.push_back({double(prompt_len), double(plan.output_tokens)});
      return scheduling::flow::PeakKvTokens(peak_scratch_);
    };
    if (scheduling::flow::SelectWithRoom(snaps_, peak_kv, thresholds_, &roomy_)) return false;
    candidates = roomy_;
  }
  const uint64_t id = next_request_id_++;
  auto d0 = Clock::now();
  std::optional<Routed> pick = policy_->Route(id, info_, candidates);
  decision_s_ += std::chrono::duration<double>(Clock::now() - d0).count();
  ++decisions_;
  if (pick) pick->server = candidates[pick->server].index;

  if (!pick || prompt_len + 1 > max_model_len_[pick->server]) {
    ++rejected_;  // vLLM would answer 400 (too long); the client goes on
    ScheduleNext(c, t);
    return true;
  }
  const uint32_t s = static_cast<uint32_t>(pick->server);

  ServerState& server = servers_[s];
  if (cs.traced) {
    // A trace's turns each have a slot of their own: the session remembers where it was.
    if (!plan.session_key.empty()) {
      TraceSession& ts = trace_sessions_[plan.session_key];
      if (ts.last_server != SIZE_MAX) {
        ++session_turns_;
        if (ts.last_server != s) ++session_moves_;
      }
      ts.last_server = s;
    }
  } else {
    if (!plan.new_session && plan.session_id == cs.last_session) {
      ++session_turns_;
      if (cs.last_server != s) ++session_moves_;
    }
    cs.last_session = plan.session_id;
    cs.last_server = s;
  }

  uint32_t room = max_model_len_[s] - static_cast<uint32_t>(prompt_len);
  uint32_t out = std::min(plan.output_tokens, room);
  engine_model::RequestSpec spec;
  spec.prompt_block_hashes = std::move(info_.prompt_block_hashes);  // the router is done with them
  spec.prompt = cs.convo.tail();
  spec.output.reserve(out);
  workload::SegmentTokens(plan.output_seed, out, &spec.output);
  spec.end_reason = out < plan.output_tokens ? FinishReason::kLength : FinishReason::kStop;
  uint64_t eid = server.engine->Add(std::move(spec), t);

  uint32_t slot;
  if (!free_reqs_.empty()) {
    slot = free_reqs_.back();
    free_reqs_.pop_back();
  } else {
    slot = static_cast<uint32_t>(reqs_.size());
    reqs_.emplace_back();
  }
  Req& q = reqs_[slot];
  q.client = c;
  q.server = s;
  q.id = id;
  q.arrival = arrival;
  q.first = -1;
  q.last = t;
  q.prompt_tokens = info_.prompt_tokens_estimate;
  q.prefill_tokens = static_cast<uint32_t>(
      std::max(0.0, q.prompt_tokens - std::min<double>(q.prompt_tokens, pick->cached_tokens)));
  q.produced = 0;
  q.output_seed = plan.output_seed;
  // A trace's requests are all measured (a session's delayed turn may come after the last
  // timestamped arrival, where the window ends).
  q.measured = cs.traced || InWindow(arrival);
  q.output_tokens = out;
  q.info.session_key = plan.session_key;
  q.info.prompt_tokens_estimate = info_.prompt_tokens_estimate;
  q.info.max_tokens = info_.max_tokens;
  q.info.now_seconds = t;
  if (server.req_of.size() <= eid) server.req_of.resize(eid + 1024);
  server.req_of[eid] = slot;

  ++server.in_flight;
  ++server.prefilling;
  server.prompt_tokens += q.prompt_tokens;
  server.prefill_tokens += q.prefill_tokens;
  ++in_flight_;
  live_[s].push_back(slot);
  if (!server.busy) StartStep(s, t);
  return true;
}

void Simulation::StartStep(uint32_t s, double t) {
  ServerState& server = servers_[s];
  auto d = server.engine->BeginStep(t);
  if (!d) {
    server.busy = false;
    return;
  }
  server.busy = true;
  Push(t + *d, Kind::kStepEnd, s);
}

void Simulation::OnStepEnd(uint32_t s, double t) {
  ServerState& server = servers_[s];
  engine_model::StepResult r = server.engine->EndStep();
  double lo = std::max(r.start, w_.warmup_s), hi = std::min(r.end, w_.duration_s);
  if (hi > lo) server.busy_in_window += hi - lo;
  const bool window = InWindow(t);
  if (window) server.tokens_in_window += r.num_tokens;
  for (const auto& tok : r.tokens) {
    const uint32_t slot = server.req_of[tok.request];
    Req& q = reqs_[slot];
    if (tok.index == 0) {
      q.first = t;
      double ttft = t - q.arrival;
      if (q.measured) ttft_.push_back(ttft);
      server.ttft_ewma = server.have_ttft ? 0.9 * server.ttft_ewma + 0.1 * ttft : ttft;
      server.have_ttft = true;
      --server.prefilling;
      server.prefill_tokens -= q.prefill_tokens;
      policy_->OnFirstToken(q.id, s);
    } else if (q.measured) {
      itl_.Add(t - q.last);
    }
    q.last = t;
    ++q.produced;
    if (window) ++window_tokens_;
    if (tok.finished != FinishReason::kNone) Complete(slot, t, true);
  }
  StartStep(s, t);
}

void Simulation::Complete(uint32_t slot, double t, bool ok) {
  Req& q = reqs_[slot];
  ServerState& server = servers_[q.server];
  --server.in_flight;
  server.prompt_tokens -= q.prompt_tokens;
  --in_flight_;
  auto& live = live_[q.server];
  live.erase(std::find(live.begin(), live.end(), slot));
  Completion c;
  c.ok = ok;
  c.ttft_seconds = q.first >= 0 ? q.first - q.arrival : -1;
  c.e2e_seconds = t - q.arrival;
  policy_->OnCompleted(q.id, q.info, q.server, c);
  if (q.measured) e2e_.push_back(t - q.arrival);
  // The reply becomes part of the conversation.
  ClientState& cs = clients_[q.client];
  scratch_tokens_.clear();
  workload::SegmentTokens(q.output_seed, q.produced, &scratch_tokens_);
  cs.convo.Append(scratch_tokens_);
  uint32_t client = q.client;
  free_reqs_.push_back(slot);
  ScheduleNext(client, t);
  if (flow_) ReleaseHeld(t);  // its place may be the room the next waits for
}

PolicyReport Simulation::Run() {
  auto wall0 = Clock::now();
  if (trace_) {
    // The window opens before the first request, so its prompt is counted too.
    Push(w_.warmup_s, Kind::kWindowStart, 0);
    Push(w_.duration_s, Kind::kWindowEnd, 0);
    ReadTrace();
    if (o_.scrape_interval_s > 0) Push(0, Kind::kScrape, 0);
  } else {
    StartClients();
    if (o_.scrape_interval_s > 0) Push(0, Kind::kScrape, 0);
    Push(w_.warmup_s, Kind::kWindowStart, 0);
    Push(w_.duration_s, Kind::kWindowEnd, 0);
  }
  const double stop = w_.duration_s + o_.drain_limit_s;
  double now = 0;
  while (!events_.empty()) {
    Event e = events_.top();
    if (e.t > stop) break;
    events_.pop();
    now = e.t;
    now_ = e.t;
    switch (e.kind) {
      case Kind::kStepEnd:
        OnStepEnd(e.id, e.t);
        break;
      case Kind::kTurn:
        OnTurn(e.id, e.t);
        break;
      case Kind::kSessionArrival: {
        if (e.t >= w_.duration_s) break;
        const workload::ClientGroup& g = w_.groups[e.id];
        uint32_t c = NewClient(e.id, open_loop_count_[e.id]++, true);
        if (clients_[c].next) {
          Push(e.t + clients_[c].next->delay_s, Kind::kTurn, c);
        } else {
          free_clients_.push_back(c);
        }
        Push(workload::NextSessionArrival(g, e.t, arrivals_rng_), Kind::kSessionArrival, e.id);
        break;
      }
      case Kind::kScrape:
        for (ServerState& s : servers_) {
          s.scraped = true;
          s.running = static_cast<double>(s.engine->num_running());
          s.waiting = static_cast<double>(s.engine->num_waiting());
          s.kv = s.engine->kv_usage();
        }
        if (flow_) ReleaseHeld(e.t);
        if (e.t < w_.duration_s || in_flight_ > 0)
          Push(e.t + o_.scrape_interval_s, Kind::kScrape, 0);
        break;
      case Kind::kWindowStart:
        for (ServerState& s : servers_) s.at_start = s.engine->stats();
        break;
      case Kind::kWindowEnd:
        for (ServerState& s : servers_) s.at_end = s.engine->stats();
        break;
      case Kind::kTraceArrival: {
        workload::MooncakeRequest r = std::move(*pending_);
        pending_.reset();
        TraceArrive(std::move(r), e.t);
        ReadTrace();
        break;
      }
    }
  }

  PolicyReport r;
  r.policy = policy_->name();
  // Measured requests still in flight at the drain limit: their TTFT is at least this long.
  std::vector<bool> live(reqs_.size(), true);
  for (uint32_t f : free_reqs_) live[f] = false;
  for (size_t i = 0; i < reqs_.size(); ++i) {
    if (!live[i] || !reqs_[i].measured) continue;
    ++r.unfinished;
    if (reqs_[i].first < 0) ttft_.push_back(now - reqs_[i].arrival);
  }
  // A trace's session turns still waiting for their delay when the run stopped.
  for (const auto& [name, s] : trace_sessions_) r.unfinished += s.waiting.size();
  for (uint32_t c : held_) {  // still waiting in the gateway
    if (!InWindow(clients_[c].held_since)) continue;
    ++r.unfinished;
    ttft_.push_back(now - clients_[c].held_since);
  }
  r.requests = e2e_.size();
  r.rejected = rejected_;
  double sum = 0;
  for (double v : ttft_) sum += v;
  r.ttft_mean = ttft_.empty() ? 0 : sum / ttft_.size();
  r.ttft_p50 = Percentile(&ttft_, 0.5);
  r.ttft_p90 = Percentile(&ttft_, 0.9);
  r.ttft_p99 = Percentile(&ttft_, 0.99);
  r.itl_p50 = itl_.Quantile(0.5);
  r.itl_p99 = itl_.Quantile(0.99);
  r.e2e_p50 = Percentile(&e2e_, 0.5);
  r.e2e_p99 = Percentile(&e2e_, 0.99);
  r.window_s = w_.duration_s - w_.warmup_s;
  r.output_tokens = window_tokens_;
  r.output_tokens_per_min = window_tokens_ / r.window_s * 60;
  uint64_t queries = 0, hits = 0;
  double busy_max = 0, busy_sum = 0, price = 0, work_max = 0, work_sum = 0;
  for (size_t i = 0; i < servers_.size(); ++i) {
    const ServerState& s = servers_[i];
    queries += s.at_end.prefix_cache_queries - s.at_start.prefix_cache_queries;
    hits += s.at_end.prefix_cache_hits - s.at_start.prefix_cache_hits;
    r.preemptions += s.at_end.preemptions - s.at_start.preemptions;
    busy_max = std::max(busy_max, s.busy_in_window);
    busy_sum += s.busy_in_window;
    // Work in seconds of this server's prefill rate, so unlike servers compare fairly.
    double work =
        double(s.tokens_in_window) / std::max(1.0, fleet_.servers[i].capacity.prefill_tokens_per_s);
    work_max = std::max(work_max, work);
    work_sum += work;
    price += fleet_.servers[i].capacity.price_per_hour;
  }
  r.prefix_hit_rate = queries ? double(hits) / queries : 0;
  double busy_mean = servers_.empty() ? 0 : busy_sum / servers_.size();
  r.load_spread = busy_mean > 0 ? busy_max / busy_mean : 0;
  double work_mean = servers_.empty() ? 0 : work_sum / servers_.size();
  r.work_spread = work_mean > 0 ? work_max / work_mean : 0;
  r.cost_per_million_output =
      window_tokens_ ? price * (r.window_s / 3600) / window_tokens_ * 1e6 : 0;
  r.session_turns = session_turns_;
  r.session_moves = session_moves_;
  r.decision_us = decisions_ ? decision_s_ / decisions_ * 1e6 : 0;
  r.wall_s = std::chrono::duration<double>(Clock::now() - wall0).count();
  return r;
}

}  // namespace

Result<PolicyReport> Simulate(const Fleet& fleet, const workload::WorkloadSpec& workload,
                              const std::string& policy, const SimOptions& options,
                              const config::Gateway* gateway) {
  Simulation sim(fleet, workload, options);
  IG_RETURN_IF_ERROR(sim.Init(policy, gateway));
  return sim.Run();
}

Result<TraceFacts> ScanTrace(const TraceReplay& trace) {
  if (!(trace.speed > 0)) return Status::Error("--speed must be > 0");
  IG_ASSIGN_OR_RETURN(auto reader, workload::MooncakeReader::Open(trace.path, trace.block_size));
  TraceFacts f;
  std::unordered_set<uint64_t> seen;  // every chain of hash ids sent so far: one infinite cache
  double hit_tokens = 0, first_ms = -1, last_ms = -1, prev_ms = -1;
  while (true) {
    IG_ASSIGN_OR_RETURN(auto next, reader->Next());
    if (!next) break;
    const workload::MooncakeRequest& r = *next;
    if (r.timestamp_ms >= 0) {
      if (r.timestamp_ms < prev_ms) {
        return Status::Error(fmt::format(
            "{}:{}: timestamp: {} is before the previous line's {} (a trace is in arrival order)",
            trace.path, r.line, r.timestamp_ms, prev_ms));
      }
      prev_ms = r.timestamp_ms;
      if (r.timestamp_ms < trace.from_ms) continue;
      if (trace.to_ms >= 0 && r.timestamp_ms >= trace.to_ms) break;
      if (first_ms < 0) first_ms = r.timestamp_ms;
      last_ms = std::max(last_ms, r.timestamp_ms);
    }
    ++f.requests;
    f.prompt_tokens += r.input_length;
    f.output_tokens += r.output_length;
    uint64_t chain = 0x9e3779b97f4a7c15ull;
    uint32_t left = r.input_length;
    bool hitting = true;
    for (uint64_t id : r.hash_ids) {
      chain = Mix64(chain ^ (id + 0x632be59bd9b4e019ull));
      uint32_t n = std::min(left, trace.block_size);
      left -= n;
      bool hit = !seen.insert(chain).second;
      hitting = hitting && hit;
      if (hitting) hit_tokens += n;
    }
  }
  if (f.requests == 0) return Status::Error(trace.path + ": no requests in the selected range");
  if (first_ms < 0) {
    return Status::Error(trace.path +
                         ": no line has a timestamp (a session's first turn needs one; later turns "
                         "may give a delay instead)");
  }
  f.span_s = (last_ms - first_ms) / 1000 / trace.speed;
  f.bound_hit_rate = f.prompt_tokens ? hit_tokens / double(f.prompt_tokens) : 0;
  return f;
}

Result<PolicyReport> SimulateTrace(const Fleet& fleet, const TraceReplay& trace,
                                   const TraceFacts& facts, const std::string& policy,
                                   const SimOptions& options, const config::Gateway* gateway) {
  workload::WorkloadSpec w;
  w.name = trace.path;
  w.warmup_s = 0;
  // Every request is measured, and every token and cache hit counted: the window runs through
  // the drain. Rates are over the trace's span (its requests' own pace).
  w.duration_s = facts.span_s + options.drain_limit_s;
  Simulation sim(fleet, w, options);
  IG_RETURN_IF_ERROR(sim.Init(policy, gateway));
  IG_RETURN_IF_ERROR(sim.UseTrace(trace));
  PolicyReport r = sim.Run();
  IG_RETURN_IF_ERROR(sim.trace_status());
  r.window_s = std::max(facts.span_s, 1e-3);
  r.output_tokens_per_min = r.output_tokens / r.window_s * 60;
  double price = 0;
  for (const Server& s : fleet.servers) price += s.capacity.price_per_hour;
  r.cost_per_million_output =
      r.output_tokens ? price * (r.window_s / 3600) / r.output_tokens * 1e6 : 0;
  return r;
}

}  // namespace infergrid::plan
