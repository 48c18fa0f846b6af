#include "plan/fleet.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace infergrid::plan {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(const std::string& servers) {
  auto f = ParseFleet("apiVersion: infergrid.dev/v1\nkind: Fleet\nspec:\n  servers:\n" + servers,
                      "f.yaml");
  return f.ok() ? "" : f.status().message();
}

TEST(Fleet, BuildsEveryServerWithItsCapacity) {
  auto spec = ParseFleet(R"(apiVersion: infergrid.dev/v1
kind: Fleet
metadata: {name: mixed}
spec:
  servers:
  - {name: big, count: 2, accelerator: h200, model: llama-3.1-70b, tp: 8, pricePerHour: 28}
  - {name: small, count: 3, accelerator: trn2, model: llama-3.1-70b, tp: 8}
)",
                         "f.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  auto fleet = BuildFleet(*spec);
  ASSERT_TRUE(fleet.ok()) << fleet.status().message();
  EXPECT_EQ(fleet->name, "mixed");
  ASSERT_EQ(fleet->servers.size(), 5u);
  EXPECT_EQ(fleet->servers[1].name, "big-1");
  EXPECT_EQ(fleet->servers[4].name, "small-2");
  EXPECT_EQ(fleet->servers[0].capacity.price_per_hour, 28);
  // An H200 node prefills faster than a Trainium2 half-node and holds more KV.
  EXPECT_GT(fleet->servers[0].capacity.prefill_tokens_per_s,
            fleet->servers[2].capacity.prefill_tokens_per_s);
  EXPECT_GT(fleet->servers[0].capacity.kv_cache_tokens, fleet->servers[2].capacity.kv_cache_tokens);
  EXPECT_EQ(fleet->block_size, 16u);
}

TEST(Fleet, BadGroupsSayWhereAndWhat) {
  EXPECT_THAT(ErrorOf("  - {count: 2, accelerator: h900, model: llama-3.1-8b}\n"),
              HasSubstr("f.yaml:5:29: spec.servers[0].accelerator: unknown accelerator 'h900'"));
  EXPECT_THAT(ErrorOf("  - {accelerator: h100, model: llama-3.1-70b}\n"),
              HasSubstr("does not fit on h100 x1"));
  EXPECT_THAT(ErrorOf("  - {accelerator: h100, model: llama-3.1-8b}\n"
                      "  - {accelerator: h200, model: llama-3.1-8b, blockSize: 32}\n"),
              HasSubstr("every server group needs the same blockSize"));
  EXPECT_THAT(ErrorOf("  - {accelerator: h100, model: llama-3.1-8b}\n"
                      "  - {accelerator: h100, model: llama-3.1-8b}\n"),
              HasSubstr("duplicate group name 'h100'"));
  EXPECT_THAT(ErrorOf("  - {model: llama-3.1-8b}\n"),
              HasSubstr("missing required field 'accelerator'"));
}

}  // namespace
}  // namespace infergrid::plan
