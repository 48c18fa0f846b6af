#include "plan/scheduler_policy.h"

#include "scheduling/registry.h"

namespace infergrid::plan {

Result<std::unique_ptr<Policy>> SchedulerPolicy::Create(std::string name,
                                                        const config::SchedulingProfile& profile,
                                                        const std::string& source, uint64_t seed) {
  IG_ASSIGN_OR_RETURN(auto s, scheduling::BuiltinRegistry().Build(profile, source, seed));
  return std::unique_ptr<Policy>(new SchedulerPolicy(std::move(name), std::move(s)));
}

std::optional<Routed> SchedulerPolicy::Route(uint64_t, const RequestInfo& req,
                                             std::span<const EndpointSnapshot> endpoints) {
  scheduling::Decision d = scheduler_->Schedule(req, endpoints);
  if (!d.endpoint) return std::nullopt;
  return Routed{*d.endpoint, d.cached_tokens};
}

void SchedulerPolicy::OnCompleted(uint64_t, const RequestInfo& req, size_t server,
                                  const Completion& c) {
  scheduler_->OnCompleted(req, server, c);
}

}  // namespace infergrid::plan
