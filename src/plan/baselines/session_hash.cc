#include "plan/baselines/session_hash.h"

#include <algorithm>

#include "common/hash.h"

namespace infergrid::plan {

namespace {
uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return Mix64(h);
}
}  // namespace

SessionHashPolicy::SessionHashPolicy(size_t servers) : Policy("session-hash") {
  constexpr int kPoints = 160;  // nginx's ketama points per unit of weight
  for (size_t s = 0; s < servers; ++s) {
    for (int p = 0; p < kPoints; ++p) {
      ring_.emplace_back(Mix64((s + 1) * 0x9e3779b97f4a7c15ull + p), static_cast<uint32_t>(s));
    }
  }
  std::sort(ring_.begin(), ring_.end());
}

std::optional<Routed> SessionHashPolicy::Route(uint64_t, const RequestInfo& req,
                                               std::span<const EndpointSnapshot> endpoints) {
  if (ring_.empty() || endpoints.empty()) return std::nullopt;
  uint64_t h = Fnv1a(req.session_key);
  auto it = std::lower_bound(ring_.begin(), ring_.end(), std::make_pair(h, uint32_t{0}));
  if (it == ring_.end()) it = ring_.begin();
  return Routed{it->second};
}

}  // namespace infergrid::plan
