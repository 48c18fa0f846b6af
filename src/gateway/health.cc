#include "gateway/health.h"

#include <algorithm>
#include <cmath>

namespace infergrid::gateway {

EndpointHealth::Change EndpointHealth::Eject(double now_s, const HealthPolicy& p) {
  // A run of good behaviour as long as the longest ejection forgives the past ones.
  if (streak_ > 0 && !ejected_ && now_s - good_since_ >= p.max_ejection_s) streak_ = 0;
  ++streak_;
  ++ejections_;
  double d = p.base_ejection_s * std::pow(2.0, std::min<uint32_t>(streak_ - 1, 30));
  until_ = now_s + std::min(d, std::max(p.base_ejection_s, p.max_ejection_s));
  ejected_ = true;
  failures_ = 0;
  return Change::kEjected;
}

EndpointHealth::Change EndpointHealth::OnRequest(bool ok, double now_s, const HealthPolicy& p) {
  if (!p.passive) return Change::kNone;
  if (ok) {
    failures_ = 0;
    return Change::kNone;
  }
  if (ejected_) {
    // On probation (its time is up, awaiting a probe): one failure sends it back out.
    if (now_s >= until_) return Eject(now_s, p);
    return Change::kNone;
  }
  if (++failures_ >= std::max(1u, p.consecutive_failures)) {
    bool was_available = available();
    Eject(now_s, p);
    return was_available ? Change::kEjected : Change::kNone;
  }
  return Change::kNone;
}

EndpointHealth::Change EndpointHealth::OnProbe(bool ok, double now_s, const HealthPolicy& p) {
  bool was = available();
  if (ok) {
    probe_fails_ = 0;
    ++probe_passes_;
    if (probe_down_ && probe_passes_ >= std::max(1u, p.healthy_threshold)) probe_down_ = false;
    if (ejected_ && now_s >= until_ && !probe_down_) {
      ejected_ = false;
      good_since_ = now_s;
      failures_ = 0;
    }
  } else {
    probe_passes_ = 0;
    if (++probe_fails_ >= std::max(1u, p.unhealthy_threshold)) probe_down_ = true;
  }
  bool is = available();
  return was == is ? Change::kNone : is ? Change::kRejoined : Change::kEjected;
}

EndpointHealth::Change EndpointHealth::Tick(double now_s, const HealthPolicy& p) {
  bool was = available();
  if (!p.active) {
    // No probes will come (active checks were turned off): what they said no longer holds.
    probe_down_ = false;
    probe_fails_ = probe_passes_ = 0;
    if (ejected_ && now_s >= until_) {
      ejected_ = false;
      good_since_ = now_s;
      failures_ = 0;
    }
  }
  return !was && available() ? Change::kRejoined : Change::kNone;
}

void RetryBudget::Configure(double percent, uint32_t reserve) {
  share_ = std::clamp(percent, 0.0, 100.0) / 100.0;
  cap_ = reserve + share_ * 100;
  balance_ = std::min(std::max(balance_, double(reserve)), cap_);
}

void RetryBudget::OnRequest() { balance_ = std::min(cap_, balance_ + share_); }

bool RetryBudget::TryRetry() {
  if (balance_ < 1) return false;
  balance_ -= 1;
  return true;
}

}  // namespace infergrid::gateway
