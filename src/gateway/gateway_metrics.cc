#include "gateway/gateway_metrics.h"

namespace infergrid::gateway {

const std::vector<double>& LatencyBuckets() {
  static const std::vector<double> b = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                        1,     2.5,  5,     10,   30,  60,   120};
  return b;
}

GatewayMetrics::GatewayMetrics(metrics::Registry* r)
    : requests(r->AddCounter(
          "infergrid_requests_total",
          "Inference requests finished, by pool, model, endpoint and HTTP status code.",
          {"pool", "model", "endpoint", "code"})),
      ttft(r->AddHistogram(
          "infergrid_time_to_first_byte_seconds",
          "Time from a request's arrival to the first response byte from the model server "
          "(the time to first token for streams), as the gateway sees it.",
          {"pool", "model"}, LatencyBuckets())),
      e2e(r->AddHistogram("infergrid_request_duration_seconds",
                          "Time from a request's arrival to the last byte of its response.",
                          {"pool", "model"}, LatencyBuckets())),
      upstream_errors(r->AddCounter("infergrid_upstream_errors_total",
                                    "Failures talking to model servers, by endpoint and kind.",
                                    {"endpoint", "kind"})),
      client_errors(r->AddCounter("infergrid_client_errors_total",
                                  "Requests refused for bad input, by kind.", {"kind"})),
      client_disconnects(r->AddCounter(
          "infergrid_client_disconnects_total",
          "Clients that went away before their response ended, by phase; their upstream "
          "requests were cancelled.",
          {"phase"})),
      decisions(r->AddCounter("infergrid_routing_decisions_total",
                              "Routing decisions, by pool, profile and endpoint.",
                              {"pool", "profile", "endpoint"})),
      decision_failures(
          r->AddCounter("infergrid_routing_failures_total",
                        "Requests for which no endpoint could be chosen, by pool and reason.",
                        {"pool", "reason"})),
      stale_metrics(r->AddCounter(
          "infergrid_routing_stale_metrics_total",
          "Routing decisions made while some endpoint's scraped metrics were missing or "
          "stale, so the gateway's own accounting stood in for them.",
          {"pool"})),
      scrapes(r->AddCounter("infergrid_endpoint_scrapes_total", "Scrapes of endpoints' /metrics.",
                            {"endpoint"})),
      scrape_failures(r->AddCounter("infergrid_endpoint_scrape_failures_total",
                                    "Failed scrapes of endpoints' /metrics, by reason.",
                                    {"endpoint", "reason"})),
      retries(r->AddCounter(
          "infergrid_upstream_retries_total",
          "Requests resent on a fresh connection because a pooled keep-alive connection had "
          "been closed by the server before any response byte.",
          {"endpoint"})),
      prompt_tokens(r->AddCounter("infergrid_routing_prompt_tokens_total",
                                  "Prompt tokens of the requests routed, by pool.", {"pool"})),
      cached_tokens(r->AddCounter(
          "infergrid_routing_cached_prompt_tokens_total",
          "Of the prompt tokens routed, those the gateway's prefix index expected the chosen "
          "endpoint to hold in its KV cache, by pool (the estimated prefix cache hit rate is "
          "this over infergrid_routing_prompt_tokens_total).",
          {"pool"})),
      tenant_queued(r->AddGauge("infergrid_tenant_queued_requests",
                                "Requests waiting in the gateway's queue, by tenant and priority "
                                "class.",
                                {"tenant", "class"})),
      tenant_admitted(
          r->AddCounter("infergrid_tenant_admitted_requests_total",
                        "Requests sent on to a model server, by tenant and priority class.",
                        {"tenant", "class"})),
      tenant_shed(r->AddCounter(
          "infergrid_tenant_shed_requests_total",
          "Requests refused or dropped by the gateway's flow control, by tenant, priority "
          "class and reason (a limit's name, queue_full, expected_wait, queue_timeout, "
          "client_gone).",
          {"tenant", "class", "reason"})),
      tenant_wait(r->AddHistogram("infergrid_tenant_queue_wait_seconds",
                                  "Time requests waited in the gateway's queue before they were "
                                  "sent on (or dropped), by tenant and priority class.",
                                  {"tenant", "class"}, LatencyBuckets())),
      tenant_tokens(r->AddCounter(
          "infergrid_tenant_tokens_total",
          "Tokens served, by tenant, priority class and kind (prompt, completion): as the "
          "model server reported in usage, else estimated.",
          {"tenant", "class", "kind"})),
      auth_failures(r->AddCounter("infergrid_auth_failures_total",
                                  "Requests refused for their credentials, by reason "
                                  "(missing_key, unknown_key, unknown_tenant, "
                                  "invalid_priority_class, priority_not_allowed).",
                                  {"reason"})),
      reloads(r->AddCounter("infergrid_config_reloads_total",
                            "Configuration reloads (SIGHUP, a change of the file, or the admin "
                            "API), by result; a failed one leaves the running configuration in "
                            "place.",
                            {"result"})),
      health_probes(r->AddCounter("infergrid_health_probes_total",
                                  "Active health probes of endpoints, by result (pass, fail).",
                                  {"endpoint", "result"})),
      ejections(r->AddCounter("infergrid_endpoint_ejections_total",
                              "Endpoints taken out of rotation by health checks, by source "
                              "(passive: failed requests; active: failed probes).",
                              {"pool", "endpoint", "source"})),
      rejoins(r->AddCounter("infergrid_endpoint_rejoins_total",
                            "Endpoints brought back into rotation after an ejection.",
                            {"pool", "endpoint"})),
      request_retries(r->AddCounter(
          "infergrid_request_retries_total",
          "Requests resent to another endpoint after their upstream failed before any response "
          "byte reached the client, by reason (connect_failed, connect_timeout, "
          "reset_before_response, unavailable: a 503 from the server).",
          {"pool", "reason"})),
      retries_refused(r->AddCounter(
          "infergrid_request_retries_refused_total",
          "Retryable failures not retried, by reason (budget: the retry budget was spent; "
          "max_retries: the request had its retries; no_endpoint: none left to try).",
          {"pool", "reason"})),
      endpoint_changes(r->AddCounter(
          "infergrid_endpoint_changes_total",
          "Endpoint lifecycle changes (added, drain, undrain, removed, drain_timeout), from "
          "config reloads or the admin API.",
          {"pool", "endpoint", "change"})),
      admin_requests(r->AddCounter("infergrid_admin_requests_total",
                                   "Admin API requests, by result (ok, unauthorized, "
                                   "disabled, bad_request, not_found).",
                                   {"result"})) {}

}  // namespace infergrid::gateway
