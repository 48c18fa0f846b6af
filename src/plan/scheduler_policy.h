#pragma once
// An infergrid scheduling profile as a planner policy: the same Scheduler object, plugins and
// configuration the live gateway builds, fed with the planner's snapshots.

#include <memory>

#include "plan/policy.h"
#include "scheduling/scheduler.h"

namespace infergrid::plan {

class SchedulerPolicy : public Policy {
 public:
  SchedulerPolicy(std::string name, std::unique_ptr<scheduling::Scheduler> s)
      : Policy(std::move(name)), scheduler_(std::move(s)) {}
  static Result<std::unique_ptr<Policy>> Create(std::string name,
                                                const config::SchedulingProfile& profile,
                                                const std::string& source, uint64_t seed);

  std::optional<Routed> Route(uint64_t id, const RequestInfo& req,
                              std::span<const EndpointSnapshot> endpoints) override;
  void OnCompleted(uint64_t id, const RequestInfo& req, size_t server,
                   const Completion& c) override;

 private:
  std::unique_ptr<scheduling::Scheduler> scheduler_;
};

}  // namespace infergrid::plan
