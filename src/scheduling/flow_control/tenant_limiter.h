#pragma once
// Per-tenant limits (docs/qos.md): requests in the gateway at once (queued plus in flight),
// requests per minute and tokens per minute (prompt plus output), the last two as token
// buckets that refill continuously and hold a minute's worth. Tokens are charged at
// admission from the estimate and corrected when the request ends from the usage the server
// reported; a request refused later (shed, timed out, client gone) is refunded.
//
// Pure: time comes in as seconds on the caller's clock; not thread-safe (the caller locks).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace infergrid::scheduling::flow {

struct TenantLimitSpec {
  std::string name;
  uint32_t max_concurrent = 0;  // 0: no limit
  uint32_t requests_per_minute = 0;
  uint64_t tokens_per_minute = 0;
};

enum class Limit { kNone, kConcurrency, kRequestsPerMinute, kTokensPerMinute };

// The name a limit has in config, errors and metrics.
const char* LimitName(Limit l);

class TenantLimiter {
 public:
  explicit TenantLimiter(std::vector<TenantLimitSpec> tenants = {});

  // Replaces the limits; what tenants have in the gateway and their buckets' levels stay.
  void Reconfigure(std::vector<TenantLimitSpec> tenants);
  // This gateway's share of every limit (gateway replicas split them: 1 / replicas); each
  // limit becomes ceil(limit x share), at least 1. Buckets' levels are capped to the new size.
  void SetShare(double share);
  double share() const { return share_; }

  struct Verdict {
    Limit exceeded = Limit::kNone;
    double retry_after_s = 0;  // when it exceeded a limit: when to try again
  };
  // Admits one request of `tokens` estimated tokens for `tenant` (unknown: unlimited), or
  // names the first limit it would exceed. On admission it is counted until Release.
  Verdict Admit(const std::string& tenant, double tokens, double now_s);
  // The request admitted with `estimated` tokens ended having used `actual` (the estimate if
  // unknown); `served` false refunds it (it never reached a server).
  void Release(const std::string& tenant, double estimated, double actual, bool served,
               double now_s);

  uint32_t in_gateway(const std::string& tenant) const;

 private:
  struct Bucket {
    double level = 0;  // may go below zero after a correction
    double capacity = 0;
    double last_s = 0;
    bool started = false;
    void Refill(double now_s);
  };
  struct State {
    TenantLimitSpec spec;
    uint32_t in_gateway = 0;
    Bucket requests, tokens;
  };
  std::map<std::string, State> state_;
  std::vector<TenantLimitSpec> configured_;
  double share_ = 1;
};

}  // namespace infergrid::scheduling::flow
