#pragma once
// Helpers for scheduling tests: endpoint snapshots and plugin configs.

#include <string>
#include <vector>

#include "config/config.h"
#include "infergrid/endpoint.h"
#include "infergrid/scheduling.h"
#include "scheduling/registry.h"

namespace infergrid::scheduling::testutil {

inline std::vector<EndpointSnapshot> Endpoints(size_t n) {
  static std::vector<std::string> urls;
  static std::map<std::string, std::string> labels;
  while (urls.size() < n) urls.push_back("http://e" + std::to_string(urls.size()) + ":1");
  std::vector<EndpointSnapshot> out(n);
  for (size_t i = 0; i < n; ++i) {
    out[i].index = i;
    out[i].url = &urls[i];
    out[i].labels = &labels;
  }
  return out;
}

inline config::PluginConfig Plugin(const std::string& name,
                                   std::map<std::string, std::string> params = {}) {
  config::PluginConfig p;
  p.name = name;
  p.path = "plugin";
  for (auto& [k, v] : params) p.parameters[k] = config::Param{v, {}, "plugin.parameters." + k};
  return p;
}

// A prompt of `n` consecutive token ids from `first_token`.
inline RequestInfo Prompt(uint32_t first_token, size_t n) {
  RequestInfo r;
  for (size_t i = 0; i < n; ++i)
    r.prompt_token_ids.push_back(first_token + static_cast<uint32_t>(i));
  r.prompt_tokens_estimate = static_cast<uint32_t>(n);
  return r;
}

// Scores every endpoint as a candidate.
inline std::vector<double> ScoreAll(Scorer& s, const RequestInfo& r,
                                    const std::vector<EndpointSnapshot>& eps) {
  std::vector<size_t> cands;
  for (size_t i = 0; i < eps.size(); ++i) cands.push_back(i);
  std::vector<double> scores(eps.size());
  s.Score(r, eps, cands, scores);
  return scores;
}

}  // namespace infergrid::scheduling::testutil
