#include "config/config.h"

#include <fmt/format.h>

#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "common/strings.h"
#include "config/yaml_reader.h"
#include "engine_model/server.h"

namespace infergrid::config {

std::string FormatError(const std::string& source, const Mark& mark, const std::string& path,
                        const std::string& message) {
  std::string out = source;
  if (mark.line > 0) out += fmt::format(":{}:{}", mark.line, mark.column);
  if (!out.empty()) out += ": ";
  if (!path.empty()) out += path + ": ";
  return out + message;
}

namespace {

// http://host:port[/] only: the gateway adds the request path itself.
Status CheckEndpointUrl(const std::string& url) {
  if (!StartsWith(url, "http://"))
    return Status::Error("expected an http:// URL such as http://10.0.0.5:8000");
  std::string rest = url.substr(7);
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.find('/') != std::string::npos)
    return Status::Error("expected http://HOST:PORT with no path");
  auto hp = ParseHostPort(rest);
  if (!hp.ok() || rest.empty() || rest.front() == ':') {
    return Status::Error("expected http://HOST:PORT such as http://10.0.0.5:8000");
  }
  if (hp->second == 0) return Status::Error("port must be 1-65535");
  return Status::Ok();
}

// An optional integer field of `n`: `*out` is left as it is when the field is absent.
template <typename T>
Status OptionalInt(const Node& n, const char* key, int64_t lo, int64_t hi, T* out) {
  if (!n.Has(key)) return Status::Ok();
  IG_ASSIGN_OR_RETURN(int64_t v, n.Get(key).Int(lo, hi));
  *out = static_cast<T>(v);
  return Status::Ok();
}

// An optional duration field of `n`, left as it is when absent; zero is allowed only when
// `allow_zero`.
Status OptionalDur(const Node& n, const char* key, bool allow_zero, Duration* out) {
  if (!n.Has(key)) return Status::Ok();
  Node v = n.Get(key);
  IG_ASSIGN_OR_RETURN(Duration d, v.Dur());
  if (allow_zero && d.count() < 0) return v.Error("must not be negative");
  if (!allow_zero && d.count() <= 0) return v.Error("must be greater than zero");
  *out = d;
  return Status::Ok();
}

// An optional boolean field of `n`, left as it is when absent.
Status OptionalBool(const Node& n, const char* key, bool* out) {
  if (!n.Has(key)) return Status::Ok();
  IG_ASSIGN_OR_RETURN(*out, n.Get(key).Bool());
  return Status::Ok();
}

// Two duration fields of `n` that must be in order, `lo` <= `hi`. The error is at the one
// that `blame_lo` names when it is written, else at the other (the defaults are in order, so
// one of them is written).
Status CheckOrder(const Node& n, const char* lo_key, Duration lo, const char* hi_key, Duration hi,
                  bool blame_lo) {
  if (lo <= hi) return Status::Ok();
  auto value = [&n](const char* key, Duration d) {
    return FormatDuration(d) + (n.Has(key) ? "" : ", the default");
  };
  if (blame_lo ? !n.Has(lo_key) : n.Has(hi_key)) {
    return n.Get(hi_key).Error(fmt::format("must be at least {} ({}), got {}", lo_key,
                                           value(lo_key, lo), FormatDuration(hi)));
  }
  return n.Get(lo_key).Error(fmt::format("must be at most {} ({}), got {}", hi_key,
                                         value(hi_key, hi), FormatDuration(lo)));
}

Result<PluginConfig> ParsePlugin(const Node& n, bool weighted) {
  PluginConfig p;
  p.mark = n.mark();
  p.path = n.path();
  if (n.IsScalar()) {  // shorthand: "- least-load"
    IG_ASSIGN_OR_RETURN(p.name, n.String());
    return p;
  }
  IG_RETURN_IF_ERROR(n.ExpectMap());
  if (weighted) {
    IG_RETURN_IF_ERROR(n.CheckKeys({"name", "weight", "parameters"}));
  } else {
    IG_RETURN_IF_ERROR(n.CheckKeys({"name", "parameters"}));
  }
  if (!n.Has("name")) return n.Error("missing required field 'name'");
  IG_ASSIGN_OR_RETURN(p.name, n.Get("name").String());
  if (weighted && n.Has("weight")) {
    IG_ASSIGN_OR_RETURN(p.weight, n.Get("weight").Double(0, 1e6));
  }
  if (n.Has("parameters") && !n.Get("parameters").IsNull()) {
    Node params = n.Get("parameters");
    IG_RETURN_IF_ERROR(params.ForEachEntry([&](const std::string& key, const Node& v) -> Status {
      if (!v.IsScalar()) return v.Error("plugin parameters must be scalars");
      IG_ASSIGN_OR_RETURN(std::string value, v.String());
      p.parameters[key] = Param{value, v.mark(), v.path()};
      return Status::Ok();
    }));
  }
  return p;
}

Status ParsePluginList(const Node& n, bool weighted, std::vector<PluginConfig>* out) {
  IG_RETURN_IF_ERROR(n.ExpectSequence());
  for (size_t i = 0; i < n.size(); ++i) {
    IG_ASSIGN_OR_RETURN(PluginConfig p, ParsePlugin(n.At(i), weighted));
    out->push_back(std::move(p));
  }
  return Status::Ok();
}

Result<SchedulingProfile> ParseProfile(const Node& n) {
  SchedulingProfile prof;
  prof.mark = n.mark();
  prof.path = n.path();
  IG_RETURN_IF_ERROR(n.ExpectMap());
  IG_RETURN_IF_ERROR(n.CheckKeys({"name", "filters", "scorers", "picker"}));
  if (!n.Has("name")) return n.Error("missing required field 'name'");
  IG_ASSIGN_OR_RETURN(prof.name, n.Get("name").String());
  if (n.Has("filters")) IG_RETURN_IF_ERROR(ParsePluginList(n.Get("filters"), false, &prof.filters));
  if (n.Has("scorers")) IG_RETURN_IF_ERROR(ParsePluginList(n.Get("scorers"), true, &prof.scorers));
  if (n.Has("picker")) {
    IG_ASSIGN_OR_RETURN(prof.picker, ParsePlugin(n.Get("picker"), false));
  } else {
    prof.picker.name = "max-score";
  }
  return prof;
}

Result<Model> ParseModel(const Node& n) {
  Model m;
  if (n.IsScalar()) {
    IG_ASSIGN_OR_RETURN(m.name, n.String());
  } else {
    IG_RETURN_IF_ERROR(n.ExpectMap());
    IG_RETURN_IF_ERROR(n.CheckKeys({"name", "aliases"}));
    if (!n.Has("name")) return n.Error("missing required field 'name'");
    IG_ASSIGN_OR_RETURN(m.name, n.Get("name").String());
    if (n.Has("aliases")) {
      Node a = n.Get("aliases");
      IG_RETURN_IF_ERROR(a.ExpectSequence());
      for (size_t i = 0; i < a.size(); ++i) {
        IG_ASSIGN_OR_RETURN(std::string alias, a.At(i).String());
        if (alias.empty()) return a.At(i).Error("an alias must not be empty");
        m.aliases.push_back(alias);
      }
    }
  }
  if (m.name.empty()) return n.Error("a model name must not be empty");
  return m;
}

Result<Hardware> ParseHardware(const Node& n) {
  Hardware h;
  IG_RETURN_IF_ERROR(n.ExpectMap());
  IG_RETURN_IF_ERROR(
      n.CheckKeys({"accelerator", "model", "tp", "dtype", "kvCacheDtype", "gpuMemoryUtilization",
                   "blockSize", "maxNumSeqs", "maxNumBatchedTokens", "pricePerHour",
                   "prefillTokensPerSecond", "decodeTokensPerSecond", "kvCacheTokens"}));
  auto str = [&n](const char* key, std::string* out) -> Status {
    if (!n.Has(key)) return Status::Ok();
    IG_ASSIGN_OR_RETURN(*out, n.Get(key).String());
    return Status::Ok();
  };
  auto num = [&n](const char* key, double* out, double lo, double hi) -> Status {
    if (!n.Has(key)) return Status::Ok();
    IG_ASSIGN_OR_RETURN(*out, n.Get(key).Double(lo, hi));
    return Status::Ok();
  };
  IG_RETURN_IF_ERROR(str("accelerator", &h.accelerator));
  IG_RETURN_IF_ERROR(str("model", &h.model));
  IG_RETURN_IF_ERROR(OptionalInt(n, "tp", 1, 64, &h.tp));
  IG_RETURN_IF_ERROR(str("dtype", &h.dtype));
  IG_RETURN_IF_ERROR(str("kvCacheDtype", &h.kv_cache_dtype));
  IG_RETURN_IF_ERROR(num("gpuMemoryUtilization", &h.gpu_memory_utilization, 0.01, 1));
  IG_RETURN_IF_ERROR(OptionalInt(n, "blockSize", 1, 1024, &h.block_size));
  IG_RETURN_IF_ERROR(OptionalInt(n, "maxNumSeqs", 1, 1000000, &h.max_num_seqs));
  IG_RETURN_IF_ERROR(
      OptionalInt(n, "maxNumBatchedTokens", 1, 100000000, &h.max_num_batched_tokens));
  IG_RETURN_IF_ERROR(num("pricePerHour", &h.price_per_hour, 0, 1e9));
  IG_RETURN_IF_ERROR(num("prefillTokensPerSecond", &h.prefill_tokens_per_second, 0, 1e12));
  IG_RETURN_IF_ERROR(num("decodeTokensPerSecond", &h.decode_tokens_per_second, 0, 1e12));
  IG_RETURN_IF_ERROR(OptionalInt(n, "kvCacheTokens", 0, int64_t{1} << 50, &h.kv_cache_tokens));
  if (h.accelerator.empty() != h.model.empty()) {
    return n.Error("give both 'accelerator' and 'model' (a profile), or neither");
  }
  if (!h.accelerator.empty()) {
    // Resolve now, so a bad name or a model that does not fit is reported here.
    auto cap = ResolveCapacity(h);
    if (!cap.ok()) {
      // "field: what is wrong" points at the field; anything else at the whole mapping.
      const std::string m = cap.status().message();
      size_t colon = m.find(": ");
      std::string field = colon == std::string::npos ? "" : m.substr(0, colon);
      if (!field.empty() && n.Has(field)) return n.Get(field).Error(m.substr(colon + 2));
      return n.Error(m);
    }
  }
  return h;
}

Result<Endpoint> ParseEndpoint(const Node& n, const Pool& pool) {
  Endpoint e;
  e.mark = n.mark();
  e.path = n.path();
  if (n.IsScalar()) {
    IG_ASSIGN_OR_RETURN(e.url, n.String());
  } else {
    IG_RETURN_IF_ERROR(n.ExpectMap());
    IG_RETURN_IF_ERROR(n.CheckKeys({"url", "labels", "hardware"}));
    if (!n.Has("url")) return n.Error("missing required field 'url'");
    IG_ASSIGN_OR_RETURN(e.url, n.Get("url").String());
    if (n.Has("labels")) {
      IG_RETURN_IF_ERROR(
          n.Get("labels").ForEachEntry([&](const std::string& k, const Node& v) -> Status {
            IG_ASSIGN_OR_RETURN(std::string value, v.String());
            e.labels[k] = value;
            return Status::Ok();
          }));
    }
    if (n.Has("hardware")) {
      IG_ASSIGN_OR_RETURN(Hardware h, ParseHardware(n.Get("hardware")));
      IG_ASSIGN_OR_RETURN(e.capacity, ResolveCapacity(h));
    }
  }
  if (pool.has_hardware && e.capacity.kv_cache_tokens == 0 &&
      e.capacity.prefill_tokens_per_s == 0 && e.capacity.price_per_hour == 0) {
    IG_ASSIGN_OR_RETURN(e.capacity, ResolveCapacity(pool.hardware));
  }
  Node url_node = n.IsScalar() ? n : n.Get("url");
  Status s = CheckEndpointUrl(e.url);
  if (!s.ok()) return url_node.Error(s.message() + fmt::format(", got '{}'", e.url));
  if (e.url.back() == '/') e.url.pop_back();
  return e;
}

Result<Pool> ParsePool(const Node& n) {
  Pool p;
  p.mark = n.mark();
  p.path = n.path();
  IG_RETURN_IF_ERROR(n.ExpectMap());
  IG_RETURN_IF_ERROR(n.CheckKeys({"name", "models", "endpoints", "schedulingProfile", "hardware"}));
  if (n.Has("hardware")) {
    IG_ASSIGN_OR_RETURN(p.hardware, ParseHardware(n.Get("hardware")));
    p.has_hardware = true;
  }
  if (!n.Has("name")) return n.Error("missing required field 'name'");
  IG_ASSIGN_OR_RETURN(p.name, n.Get("name").String());
  if (!n.Has("models"))
    return n.Error("missing required field 'models' (the model names this pool serves)");
  Node models = n.Get("models");
  IG_RETURN_IF_ERROR(models.ExpectSequence());
  if (models.size() == 0) return models.Error("a pool must serve at least one model");
  for (size_t i = 0; i < models.size(); ++i) {
    IG_ASSIGN_OR_RETURN(Model m, ParseModel(models.At(i)));
    p.models.push_back(std::move(m));
  }
  if (!n.Has("endpoints")) return n.Error("missing required field 'endpoints'");
  Node eps = n.Get("endpoints");
  IG_RETURN_IF_ERROR(eps.ExpectSequence());
  std::set<std::string> seen;
  for (size_t i = 0; i < eps.size(); ++i) {
    IG_ASSIGN_OR_RETURN(Endpoint e, ParseEndpoint(eps.At(i), p));
    if (!seen.insert(e.url).second)
      return eps.At(i).Error(fmt::format("endpoint '{}' is listed twice", e.url));
    p.endpoints.push_back(std::move(e));
  }
  if (n.Has("schedulingProfile")) {
    IG_ASSIGN_OR_RETURN(p.scheduling_profile, n.Get("schedulingProfile").String());
  }
  return p;
}

// An HTTP header name as a config may write it: letters, digits, '-' and '_'.
bool IsHeaderName(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  }
  return true;
}

// A key's SHA-256 as 64 hex digits, lowercased. The value is never echoed in an error: a
// key pasted here by mistake must not end up in logs.
Result<std::string> ParseKeyDigest(const Node& n) {
  IG_ASSIGN_OR_RETURN(std::string d, n.String());
  const char* what = "expected the key's SHA-256 as 64 hex digits (printf %s \"$KEY\" | sha256sum)";
  if (d.size() != 64) return n.Error(fmt::format("{}, got {} characters", what, d.size()));
  for (size_t i = 0; i < d.size(); ++i) {
    if (!std::isxdigit(static_cast<unsigned char>(d[i]))) {
      return n.Error(
          fmt::format("{}, got a character that is not a hex digit at offset {}", what, i));
    }
  }
  return AsciiLower(d);
}

// An `apiKeySha256` field: a list of digests, or one digest as shorthand.
Status ParseKeyDigests(const Node& keys, std::vector<std::string>* out) {
  if (keys.IsScalar()) {
    IG_ASSIGN_OR_RETURN(std::string d, ParseKeyDigest(keys));
    out->push_back(std::move(d));
    return Status::Ok();
  }
  IG_RETURN_IF_ERROR(keys.ExpectSequence());
  for (size_t i = 0; i < keys.size(); ++i) {
    IG_ASSIGN_OR_RETURN(std::string d, ParseKeyDigest(keys.At(i)));
    out->push_back(std::move(d));
  }
  return Status::Ok();
}

std::string ClassNames(const std::vector<PriorityClass>& classes) {
  std::string list;
  for (const auto& c : classes) list += (list.empty() ? "" : ", ") + c.name;
  return list;
}

Result<PriorityClass> ParsePriorityClass(const Node& n) {
  PriorityClass c;
  c.mark = n.mark();
  c.path = n.path();
  IG_RETURN_IF_ERROR(n.ExpectMap());
  IG_RETURN_IF_ERROR(n.CheckKeys({"name", "priority", "sheddable", "maxQueueWait"}));
  if (!n.Has("name")) return n.Error("missing required field 'name'");
  IG_ASSIGN_OR_RETURN(c.name, n.Get("name").String());
  if (c.name.empty()) return n.Get("name").Error("a priority class name must not be empty");
  if (!n.Has("priority")) {
    return n.Error("missing required field 'priority' (an integer; higher goes first)");
  }
  IG_ASSIGN_OR_RETURN(int64_t prio, n.Get("priority").Int(-1000000, 1000000));
  c.priority = static_cast<int32_t>(prio);
  if (n.Has("sheddable")) {
    IG_ASSIGN_OR_RETURN(c.sheddable, n.Get("sheddable").Bool());
  }
  if (n.Has("maxQueueWait")) {
    IG_ASSIGN_OR_RETURN(c.max_queue_wait, n.Get("maxQueueWait").Dur());
    if (c.max_queue_wait.count() < 0) return n.Get("maxQueueWait").Error("must not be negative");
  }
  return c;
}

// A tenant as written; its class is checked against the classes by ParseTenancy.
Result<Tenant> ParseTenant(const Node& n) {
  Tenant t;
  t.mark = n.mark();
  t.path = n.path();
  IG_RETURN_IF_ERROR(n.ExpectMap());
  IG_RETURN_IF_ERROR(n.CheckKeys({"name", "apiKeySha256", "priorityClass", "weight", "limits"}));
  if (!n.Has("name")) return n.Error("missing required field 'name'");
  IG_ASSIGN_OR_RETURN(t.name, n.Get("name").String());
  if (t.name.empty()) return n.Get("name").Error("a tenant name must not be empty");
  if (n.Has("apiKeySha256")) {
    IG_RETURN_IF_ERROR(ParseKeyDigests(n.Get("apiKeySha256"), &t.api_key_sha256));
  }
  if (n.Has("priorityClass")) {
    IG_ASSIGN_OR_RETURN(t.priority_class, n.Get("priorityClass").String());
  }
  if (n.Has("weight")) {
    IG_ASSIGN_OR_RETURN(t.weight, n.Get("weight").Double(0.001, 1e6));
  }
  if (n.Has("limits")) {
    Node l = n.Get("limits");
    IG_RETURN_IF_ERROR(l.ExpectMap());
    IG_RETURN_IF_ERROR(
        l.CheckKeys({"maxConcurrentRequests", "requestsPerMinute", "tokensPerMinute"}));
    IG_RETURN_IF_ERROR(
        OptionalInt(l, "maxConcurrentRequests", 0, 10000000, &t.limits.max_concurrent_requests));
    IG_RETURN_IF_ERROR(
        OptionalInt(l, "requestsPerMinute", 0, 1000000000, &t.limits.requests_per_minute));
    IG_RETURN_IF_ERROR(
        OptionalInt(l, "tokensPerMinute", 0, 1000000000000000, &t.limits.tokens_per_minute));
  }
  return t;
}

Status ParseTenancy(const Node& n, Tenancy* out) {
  IG_RETURN_IF_ERROR(n.ExpectMap());
  IG_RETURN_IF_ERROR(n.CheckKeys(
      {"requireApiKey", "tenantHeader", "defaultTenant", "priorityClasses", "tenants"}));
  if (n.Has("requireApiKey")) {
    IG_ASSIGN_OR_RETURN(out->require_api_key, n.Get("requireApiKey").Bool());
  }
  if (n.Has("tenantHeader")) {
    IG_ASSIGN_OR_RETURN(std::string h, n.Get("tenantHeader").String());
    if (!IsHeaderName(h)) {
      return n.Get("tenantHeader")
          .Error(fmt::format(
              "expected an HTTP header name (letters, digits, '-' and '_'), got '{}'", h));
    }
    out->tenant_header = AsciiLower(h);
  }
  if (n.Has("defaultTenant")) {
    IG_ASSIGN_OR_RETURN(out->default_tenant, n.Get("defaultTenant").String());
    if (out->default_tenant.empty()) {
      return n.Get("defaultTenant").Error("a tenant name must not be empty");
    }
  }
  // Classes first, whatever the order in the file: tenants refer to them.
  if (n.Has("priorityClasses")) {
    Node classes = n.Get("priorityClasses");
    IG_RETURN_IF_ERROR(classes.ExpectSequence());
    std::set<std::string> names;
    for (size_t i = 0; i < classes.size(); ++i) {
      IG_ASSIGN_OR_RETURN(PriorityClass c, ParsePriorityClass(classes.At(i)));
      if (!names.insert(c.name).second) {
        return classes.At(i).Get("name").Error(
            fmt::format("priority class '{}' is defined twice", c.name));
      }
      out->classes.push_back(std::move(c));
    }
  }
  if (out->classes.empty()) out->classes = DefaultPriorityClasses();
  auto has_class = [out](const std::string& name) {
    for (const auto& c : out->classes) {
      if (c.name == name) return true;
    }
    return false;
  };
  bool any_key = false;
  bool default_defined = false;
  if (n.Has("tenants")) {
    Node tenants = n.Get("tenants");
    IG_RETURN_IF_ERROR(tenants.ExpectSequence());
    std::set<std::string> names;
    std::map<std::string, std::string> key_owner;  // digest -> tenant
    for (size_t i = 0; i < tenants.size(); ++i) {
      Node tn = tenants.At(i);
      IG_ASSIGN_OR_RETURN(Tenant t, ParseTenant(tn));
      if (!names.insert(t.name).second) {
        return tn.Get("name").Error(fmt::format("tenant '{}' is defined twice", t.name));
      }
      if (!has_class(t.priority_class)) {
        if (tn.Has("priorityClass")) {
          return tn.Get("priorityClass")
              .Error(fmt::format("no priority class named '{}'; expected one of: {}",
                                 t.priority_class, ClassNames(out->classes)));
        }
        return tn.Error(fmt::format(
            "priorityClass: no class named '{}' (the default); give the tenant one of: {}",
            t.priority_class, ClassNames(out->classes)));
      }
      Node keys = tn.Get("apiKeySha256");
      for (size_t k = 0; k < t.api_key_sha256.size(); ++k) {
        Node at = keys.IsScalar() ? keys : keys.At(k);
        auto [it, inserted] = key_owner.emplace(t.api_key_sha256[k], t.name);
        if (inserted) continue;
        if (it->second == t.name) return at.Error("this key digest is listed twice");
        return at.Error(
            fmt::format("tenant '{}' has the same key digest as tenant '{}'; a key belongs to "
                        "one tenant",
                        t.name, it->second));
      }
      any_key = any_key || !t.api_key_sha256.empty();
      default_defined = default_defined || t.name == out->default_tenant;
      out->tenants.push_back(std::move(t));
    }
  }
  if (!default_defined && out->default_tenant != "default") {
    return n.Get("defaultTenant")
        .Error(fmt::format("no tenant named '{}' in spec.tenancy.tenants", out->default_tenant));
  }
  if (!default_defined && !out->require_api_key && !has_class("standard")) {
    // The implicit tenant `default` is in class `standard`.
    return n.Get("priorityClasses")
        .Error(
            "no class named 'standard', the class of the implicit tenant 'default'; add one, "
            "or define tenant 'default' in spec.tenancy.tenants with its priorityClass");
  }
  if (out->require_api_key && !any_key) {
    return n.Get("requireApiKey")
        .Error("true, but no tenant has apiKeySha256; every request would be refused");
  }
  return Status::Ok();
}

Status ParseFlowControl(const Node& n, FlowControl* f) {
  IG_RETURN_IF_ERROR(n.ExpectMap());
  IG_RETURN_IF_ERROR(n.CheckKeys({"enabled", "maxQueuedRequests", "queueTimeout",
                                  "preferContinuingSessions", "newSessionMaxDelay", "saturation"}));
  if (n.Has("enabled")) {
    IG_ASSIGN_OR_RETURN(f->enabled, n.Get("enabled").Bool());
  }
  IG_RETURN_IF_ERROR(OptionalInt(n, "maxQueuedRequests", 1, 10000000, &f->max_queued_requests));
  if (n.Has("queueTimeout")) {
    IG_ASSIGN_OR_RETURN(f->queue_timeout, n.Get("queueTimeout").Dur());
    if (f->queue_timeout.count() <= 0) {
      return n.Get("queueTimeout").Error("must be greater than zero");
    }
  }
  if (n.Has("preferContinuingSessions")) {
    IG_ASSIGN_OR_RETURN(f->prefer_continuing_sessions, n.Get("preferContinuingSessions").Bool());
  }
  if (n.Has("newSessionMaxDelay")) {
    IG_ASSIGN_OR_RETURN(f->new_session_max_delay, n.Get("newSessionMaxDelay").Dur());
    if (f->new_session_max_delay.count() < 0) {
      return n.Get("newSessionMaxDelay").Error("must not be negative");
    }
  }
  if (n.Has("saturation")) {
    Node s = n.Get("saturation");
    IG_RETURN_IF_ERROR(s.ExpectMap());
    IG_RETURN_IF_ERROR(s.CheckKeys(
        {"maxRequestsPerEndpoint", "kvCacheUtilization", "queueDepth", "outputTokensEstimate"}));
    Saturation& sat = f->saturation;
    IG_RETURN_IF_ERROR(
        OptionalInt(s, "maxRequestsPerEndpoint", 0, 1000000, &sat.max_requests_per_endpoint));
    if (s.Has("kvCacheUtilization")) {
      IG_ASSIGN_OR_RETURN(sat.kv_cache_utilization, s.Get("kvCacheUtilization").Double(0.05, 1));
    }
    IG_RETURN_IF_ERROR(OptionalInt(s, "queueDepth", 0, 1000000, &sat.queue_depth));
    IG_RETURN_IF_ERROR(
        OptionalInt(s, "outputTokensEstimate", 1, 10000000, &sat.output_tokens_estimate));
  }
  return Status::Ok();
}

Status ParseHealth(const Node& n, Health* h) {
  IG_RETURN_IF_ERROR(n.ExpectMap());
  IG_RETURN_IF_ERROR(n.CheckKeys({"passive", "active"}));
  if (n.Has("passive")) {
    Node p = n.Get("passive");
    PassiveHealth& ph = h->passive;
    IG_RETURN_IF_ERROR(p.ExpectMap());
    IG_RETURN_IF_ERROR(
        p.CheckKeys({"enabled", "consecutiveFailures", "baseEjection", "maxEjection"}));
    IG_RETURN_IF_ERROR(OptionalBool(p, "enabled", &ph.enabled));
    IG_RETURN_IF_ERROR(OptionalInt(p, "consecutiveFailures", 1, 1000000, &ph.consecutive_failures));
    IG_RETURN_IF_ERROR(OptionalDur(p, "baseEjection", false, &ph.base_ejection));
    IG_RETURN_IF_ERROR(OptionalDur(p, "maxEjection", false, &ph.max_ejection));
    IG_RETURN_IF_ERROR(CheckOrder(p, "baseEjection", ph.base_ejection, "maxEjection",
                                  ph.max_ejection, /*blame_lo=*/false));
  }
  if (n.Has("active")) {
    Node a = n.Get("active");
    ActiveHealth& ah = h->active;
    IG_RETURN_IF_ERROR(a.ExpectMap());
    IG_RETURN_IF_ERROR(a.CheckKeys(
        {"enabled", "path", "interval", "timeout", "healthyThreshold", "unhealthyThreshold"}));
    IG_RETURN_IF_ERROR(OptionalBool(a, "enabled", &ah.enabled));
    if (a.Has("path")) {
      IG_ASSIGN_OR_RETURN(ah.path, a.Get("path").String());
      if (!StartsWith(ah.path, "/")) {
        return a.Get("path").Error(
            fmt::format("expected a path starting with '/', got '{}'", ah.path));
      }
    }
    IG_RETURN_IF_ERROR(OptionalDur(a, "interval", false, &ah.interval));
    IG_RETURN_IF_ERROR(OptionalDur(a, "timeout", false, &ah.timeout));
    IG_RETURN_IF_ERROR(
        CheckOrder(a, "timeout", ah.timeout, "interval", ah.interval, /*blame_lo=*/true));
    IG_RETURN_IF_ERROR(OptionalInt(a, "healthyThreshold", 1, 1000000, &ah.healthy_threshold));
    IG_RETURN_IF_ERROR(OptionalInt(a, "unhealthyThreshold", 1, 1000000, &ah.unhealthy_threshold));
  }
  return Status::Ok();
}

Status ParseRetries(const Node& n, Retries* r) {
  IG_RETURN_IF_ERROR(n.ExpectMap());
  IG_RETURN_IF_ERROR(n.CheckKeys({"maxRetries", "budgetPercent", "minRetryReserve"}));
  IG_RETURN_IF_ERROR(OptionalInt(n, "maxRetries", 0, 10, &r->max_retries));
  if (n.Has("budgetPercent")) {
    IG_ASSIGN_OR_RETURN(r->budget_percent, n.Get("budgetPercent").Double(0, 100));
  }
  IG_RETURN_IF_ERROR(OptionalInt(n, "minRetryReserve", 0, 1000000, &r->min_retry_reserve));
  return Status::Ok();
}

Status ParseRecording(const Node& n, Recording* r) {
  IG_RETURN_IF_ERROR(n.ExpectMap());
  IG_RETURN_IF_ERROR(n.CheckKeys({"enabled", "path", "maxFileBytes", "maxFiles", "blockSize"}));
  IG_RETURN_IF_ERROR(OptionalBool(n, "enabled", &r->enabled));
  if (n.Has("path")) {
    IG_ASSIGN_OR_RETURN(r->path, n.Get("path").String());
    if (r->path.empty()) return n.Get("path").Error("must not be empty");
  }
  IG_RETURN_IF_ERROR(
      OptionalInt(n, "maxFileBytes", int64_t{1} << 16, int64_t{1} << 40, &r->max_file_bytes));
  IG_RETURN_IF_ERROR(OptionalInt(n, "maxFiles", 1, 1000, &r->max_files));
  IG_RETURN_IF_ERROR(OptionalInt(n, "blockSize", 16, 1 << 20, &r->block_size));
  if (r->block_size % 16 != 0) {
    return n.Get("blockSize").Error("must be a multiple of 16 (the gateway's prefix block)");
  }
  if (r->enabled && r->path.empty()) return n.Error("recording.enabled needs a path");
  return Status::Ok();
}

Status ParseLifecycle(const Node& n, Lifecycle* l) {
  IG_RETURN_IF_ERROR(n.ExpectMap());
  IG_RETURN_IF_ERROR(n.CheckKeys({"shutdownTimeout", "drainTimeout", "configWatchInterval"}));
  IG_RETURN_IF_ERROR(OptionalDur(n, "shutdownTimeout", true, &l->shutdown_timeout));
  IG_RETURN_IF_ERROR(OptionalDur(n, "drainTimeout", false, &l->drain_timeout));
  IG_RETURN_IF_ERROR(OptionalDur(n, "configWatchInterval", true, &l->config_watch_interval));
  return Status::Ok();
}

Status ParseAdmin(const Node& n, Admin* a) {
  IG_RETURN_IF_ERROR(n.ExpectMap());
  IG_RETURN_IF_ERROR(n.CheckKeys({"apiKeySha256"}));
  if (!n.Has("apiKeySha256")) return Status::Ok();
  Node keys = n.Get("apiKeySha256");
  IG_RETURN_IF_ERROR(ParseKeyDigests(keys, &a->api_key_sha256));
  std::set<std::string> seen;
  for (size_t k = 0; k < a->api_key_sha256.size(); ++k) {
    if (!seen.insert(a->api_key_sha256[k]).second) {
      return (keys.IsScalar() ? keys : keys.At(k)).Error("this key digest is listed twice");
    }
  }
  return Status::Ok();
}

// A peer to dial: HOST:PORT with a host (an address or a DNS name) and a port 1-65535.
Status CheckPeer(const std::string& peer) {
  auto hp = ParseHostPort(peer);
  if (!hp.ok() || peer.front() == ':' || hp->first.find_first_of("/ \t@?#") != std::string::npos) {
    return Status::Error(
        fmt::format("expected HOST:PORT such as gw-0.gw:7946 or 10.0.0.5:7946, got '{}'", peer));
  }
  if (hp->second == 0) return Status::Error(fmt::format("port must be 1-65535, got '{}'", peer));
  return Status::Ok();
}

Status ParseHa(const Node& n, Ha* ha) {
  IG_RETURN_IF_ERROR(n.ExpectMap());
  IG_RETURN_IF_ERROR(n.CheckKeys({"listen", "peers", "resolveInterval", "replicaId"}));
  if (n.Has("listen")) {
    IG_ASSIGN_OR_RETURN(std::string listen, n.Get("listen").String());
    auto hp = ParseHostPort(listen);
    if (!hp.ok()) return n.Get("listen").Error(hp.status().message());
    ha->listen_host = hp->first;
    ha->listen_port = hp->second;
  }
  if (n.Has("peers")) {
    Node peers = n.Get("peers");
    IG_RETURN_IF_ERROR(peers.ExpectSequence());
    std::set<std::string> seen;
    for (size_t i = 0; i < peers.size(); ++i) {
      IG_ASSIGN_OR_RETURN(std::string peer, peers.At(i).String());
      if (peer.empty()) return peers.At(i).Error("expected HOST:PORT, got an empty string");
      Status s = CheckPeer(peer);
      if (!s.ok()) return peers.At(i).Error(s.message());
      if (!seen.insert(peer).second) {
        return peers.At(i).Error(fmt::format("peer '{}' is listed twice", peer));
      }
      ha->peers.push_back(std::move(peer));
    }
    if (!ha->peers.empty() && ha->listen_host.empty()) {
      return peers.Error(
          "peering needs spec.ha.listen (the address peers connect to), which is not set");
    }
  }
  IG_RETURN_IF_ERROR(OptionalDur(n, "resolveInterval", false, &ha->resolve_interval));
  if (n.Has("replicaId")) {
    IG_ASSIGN_OR_RETURN(ha->replica_id, n.Get("replicaId").String());
    if (ha->replica_id.empty()) {
      return n.Get("replicaId").Error("must not be empty (leave it out to have one generated)");
    }
  }
  return Status::Ok();
}

Status ParseSpec(const Node& spec, Gateway* g) {
  IG_RETURN_IF_ERROR(spec.ExpectMap());
  IG_RETURN_IF_ERROR(
      spec.CheckKeys({"listen", "workers", "timeouts", "limits", "upstream", "endpointMetrics",
                      "tenancy", "flowControl", "health", "retries", "lifecycle", "admin", "ha",
                      "recording", "pools", "schedulingProfiles"}));
  if (spec.Has("listen")) {
    IG_ASSIGN_OR_RETURN(std::string listen, spec.Get("listen").String());
    auto hp = ParseHostPort(listen);
    if (!hp.ok()) return spec.Get("listen").Error(hp.status().message());
    g->listen_host = hp->first;
    g->listen_port = hp->second;
  }
  if (spec.Has("workers")) {
    IG_ASSIGN_OR_RETURN(int64_t w, spec.Get("workers").Int(0, 256));
    g->workers = static_cast<uint32_t>(w);
  }
  if (spec.Has("timeouts")) {
    Node t = spec.Get("timeouts");
    IG_RETURN_IF_ERROR(t.ExpectMap());
    IG_RETURN_IF_ERROR(
        t.CheckKeys({"connect", "firstByte", "idle", "requestHeaders", "clientIdle"}));
    auto set = [&](const char* key, Duration* out) -> Status {
      if (!t.Has(key)) return Status::Ok();
      IG_ASSIGN_OR_RETURN(*out, t.Get(key).Dur());
      if (out->count() <= 0) return t.Get(key).Error("must be greater than zero");
      return Status::Ok();
    };
    IG_RETURN_IF_ERROR(set("connect", &g->timeouts.connect));
    IG_RETURN_IF_ERROR(set("firstByte", &g->timeouts.first_byte));
    IG_RETURN_IF_ERROR(set("idle", &g->timeouts.idle));
    IG_RETURN_IF_ERROR(set("requestHeaders", &g->timeouts.request_headers));
    IG_RETURN_IF_ERROR(set("clientIdle", &g->timeouts.client_idle));
  }
  if (spec.Has("limits")) {
    Node l = spec.Get("limits");
    IG_RETURN_IF_ERROR(l.ExpectMap());
    IG_RETURN_IF_ERROR(l.CheckKeys({"maxRequestBodyBytes", "maxRequestHeaderBytes"}));
    if (l.Has("maxRequestBodyBytes")) {
      IG_ASSIGN_OR_RETURN(int64_t v, l.Get("maxRequestBodyBytes").Int(1024, int64_t{1} << 34));
      g->limits.max_request_body_bytes = static_cast<uint64_t>(v);
    }
    if (l.Has("maxRequestHeaderBytes")) {
      IG_ASSIGN_OR_RETURN(int64_t v, l.Get("maxRequestHeaderBytes").Int(1024, 1 << 20));
      g->limits.max_request_header_bytes = static_cast<uint32_t>(v);
    }
  }
  if (spec.Has("upstream")) {
    Node u = spec.Get("upstream");
    IG_RETURN_IF_ERROR(u.ExpectMap());
    IG_RETURN_IF_ERROR(u.CheckKeys({"maxConnectionsPerEndpoint", "maxIdleConnectionsPerEndpoint"}));
    if (u.Has("maxConnectionsPerEndpoint")) {
      IG_ASSIGN_OR_RETURN(int64_t v, u.Get("maxConnectionsPerEndpoint").Int(1, 1 << 20));
      g->upstream.max_connections_per_endpoint = static_cast<uint32_t>(v);
    }
    if (u.Has("maxIdleConnectionsPerEndpoint")) {
      IG_ASSIGN_OR_RETURN(int64_t v, u.Get("maxIdleConnectionsPerEndpoint").Int(0, 1 << 20));
      g->upstream.max_idle_connections_per_endpoint = static_cast<uint32_t>(v);
    }
  }
  if (spec.Has("endpointMetrics")) {
    Node m = spec.Get("endpointMetrics");
    IG_RETURN_IF_ERROR(m.ExpectMap());
    IG_RETURN_IF_ERROR(m.CheckKeys({"enabled", "interval", "timeout", "staleAfter", "path"}));
    if (m.Has("enabled")) {
      IG_ASSIGN_OR_RETURN(g->scrape.enabled, m.Get("enabled").Bool());
    }
    if (m.Has("interval")) {
      IG_ASSIGN_OR_RETURN(g->scrape.interval, m.Get("interval").Dur());
    }
    if (m.Has("timeout")) {
      IG_ASSIGN_OR_RETURN(g->scrape.timeout, m.Get("timeout").Dur());
    }
    if (m.Has("staleAfter")) {
      IG_ASSIGN_OR_RETURN(g->scrape.stale_after, m.Get("staleAfter").Dur());
    }
    if (m.Has("path")) {
      IG_ASSIGN_OR_RETURN(g->scrape.path, m.Get("path").String());
      if (!StartsWith(g->scrape.path, "/"))
        return m.Get("path").Error("expected a path starting with '/'");
    }
    if (g->scrape.interval < std::chrono::milliseconds(10)) {
      return m.Get("interval").Error("must be at least 10ms");
    }
  }
  if (spec.Has("tenancy")) IG_RETURN_IF_ERROR(ParseTenancy(spec.Get("tenancy"), &g->tenancy));
  if (g->tenancy.classes.empty()) g->tenancy.classes = DefaultPriorityClasses();
  if (spec.Has("flowControl")) {
    IG_RETURN_IF_ERROR(ParseFlowControl(spec.Get("flowControl"), &g->flow_control));
  }
  if (spec.Has("health")) IG_RETURN_IF_ERROR(ParseHealth(spec.Get("health"), &g->health));
  if (spec.Has("retries")) IG_RETURN_IF_ERROR(ParseRetries(spec.Get("retries"), &g->retries));
  if (spec.Has("recording")) {
    IG_RETURN_IF_ERROR(ParseRecording(spec.Get("recording"), &g->recording));
  }
  if (spec.Has("lifecycle")) {
    IG_RETURN_IF_ERROR(ParseLifecycle(spec.Get("lifecycle"), &g->lifecycle));
  }
  if (spec.Has("admin")) IG_RETURN_IF_ERROR(ParseAdmin(spec.Get("admin"), &g->admin));
  if (spec.Has("ha")) IG_RETURN_IF_ERROR(ParseHa(spec.Get("ha"), &g->ha));
  if (spec.Has("schedulingProfiles")) {
    Node profs = spec.Get("schedulingProfiles");
    IG_RETURN_IF_ERROR(profs.ExpectSequence());
    std::set<std::string> names;
    for (size_t i = 0; i < profs.size(); ++i) {
      IG_ASSIGN_OR_RETURN(SchedulingProfile p, ParseProfile(profs.At(i)));
      if (!names.insert(p.name).second) {
        return profs.At(i).Get("name").Error(
            fmt::format("scheduling profile '{}' is defined twice", p.name));
      }
      g->profiles.push_back(std::move(p));
    }
  }
  if (!spec.Has("pools")) return spec.Error("missing required field 'pools'");
  Node pools = spec.Get("pools");
  IG_RETURN_IF_ERROR(pools.ExpectSequence());
  if (pools.size() == 0) return pools.Error("at least one pool is required");
  std::set<std::string> pool_names;
  std::map<std::string, std::string> model_owner;
  for (size_t i = 0; i < pools.size(); ++i) {
    IG_ASSIGN_OR_RETURN(Pool p, ParsePool(pools.At(i)));
    if (!pool_names.insert(p.name).second) {
      return pools.At(i).Get("name").Error(fmt::format("pool '{}' is defined twice", p.name));
    }
    for (const auto& m : p.models) {
      std::vector<std::string> names = m.aliases;
      names.push_back(m.name);
      for (const auto& n : names) {
        auto [it, inserted] = model_owner.emplace(n, p.name);
        if (!inserted) {
          return pools.At(i).Get("models").Error(
              fmt::format("model name '{}' is already served by pool '{}'", n, it->second));
        }
      }
    }
    bool found = p.scheduling_profile == "default";
    for (const auto& prof : g->profiles) found = found || prof.name == p.scheduling_profile;
    if (!found) {
      return pools.At(i)
          .Get("schedulingProfile")
          .Error(fmt::format("no scheduling profile named '{}' in spec.schedulingProfiles",
                             p.scheduling_profile));
    }
    g->pools.push_back(std::move(p));
  }
  bool has_default = false;
  for (const auto& prof : g->profiles) has_default = has_default || prof.name == "default";
  if (!has_default) g->profiles.push_back(DefaultProfile());
  return Status::Ok();
}

}  // namespace

Result<EndpointCapacity> ResolveCapacity(const Hardware& h) {
  EndpointCapacity c;
  if (!h.accelerator.empty()) {
    engine_model::ServerOptions o;
    o.accelerator = engine_model::FindAccelerator(h.accelerator);
    if (o.accelerator == nullptr) {
      return Status::Error(fmt::format("accelerator: unknown '{}'; expected one of: {}",
                                       h.accelerator, engine_model::AcceleratorNames()));
    }
    o.model = engine_model::FindModel(h.model);
    if (o.model == nullptr) {
      return Status::Error(fmt::format("model: unknown profile '{}'; expected one of: {}", h.model,
                                       engine_model::ModelNames()));
    }
    auto dtype = engine_model::ParseDtype(h.dtype);
    if (!dtype) return Status::Error(fmt::format("dtype: expected bf16 or fp8, got '{}'", h.dtype));
    auto kv_bytes = engine_model::ParseKvCacheBytes(h.kv_cache_dtype);
    if (!kv_bytes) {
      return Status::Error(
          fmt::format("kvCacheDtype: expected auto, bf16 or fp8, got '{}'", h.kv_cache_dtype));
    }
    o.tp = h.tp;
    o.dtype = *dtype;
    o.kv_bytes = *kv_bytes;
    o.gpu_memory_utilization = h.gpu_memory_utilization;
    o.block_size = h.block_size;
    o.max_num_seqs = h.max_num_seqs;
    o.max_num_batched_tokens = h.max_num_batched_tokens;
    IG_ASSIGN_OR_RETURN(engine_model::ServerSetup setup, engine_model::MakeServer(o));
    c = engine_model::CapacityOf(setup, h.price_per_hour);
  }
  c.price_per_hour = h.price_per_hour;
  if (h.prefill_tokens_per_second > 0) c.prefill_tokens_per_s = h.prefill_tokens_per_second;
  if (h.decode_tokens_per_second > 0) c.decode_tokens_per_s = h.decode_tokens_per_second;
  if (h.kv_cache_tokens > 0) c.kv_cache_tokens = h.kv_cache_tokens;
  if (h.max_num_seqs > 0) c.max_num_seqs = h.max_num_seqs;
  return c;
}

std::vector<PriorityClass> DefaultPriorityClasses() {
  auto make = [](const char* name, int32_t priority, bool sheddable) {
    PriorityClass c;
    c.name = name;
    c.priority = priority;
    c.sheddable = sheddable;
    c.path = std::string("default.") + name;
    return c;
  };
  return {make("critical", 2, false), make("standard", 1, false), make("sheddable", 0, true)};
}

SchedulingProfile DefaultProfile() {
  // The combination that won in the planner (docs/routing.md): sessions stay where their
  // context is unless that server is overloaded; everything else goes where its first token
  // is expected soonest, new sessions where their contexts least crowd the KV cache.
  SchedulingProfile p;
  p.name = "default";
  PluginConfig healthy;
  healthy.name = "healthy";
  p.filters.push_back(healthy);
  auto param = [](PluginConfig* c, const std::string& key, const std::string& value) {
    c->parameters[key] = Param{value, {}, "default." + c->name + ".parameters." + key};
  };
  PluginConfig affinity;
  affinity.name = "session-affinity";
  affinity.weight = 10;
  param(&affinity, "overloadThreshold", "3");
  param(&affinity, "kvUsageThreshold", "0.95");
  param(&affinity, "balanceWeight", "0.1");
  p.scorers.push_back(affinity);
  PluginConfig ttft;
  ttft.name = "expected-ttft";
  ttft.weight = 1;
  p.scorers.push_back(ttft);
  p.picker.name = "max-score";
  return p;
}

Result<Gateway> ParseGateway(const std::string& yaml_text, const std::string& source_name) {
  Gateway g;
  g.source = source_name;
  DocumentHeader header;
  IG_RETURN_IF_ERROR(ParseDocument(yaml_text, &g.source, "Gateway", &header,
                                   [&g](const Node& spec) { return ParseSpec(spec, &g); }));
  if (!header.name.empty()) g.name = header.name;
  if (g.tenancy.classes.empty()) g.tenancy.classes = DefaultPriorityClasses();
  return g;
}

Result<Gateway> LoadGatewayFile(const std::string& path) {
  IG_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  return ParseGateway(text, path);
}

Result<Gateway> FromFlags(const std::string& model, const std::vector<std::string>& endpoints,
                          const std::string& listen) {
  if (model.empty()) return Status::Error("--model is required without --config");
  if (endpoints.empty())
    return Status::Error("at least one --endpoint is required without --config");
  Gateway g;
  g.source = "flags";
  auto hp = ParseHostPort(listen);
  if (!hp.ok()) return Status::Error("--listen: " + hp.status().message());
  g.listen_host = hp->first;
  g.listen_port = hp->second;
  Pool p;
  p.name = "default";
  p.models.push_back(Model{model, {}});
  for (const auto& url : endpoints) {
    Status s = CheckEndpointUrl(url);
    if (!s.ok()) return Status::Error(fmt::format("--endpoint '{}': {}", url, s.message()));
    Endpoint e;
    e.url = url.back() == '/' ? url.substr(0, url.size() - 1) : url;
    p.endpoints.push_back(e);
  }
  g.pools.push_back(std::move(p));
  g.profiles.push_back(DefaultProfile());
  g.tenancy.classes = DefaultPriorityClasses();
  return g;
}

}  // namespace infergrid::config
