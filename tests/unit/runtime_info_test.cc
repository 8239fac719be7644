#include <gtest/gtest.h>

#include "shim/cri_service.h"
#include "tests/unit/fake_docker_client.h"
#include "tests/unit/fake_network.h"

namespace shim {
namespace {

class RuntimeInfoTest : public ::testing::Test {
 protected:
  RuntimeInfoTest() : service_(Options(), docker_, network_) {}
  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(5));
  testing_fakes::FakeDockerClient docker_;
  testing_fakes::FakeNetwork network_;
  CriService service_;
};

TEST_F(RuntimeInfoTest, Version) {
  auto v = service_.Version(ctx_, v1::VersionRequest());
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->runtime_name(), "docker");
  EXPECT_EQ(v->runtime_version(), "20.10.24");
  EXPECT_EQ(v->runtime_api_version(), "v1");
}

TEST_F(RuntimeInfoTest, StatusReadyWhenDockerAndNetworkAre) {
  auto s = service_.Status(ctx_, v1::StatusRequest());
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->status().conditions_size(), 2);
  EXPECT_EQ(s->status().conditions(0).type(), "RuntimeReady");
  EXPECT_TRUE(s->status().conditions(0).status());
  EXPECT_EQ(s->status().conditions(1).type(), "NetworkReady");
  EXPECT_TRUE(s->status().conditions(1).status());
  EXPECT_TRUE(s->info().empty());
}

TEST_F(RuntimeInfoTest, StatusReportsReasons) {
  docker_.FailOperation("Ping", absl::UnavailableError("cannot connect to the Docker daemon at unix:///x"));
  network_.ready = absl::FailedPreconditionError("no CNI network config found in /etc/cni/net.d");
  auto s = service_.Status(ctx_, v1::StatusRequest());
  ASSERT_TRUE(s.ok()) << "Status itself succeeds; readiness is in the conditions";
  EXPECT_FALSE(s->status().conditions(0).status());
  EXPECT_EQ(s->status().conditions(0).reason(), "DockerDaemonNotReady");
  EXPECT_NE(s->status().conditions(0).message().find("unix:///x"), std::string::npos);
  EXPECT_FALSE(s->status().conditions(1).status());
  EXPECT_EQ(s->status().conditions(1).reason(), "NetworkPluginNotReady");
  EXPECT_NE(s->status().conditions(1).message().find("/etc/cni/net.d"), std::string::npos);
}

TEST_F(RuntimeInfoTest, VerboseStatusIsJson) {
  v1::StatusRequest req;
  req.set_verbose(true);
  auto s = service_.Status(ctx_, req);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(s->info().contains("config"));
  auto j = nlohmann::json::parse(s->info().at("config"));
  EXPECT_EQ(j["networkPlugin"], "fake");
  EXPECT_EQ(j["dockerVersion"], "20.10.24");
}

TEST_F(RuntimeInfoTest, StatusListsRuntimeHandlers) {
  docker_.info.runtimes = {"runc", "runsc"};
  auto s = service_.Status(ctx_, v1::StatusRequest());
  ASSERT_EQ(s->runtime_handlers_size(), 3);
  EXPECT_EQ(s->runtime_handlers(0).name(), "");
  EXPECT_EQ(s->runtime_handlers(2).name(), "runsc");
}

TEST_F(RuntimeInfoTest, RuntimeConfigCgroupDriver) {
  docker_.info.cgroup_driver = "systemd";
  EXPECT_EQ(service_.RuntimeConfig(ctx_, v1::RuntimeConfigRequest())->linux().cgroup_driver(), v1::SYSTEMD);
}

TEST_F(RuntimeInfoTest, RuntimeConfigCgroupfs) {
  EXPECT_EQ(service_.RuntimeConfig(ctx_, v1::RuntimeConfigRequest())->linux().cgroup_driver(), v1::CGROUPFS);
}

TEST_F(RuntimeInfoTest, UpdateRuntimeConfigPassesPodCidr) {
  v1::UpdateRuntimeConfigRequest req;
  req.mutable_runtime_config()->mutable_network_config()->set_pod_cidr("10.244.1.0/24");
  ASSERT_TRUE(service_.UpdateRuntimeConfig(ctx_, req).ok());
  EXPECT_EQ(network_.pod_cidr, "10.244.1.0/24");
}

}  // namespace
}  // namespace shim
