#pragma once
// The scheduling plugin interfaces. A decision runs filters (drop endpoints), then weighted
// scorers (each scores the candidates in [0, 1]), then a picker (chooses one). Plugins may
// keep state: they are told of each decision (OnPicked) and each completion (OnCompleted).
//
// Threading: a plugin instance is called by one thread at a time (the caller serialises).
// Plugins do no I/O and read no wall clock; time, if needed, comes in through the request.

#include <cstddef>
#include <functional>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "infergrid/endpoint.h"
#include "infergrid/request.h"

namespace infergrid {

class Filter {
 public:
  virtual ~Filter() = default;
  virtual std::string_view name() const = 0;
  // Removes from `candidates` (indexes into `endpoints`) those that must not serve `req`.
  virtual void Apply(const RequestInfo& req, std::span<const EndpointSnapshot> endpoints,
                     std::vector<size_t>* candidates) = 0;
};

class Scorer {
 public:
  virtual ~Scorer() = default;
  virtual std::string_view name() const = 0;
  // Writes scores[i] in [0, 1] for endpoints[candidates[i]]; higher is better.
  virtual void Score(const RequestInfo& req, std::span<const EndpointSnapshot> endpoints,
                     std::span<const size_t> candidates, std::span<double> scores) = 0;
  // True if it reads scraped metrics (then a decision over stale ones is counted as degraded).
  virtual bool uses_metrics() const { return false; }
  virtual void OnPicked(const RequestInfo& req, const EndpointSnapshot& chosen) {}
  virtual void OnCompleted(const RequestInfo& req, size_t endpoint_index, const Completion& c) {}
  // Another gateway replica sent `req` to `endpoint_index` (docs/zero-downtime.md): a plugin
  // that remembers where requests went (a session's home) records it as if it had chosen it.
  virtual void OnObserved(const RequestInfo& req, size_t endpoint_index) {}
  // The sessions it keeps, least recently seen first (to warm a peer replica).
  struct SessionHome {
    const std::string* key;
    size_t endpoint;
    double tokens;
  };
  virtual void ForEachSession(const std::function<void(const SessionHome&)>& fn) const {}
};

class Picker {
 public:
  virtual ~Picker() = default;
  virtual std::string_view name() const = 0;
  // Returns a position in `candidates`, or nullopt if it is empty.
  virtual std::optional<size_t> Pick(std::span<const size_t> candidates,
                                     std::span<const double> scores, std::mt19937_64& rng) = 0;
};

}  // namespace infergrid
