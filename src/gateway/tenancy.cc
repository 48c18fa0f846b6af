#include "gateway/tenancy.h"

#include <openssl/evp.h>

#include "common/strings.h"

namespace infergrid::gateway {

std::string Sha256Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

TenantDirectory::TenantDirectory(const config::Tenancy& t) : cfg_(t) {
  if (cfg_.classes.empty()) cfg_.classes = config::DefaultPriorityClasses();
  for (const auto& tenant : cfg_.tenants) {
    by_name_[tenant.name] = &tenant;
    for (const auto& d : tenant.api_key_sha256) by_digest_[d] = &tenant;
  }
  default_.name = cfg_.default_tenant;
  if (!by_name_.count(default_.name)) by_name_[default_.name] = &default_;
}

const config::PriorityClass* TenantDirectory::FindClass(const std::string& name) const {
  for (const auto& c : cfg_.classes) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

Identity TenantDirectory::Identify(std::string_view authorization, std::string_view tenant_header,
                                   std::string_view class_header) const {
  Identity id;
  auto refuse = [&id](int status, std::string code, std::string message, std::string reason) {
    id.tenant = nullptr;
    id.status = status;
    id.code = std::move(code);
    id.message = std::move(message);
    id.reason = std::move(reason);
    return id;
  };
  std::string_view key;
  if (authorization.size() > 7 && AsciiLower(authorization.substr(0, 7)) == "bearer ") {
    key = Trim(authorization.substr(7));
  }
  if (!key.empty()) {
    auto it = by_digest_.find(Sha256Hex(key));
    if (it != by_digest_.end()) id.tenant = it->second;
  }
  if (id.tenant == nullptr && cfg_.require_api_key) {
    // The key itself is never echoed or logged.
    return key.empty()
               ? refuse(401, "missing_api_key",
                        "You didn't provide an API key. Provide it in the Authorization header "
                        "(Authorization: Bearer YOUR_KEY).",
                        "missing_key")
               : refuse(401, "invalid_api_key", "Incorrect API key provided.", "unknown_key");
  }
  if (id.tenant == nullptr && !cfg_.tenant_header.empty() && !tenant_header.empty()) {
    auto it = by_name_.find(tenant_header);
    if (it == by_name_.end()) {
      return refuse(401, "unknown_tenant",
                    "The tenant named in the " + cfg_.tenant_header + " header is not known.",
                    "unknown_tenant");
    }
    id.tenant = it->second;
  }
  if (id.tenant == nullptr) id.tenant = by_name_.at(cfg_.default_tenant);
  id.klass = FindClass(id.tenant->priority_class);
  if (!class_header.empty()) {
    const config::PriorityClass* asked = FindClass(std::string(class_header));
    if (asked == nullptr) {
      return refuse(400, "invalid_priority_class",
                    "The x-priority-class header names no priority class ('" +
                        std::string(class_header) + "').",
                    "invalid_priority_class");
    }
    if (id.klass != nullptr && asked->priority > id.klass->priority) {
      return refuse(403, "priority_not_allowed",
                    "Tenant '" + id.tenant->name + "' may not send requests above its class '" +
                        id.klass->name + "'.",
                    "priority_not_allowed");
    }
    id.klass = asked;
  }
  return id;
}

}  // namespace infergrid::gateway
