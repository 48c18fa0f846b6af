#include "scheduling/filters/healthy/healthy_filter.h"

#include <gtest/gtest.h>

#include "scheduling/registry.h"
#include "unit/scheduling/test_util.h"

namespace infergrid::scheduling {
namespace {

TEST(HealthyFilter, DropsUnhealthyEndpoints) {
  auto eps = testutil::Endpoints(4);
  eps[1].healthy = false;
  eps[3].healthy = false;
  std::vector<size_t> cands = {0, 1, 2, 3};
  HealthyFilter f;
  f.Apply(RequestInfo{}, eps, &cands);
  EXPECT_EQ(cands, (std::vector<size_t>{0, 2}));
}

TEST(HealthyFilter, TakesNoParameters) {
  auto cfg = testutil::Plugin("healthy", {{"x", "1"}});
  EXPECT_FALSE(HealthyFilter::Create(PluginContext{cfg, "t"}).ok());
  auto ok = testutil::Plugin("healthy");
  EXPECT_TRUE(HealthyFilter::Create(PluginContext{ok, "t"}).ok());
}

}  // namespace
}  // namespace infergrid::scheduling
