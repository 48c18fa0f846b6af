#pragma once
// The gateway's own Prometheus metrics. Every degraded path has a counter here.

#include "metrics/registry.h"

namespace infergrid::gateway {

struct GatewayMetrics {
  explicit GatewayMetrics(metrics::Registry* r);

  metrics::CounterFamily* requests;            // pool, model, endpoint, code
  metrics::HistogramFamily* ttft;              // pool, model
  metrics::HistogramFamily* e2e;               // pool, model
  metrics::CounterFamily* upstream_errors;     // endpoint, kind
  metrics::CounterFamily* client_errors;       // kind
  metrics::CounterFamily* client_disconnects;  // phase
  metrics::CounterFamily* decisions;           // pool, profile, endpoint
  metrics::CounterFamily* decision_failures;   // pool, reason
  metrics::CounterFamily* stale_metrics;       // pool: decisions made with missing or stale scrapes
  metrics::CounterFamily* scrapes;             // endpoint
  metrics::CounterFamily* scrape_failures;     // endpoint, reason
  metrics::CounterFamily* retries;             // endpoint, reason: stale keep-alive retried
  metrics::CounterFamily* prompt_tokens;       // pool: prompt tokens routed
  metrics::CounterFamily* cached_tokens;       // pool: of those, estimated cached where sent
  // Multi-tenant QoS (docs/qos.md).
  metrics::GaugeFamily* tenant_queued;      // tenant, class: waiting in the gateway now
  metrics::CounterFamily* tenant_admitted;  // tenant, class: sent to a model server
  metrics::CounterFamily* tenant_shed;      // tenant, class, reason: refused or dropped
  metrics::HistogramFamily* tenant_wait;    // tenant, class: time in the gateway's queue
  metrics::CounterFamily* tenant_tokens;    // tenant, class, kind (prompt, completion)
  metrics::CounterFamily* auth_failures;    // reason
  metrics::CounterFamily* reloads;          // result: ok, error
  // Zero downtime (docs/zero-downtime.md).
  metrics::CounterFamily* health_probes;     // endpoint, result
  metrics::CounterFamily* ejections;         // pool, endpoint, source
  metrics::CounterFamily* rejoins;           // pool, endpoint
  metrics::CounterFamily* request_retries;   // pool, reason
  metrics::CounterFamily* retries_refused;   // pool, reason
  metrics::CounterFamily* endpoint_changes;  // pool, endpoint, change
  metrics::CounterFamily* admin_requests;    // result
};

// Latency buckets in seconds, from 5 ms to 2 minutes.
const std::vector<double>& LatencyBuckets();

}  // namespace infergrid::gateway
