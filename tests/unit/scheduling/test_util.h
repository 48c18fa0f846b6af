#pragma once
// Helpers for scheduling tests: endpoint snapshots and plugin configs.

#include <string>
#include <vector>

#include "config/config.h"
#include "infergrid/endpoint.h"
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

}  // namespace infergrid::scheduling::testutil
