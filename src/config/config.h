#pragma once
// The v1 configuration API (apiVersion: infergrid.dev/v1, kind: Gateway), parsed from YAML
// into validated structs. The schema is documented in docs/config-v1.md. v1 is a promise:
// fields are added, never changed in meaning.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/duration.h"
#include "common/host_port.h"
#include "common/result.h"
#include "infergrid/endpoint.h"

namespace infergrid::config {

// A position in the source file, 1-based; 0 means unknown.
struct Mark {
  int line = 0;
  int column = 0;
};

// A parameter of a plugin: the raw scalar and where it was written, so the plugin's own
// factory can report errors with file:line:column.
struct Param {
  std::string value;
  Mark mark;
  std::string path;  // e.g. spec.schedulingProfiles[0].scorers[1].parameters.foo
};

struct PluginConfig {
  std::string name;
  double weight = 1.0;
  std::map<std::string, Param> parameters;
  Mark mark;
  std::string path;
};

struct SchedulingProfile {
  std::string name;
  std::vector<PluginConfig> filters;
  std::vector<PluginConfig> scorers;
  PluginConfig picker;
  Mark mark;
  std::string path;
};

// What a model server is, for scorers that weigh hardware (expected-ttft, load, hardware-cost,
// prefix-cache's per-endpoint index size): an accelerator and model profile from the engine
// model (docs/sim-model.md), or the figures themselves for hardware without one.
struct Hardware {
  std::string accelerator;  // e.g. h200; empty: no profile
  std::string model;        // e.g. llama-3.1-70b
  uint32_t tp = 1;
  std::string dtype = "bf16";
  std::string kv_cache_dtype = "auto";
  double gpu_memory_utilization = 0.9;
  uint32_t block_size = 16;
  uint32_t max_num_seqs = 0;            // 0: vLLM's default for the device
  uint32_t max_num_batched_tokens = 0;  // 0: likewise
  double price_per_hour = 0;            // the whole server, in any currency unit
  // Figures that override the profile's (or stand alone): 0 leaves them to the profile.
  double prefill_tokens_per_second = 0;
  double decode_tokens_per_second = 0;
  uint64_t kv_cache_tokens = 0;
};

struct Endpoint {
  std::string url;
  std::map<std::string, std::string> labels;
  // Its capacity, resolved from its `hardware` (or its pool's); zeros where unknown.
  EndpointCapacity capacity;
  Mark mark;
  std::string path;
};

struct Model {
  std::string name;
  std::vector<std::string> aliases;
};

struct Pool {
  std::string name;
  std::vector<Model> models;
  bool has_hardware = false;
  Hardware hardware;  // every endpoint's, unless one gives its own
  std::vector<Endpoint> endpoints;
  std::string scheduling_profile = "default";
  Mark mark;
  std::string path;
};

struct Timeouts {
  Duration connect = std::chrono::seconds(5);
  Duration first_byte = std::chrono::seconds(300);
  Duration idle = std::chrono::seconds(60);
  Duration request_headers = std::chrono::seconds(10);
  Duration client_idle = std::chrono::seconds(60);
};

struct Limits {
  uint64_t max_request_body_bytes = 16ull << 20;
  uint32_t max_request_header_bytes = 32u << 10;
};

struct Upstream {
  uint32_t max_connections_per_endpoint = 1024;
  uint32_t max_idle_connections_per_endpoint = 128;
};

struct Scrape {
  Duration interval = std::chrono::seconds(1);
  Duration timeout = std::chrono::seconds(1);
  Duration stale_after = std::chrono::seconds(5);
  std::string path = "/metrics";
  bool enabled = true;
};

// Multi-tenant QoS (docs/qos.md). A request belongs to a tenant, found by its API key
// (`Authorization: Bearer`, compared by SHA-256: keys are never stored or logged) or by a
// configured header; each tenant has a priority class, a weight and limits.
struct PriorityClass {
  std::string name;
  int32_t priority = 0;  // higher goes first, strictly
  // Sheddable: refused early (429) when its expected wait exceeds max_queue_wait.
  bool sheddable = false;
  Duration max_queue_wait{0};  // 0: flowControl.queueTimeout
  Mark mark;
  std::string path;
};

struct TenantLimits {                    // 0: no limit
  uint32_t max_concurrent_requests = 0;  // queued plus in flight
  uint32_t requests_per_minute = 0;
  uint64_t tokens_per_minute = 0;  // prompt plus output; estimated, corrected from usage
};

struct Tenant {
  std::string name;
  std::vector<std::string> api_key_sha256;  // lowercase hex digests of the tenant's keys
  std::string priority_class = "standard";
  double weight = 1;
  TenantLimits limits;
  Mark mark;
  std::string path;
};

struct Tenancy {
  // On: a request without a known API key is a 401.
  bool require_api_key = false;
  // If set, a request without a (known) key names its tenant in this header.
  std::string tenant_header;
  // Who unidentified requests belong to (when keys are not required); an implicit tenant of
  // weight 1 in class `standard` unless `tenants` defines it.
  std::string default_tenant = "default";
  // Defaults when none are given: critical (2), standard (1), sheddable (0, sheddable).
  std::vector<PriorityClass> classes;
  std::vector<Tenant> tenants;
};

// When a pool is saturated, requests wait in the gateway (docs/qos.md). Hard bounds (the peak
// KV, max_requests_per_endpoint) keep a request off an endpoint; soft ones (a full batch, the
// scraped queue depth and KV usage) mark it busy; the pool is saturated when every endpoint
// is busy or at a hard bound.
struct Saturation {
  uint32_t max_requests_per_endpoint = 0;  // a hard bound; 0: none
  // The most KV cache an endpoint's in-flight requests and the next would hold together
  // (each growing to its max_tokens) stays within this fraction of it (hard, when its size is
  // known); scraped usage at it marks the endpoint busy (soft).
  double kv_cache_utilization = 0.95;
  uint32_t queue_depth = 5;  // scraped vllm:num_requests_waiting at or above this: busy
  uint32_t output_tokens_estimate = 256;  // for requests without max_tokens
};

struct FlowControl {
  bool enabled = true;
  uint32_t max_queued_requests = 10000;  // per pool; beyond it a 503 `queue_full`
  Duration queue_timeout = std::chrono::seconds(60);
  Saturation saturation;
  // Agent-aware admission: a tenant's continuing turns (a session seen before) go before its
  // new sessions, unless a new session has waited `newSessionMaxDelay`.
  bool prefer_continuing_sessions = true;
  Duration new_session_max_delay = std::chrono::seconds(10);
};

// Endpoint health (docs/zero-downtime.md). Passive: consecutive failed requests (connect
// failures, resets before a response, 5xx, first-byte timeouts) eject an endpoint for
// baseEjection, doubling on each ejection in a row up to maxEjection; it rejoins when the
// ejection ends and (with active checks on) a probe passes. Active: GET path at interval.
struct PassiveHealth {
  bool enabled = true;
  uint32_t consecutive_failures = 3;
  Duration base_ejection = std::chrono::seconds(5);
  Duration max_ejection = std::chrono::seconds(60);
};
struct ActiveHealth {
  bool enabled = true;
  std::string path = "/health";
  Duration interval = std::chrono::seconds(2);
  Duration timeout = std::chrono::seconds(1);
  uint32_t healthy_threshold = 1;    // passes in a row that bring an endpoint back
  uint32_t unhealthy_threshold = 2;  // failures in a row that take it out
};
struct Health {
  PassiveHealth passive;
  ActiveHealth active;
};

// Retrying a request on another endpoint when its upstream failed before any response byte
// reached the client (connect failure, reset before headers, a 503 from the server).
struct Retries {
  uint32_t max_retries = 2;        // per request; 0: never
  double budget_percent = 20;      // retries at most this share of requests...
  uint32_t min_retry_reserve = 3;  // ...plus this many, refilled as requests arrive
};

// Lifecycle of the process: SIGTERM and endpoint drains.
struct Lifecycle {
  Duration shutdown_timeout = std::chrono::seconds(30);      // in-flight streams get this long
  Duration drain_timeout = std::chrono::seconds(300);        // removal waits this long for a drain
  Duration config_watch_interval = std::chrono::seconds(2);  // 0: no watching of --config
};

// The authenticated admin API (/admin/...): off unless a key is configured.
struct Admin {
  std::vector<std::string> api_key_sha256;
};

// High availability: replicas share routing decisions (prefix index, session homes) over a
// small TCP protocol; a (re)connected peer sends its whole state first.
struct Ha {
  std::string listen_host;  // empty: peering off
  uint16_t listen_port = 0;
  std::vector<std::string> peers;  // HOST:PORT; a name resolving to several addresses dials each
  Duration resolve_interval = std::chrono::seconds(5);
  std::string replica_id;  // empty: generated
  // Tenant limits across replicas: each replica enforces limit / (replicas it can reach + 1).
};

// Recording the traffic served as a Mooncake-format trace (docs/planner.md): arrival, token
// counts from the servers' usage, the session key, and hash ids from the gateway's own prefix
// block hashes (remapped to small integers; never the text). Rotated by size.
struct Recording {
  bool enabled = false;
  std::string path;                        // required when enabled
  uint64_t max_file_bytes = 100ull << 20;  // then the file moves to PATH.1 (PATH.1 to .2, ...)
  uint32_t max_files = 5;                  // rotated files kept
  uint32_t block_size = 512;               // tokens per hash id (a multiple of 16)
};

struct Gateway {
  std::string name = "infergrid";
  std::string listen_host = "0.0.0.0";
  uint16_t listen_port = 8000;
  uint32_t workers = 0;  // 0: one per core
  Timeouts timeouts;
  Limits limits;
  Upstream upstream;
  Scrape scrape;
  Tenancy tenancy;
  FlowControl flow_control;
  Health health;
  Retries retries;
  Lifecycle lifecycle;
  Admin admin;
  Ha ha;
  Recording recording;
  std::vector<Pool> pools;
  std::vector<SchedulingProfile> profiles;
  std::string source;  // the file it was read from, for error messages
};

// Parses and validates a v1 document. Errors read "FILE:LINE:COL: PATH: what was expected".
Result<Gateway> ParseGateway(const std::string& yaml_text, const std::string& source_name);
Result<Gateway> LoadGatewayFile(const std::string& path);

// The priority classes used when a config names none: critical, standard, sheddable.
std::vector<PriorityClass> DefaultPriorityClasses();

// The profile used when a config names none (docs/routing.md says why these plugins).
SchedulingProfile DefaultProfile();

// The capacity an endpoint with this hardware offers, from the engine model's profiles and
// roofline, with the figures given overriding; errors name the field.
Result<EndpointCapacity> ResolveCapacity(const Hardware& h);

// Builds the config for `infergrid gateway --model M --endpoint URL ...`.
Result<Gateway> FromFlags(const std::string& model, const std::vector<std::string>& endpoints,
                          const std::string& listen);

// "FILE:LINE:COL: PATH: MESSAGE" (parts that are unknown are left out).
std::string FormatError(const std::string& source, const Mark& mark, const std::string& path,
                        const std::string& message);

}  // namespace infergrid::config
