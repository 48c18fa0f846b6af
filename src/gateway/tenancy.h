#pragma once
// Who a request is from (docs/qos.md): its tenant, found by the API key in
// `Authorization: Bearer KEY` (compared by SHA-256; keys are never kept or logged) or, when
// configured, by a header naming the tenant; else the default tenant, unless keys are
// required (then a 401). Also the request's priority class: the tenant's, or a lower one the
// request asks for in `x-priority-class`.
//
// Immutable once built: a reload builds a new directory.

#include <map>
#include <string>
#include <string_view>
#include <unordered_map>

#include "config/config.h"

namespace infergrid::gateway {

// Lowercase hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);

struct Identity {
  const config::Tenant* tenant = nullptr;  // null: refused
  const config::PriorityClass* klass = nullptr;
  // When refused: the HTTP status (401 or 400/403 for the class header), an OpenAI error code,
  // a message and a reason for infergrid_auth_failures_total.
  int status = 0;
  std::string code, message, reason;
};

class TenantDirectory {
 public:
  explicit TenantDirectory(const config::Tenancy& t);

  // `authorization`: the Authorization header; `tenant_header`: the configured tenant
  // header's value; `class_header`: x-priority-class.
  Identity Identify(std::string_view authorization, std::string_view tenant_header,
                    std::string_view class_header) const;

  const std::string& tenant_header() const { return cfg_.tenant_header; }
  const config::Tenancy& config() const { return cfg_; }
  const config::PriorityClass* FindClass(const std::string& name) const;

 private:
  config::Tenancy cfg_;
  config::Tenant default_;  // the implicit default tenant, when not configured
  std::unordered_map<std::string, const config::Tenant*> by_digest_;
  std::map<std::string, const config::Tenant*, std::less<>> by_name_;
};

}  // namespace infergrid::gateway
