#pragma once
// An endpoint's health as the gateway judges it (docs/zero-downtime.md), and the retry budget.
// Pure: time comes in as seconds on the caller's clock; not thread-safe (the caller locks).
//
// Passive: requests report success or failure. `consecutive_failures` failures in a row eject
// the endpoint for base_ejection x 2^(ejections in a row - 1), at most max_ejection. When the
// ejection ends, the endpoint is on probation: with active checks, it rejoins after a probe
// passes; without, at once. A failure on probation ejects it again, for twice as long. After
// max_ejection of good behaviour the doubling starts over.
//
// Active: probes report pass or fail. `unhealthy_threshold` failures in a row take the
// endpoint out; `healthy_threshold` passes in a row bring it back (and end a passive
// ejection whose time is up).

#include <cstdint>

namespace infergrid::gateway {

struct HealthPolicy {
  bool passive = true;
  uint32_t consecutive_failures = 3;
  double base_ejection_s = 5;
  double max_ejection_s = 60;
  bool active = true;
  uint32_t healthy_threshold = 1;
  uint32_t unhealthy_threshold = 2;
};

class EndpointHealth {
 public:
  enum class Change { kNone, kEjected, kRejoined };

  // A request's outcome, from the endpoint's side: `ok` false for connect failures, resets
  // before a response, 5xx and timeouts.
  Change OnRequest(bool ok, double now_s, const HealthPolicy& p);
  Change OnProbe(bool ok, double now_s, const HealthPolicy& p);
  // Time passing: an ejection whose time is up ends here when active checks are off.
  Change Tick(double now_s, const HealthPolicy& p);

  // Whether requests may go there now.
  bool available() const { return !ejected_ && !probe_down_; }
  bool ejected() const { return ejected_; }
  bool probe_down() const { return probe_down_; }
  double ejected_until() const { return until_; }
  uint32_t ejections_in_a_row() const { return streak_; }
  uint64_t ejections() const { return ejections_; }

 private:
  Change Eject(double now_s, const HealthPolicy& p);
  bool ejected_ = false;
  bool probe_down_ = false;
  double until_ = 0;
  double good_since_ = 0;  // when the last ejection ended
  uint32_t failures_ = 0;  // passive, in a row
  uint32_t streak_ = 0;    // ejections in a row
  uint32_t probe_fails_ = 0, probe_passes_ = 0;
  uint64_t ejections_ = 0;
};

// Retries are at most `percent` of requests, plus a reserve of `reserve` (Envoy's retry budget,
// counted rather than concurrent): each request adds percent/100 of a retry, each retry takes
// one, and the balance holds at most reserve + percent/100 x 100 requests' worth.
class RetryBudget {
 public:
  RetryBudget(double percent, uint32_t reserve) { Configure(percent, reserve); }
  void Configure(double percent, uint32_t reserve);
  void OnRequest();
  // Takes one retry if the budget allows.
  bool TryRetry();
  double balance() const { return balance_; }

 private:
  double share_ = 0.2;
  double cap_ = 23;
  double balance_ = 3;
};

}  // namespace infergrid::gateway
