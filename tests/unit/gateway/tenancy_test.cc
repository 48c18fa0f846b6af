#include "gateway/tenancy.h"

#include <gtest/gtest.h>

#include "gateway/openai.h"

namespace infergrid::gateway {
namespace {

TEST(Sha256Hex, MatchesTheStandardDigest) {
  // printf %s abc | sha256sum
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

config::Tenancy Tenants() {
  config::Tenancy t;
  t.classes = config::DefaultPriorityClasses();
  t.tenant_header = "x-tenant-id";
  config::Tenant a;
  a.name = "team-a";
  a.api_key_sha256 = {Sha256Hex("key-a")};
  a.priority_class = "critical";
  config::Tenant b;
  b.name = "team-b";
  b.priority_class = "sheddable";
  t.tenants = {a, b};
  return t;
}

TEST(TenantDirectory, KeysThenHeaderThenTheDefaultTenant) {
  TenantDirectory d(Tenants());
  EXPECT_EQ(d.Identify("Bearer key-a", "", "").tenant->name, "team-a");
  EXPECT_EQ(d.Identify("Bearer key-a", "", "").klass->name, "critical");
  // A known key wins over the header.
  EXPECT_EQ(d.Identify("Bearer key-a", "team-b", "").tenant->name, "team-a");
  EXPECT_EQ(d.Identify("Bearer other", "team-b", "").tenant->name, "team-b");
  EXPECT_EQ(d.Identify("", "team-b", "").klass->name, "sheddable");
  Identity none = d.Identify("", "", "");
  EXPECT_EQ(none.tenant->name, "default");
  EXPECT_EQ(none.klass->name, "standard");
  Identity unknown = d.Identify("", "nobody", "");
  EXPECT_EQ(unknown.tenant, nullptr);
  EXPECT_EQ(unknown.status, 401);
  EXPECT_EQ(unknown.reason, "unknown_tenant");
}

TEST(TenantDirectory, RequiredKeysRefuseOthersWithoutEchoingThem) {
  auto t = Tenants();
  t.require_api_key = true;
  TenantDirectory d(t);
  Identity missing = d.Identify("", "team-b", "");
  EXPECT_EQ(missing.status, 401);
  EXPECT_EQ(missing.code, "missing_api_key");
  Identity wrong = d.Identify("Bearer sk-secret-value", "", "");
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(wrong.code, "invalid_api_key");
  EXPECT_EQ(wrong.message.find("sk-secret-value"), std::string::npos);
  EXPECT_EQ(d.Identify("Bearer   key-a  ", "", "").tenant->name, "team-a");
  EXPECT_EQ(d.Identify("Basic key-a", "", "").status, 401);
}

TEST(TenantDirectory, ARequestMayLowerItsClassButNotRaiseIt) {
  TenantDirectory d(Tenants());
  EXPECT_EQ(d.Identify("Bearer key-a", "", "sheddable").klass->name, "sheddable");
  EXPECT_EQ(d.Identify("", "team-b", "critical").status, 403);
  EXPECT_EQ(d.Identify("", "team-b", "platinum").status, 400);
}

TEST(UsageSniffer, ReadsUsageSplitAcrossPieces) {
  UsageSniffer u;
  std::string body =
      "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"b data: c\"}}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1234,\"total_tokens\":1240,"
      "\"completion_tokens\":6}}\n\ndata: [DONE]\n\n";
  // Every split point: the figures and the event count come out the same.
  for (size_t cut = 1; cut < body.size(); cut += 3) {
    UsageSniffer s;
    s.Feed(std::string_view(body).substr(0, cut));
    s.Feed(std::string_view(body).substr(cut));
    ASSERT_TRUE(s.has_usage()) << cut;
    EXPECT_EQ(s.prompt_tokens(), 1234) << cut;
    EXPECT_EQ(s.completion_tokens(), 6) << cut;
    EXPECT_EQ(s.stream_events(), 3) << cut;
  }
  u.Feed("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n");
  EXPECT_FALSE(u.has_usage());
  EXPECT_EQ(u.prompt_tokens(), -1);
  EXPECT_EQ(u.stream_events(), 1);
}

}  // namespace
}  // namespace infergrid::gateway
