#include "scheduling/flow_control/tenant_limiter.h"

#include <algorithm>
#include <cmath>

namespace infergrid::scheduling::flow {

const char* LimitName(Limit l) {
  switch (l) {
    case Limit::kConcurrency:
      return "maxConcurrentRequests";
    case Limit::kRequestsPerMinute:
      return "requestsPerMinute";
    case Limit::kTokensPerMinute:
      return "tokensPerMinute";
    case Limit::kNone:
      break;
  }
  return "none";
}

void TenantLimiter::Bucket::Refill(double now_s) {
  if (!started) {  // a new bucket starts full
    level = capacity;
    last_s = now_s;
    started = true;
    return;
  }
  if (now_s > last_s) level = std::min(capacity, level + (now_s - last_s) * capacity / 60.0);
  last_s = std::max(last_s, now_s);
}

TenantLimiter::TenantLimiter(std::vector<TenantLimitSpec> tenants) {
  Reconfigure(std::move(tenants));
}

void TenantLimiter::SetShare(double share) {
  share_ = std::clamp(share, 1e-6, 1.0);
  Reconfigure(configured_);
}

void TenantLimiter::Reconfigure(std::vector<TenantLimitSpec> tenants) {
  configured_ = tenants;
  auto scale = [this](uint64_t limit) -> uint64_t {
    if (limit == 0 || share_ >= 1) return limit;
    return std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(double(limit) * share_)));
  };
  for (auto& t : tenants) {
    t.max_concurrent = static_cast<uint32_t>(scale(t.max_concurrent));
    t.requests_per_minute = static_cast<uint32_t>(scale(t.requests_per_minute));
    t.tokens_per_minute = scale(t.tokens_per_minute);
  }
  // A tenant no longer configured has no limits (if it is still reached, as the default
  // tenant or by header); what it has in the gateway is still counted.
  for (auto& [name, st] : state_) {
    st.spec = TenantLimitSpec{name};
    st.requests.capacity = 0;
    st.tokens.capacity = 0;
  }
  for (auto& t : tenants) {
    State& s = state_[t.name];
    s.spec = t;
    s.requests.capacity = t.requests_per_minute;
    s.tokens.capacity = static_cast<double>(t.tokens_per_minute);
    s.requests.level = std::min(s.requests.level, s.requests.capacity);
    s.tokens.level = std::min(s.tokens.level, s.tokens.capacity);
  }
}

TenantLimiter::Verdict TenantLimiter::Admit(const std::string& tenant, double tokens,
                                            double now_s) {
  Verdict v;
  State& s = state_[tenant];
  if (s.spec.name.empty()) s.spec.name = tenant;  // unknown tenants are unlimited
  const auto& spec = s.spec;
  if (spec.max_concurrent > 0 && s.in_gateway >= spec.max_concurrent) {
    v.exceeded = Limit::kConcurrency;
    v.retry_after_s = 1;
    return v;
  }
  if (spec.requests_per_minute > 0) {
    s.requests.Refill(now_s);
    if (s.requests.level < 1) {
      v.exceeded = Limit::kRequestsPerMinute;
      v.retry_after_s = (1 - s.requests.level) * 60.0 / s.requests.capacity;
      return v;
    }
  }
  if (spec.tokens_per_minute > 0) {
    s.tokens.Refill(now_s);
    // A request larger than a minute's worth passes once the bucket is full.
    double need = std::min(tokens, s.tokens.capacity);
    if (s.tokens.level < need) {
      v.exceeded = Limit::kTokensPerMinute;
      v.retry_after_s = (need - s.tokens.level) * 60.0 / s.tokens.capacity;
      return v;
    }
  }
  if (spec.requests_per_minute > 0) s.requests.level -= 1;
  if (spec.tokens_per_minute > 0) s.tokens.level -= tokens;
  ++s.in_gateway;
  return v;
}

void TenantLimiter::Release(const std::string& tenant, double estimated, double actual, bool served,
                            double now_s) {
  auto it = state_.find(tenant);
  if (it == state_.end()) return;
  State& s = it->second;
  if (s.in_gateway > 0) --s.in_gateway;
  if (s.spec.tokens_per_minute > 0) {
    s.tokens.Refill(now_s);
    s.tokens.level += served ? estimated - actual : estimated;
    s.tokens.level = std::min(s.tokens.level, s.tokens.capacity);
  }
  if (!served && s.spec.requests_per_minute > 0) {
    s.requests.Refill(now_s);
    s.requests.level = std::min(s.requests.capacity, s.requests.level + 1);
  }
}

uint32_t TenantLimiter::in_gateway(const std::string& tenant) const {
  auto it = state_.find(tenant);
  return it == state_.end() ? 0 : it->second.in_gateway;
}

}  // namespace infergrid::scheduling::flow
