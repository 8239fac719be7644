#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"

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

// kubeadm's ImagePull preflight compares info["config"]["sandboxImage"] with the pause
// image of its release (and warns when they differ): it is --pod-infra-container-image.
TEST_F(RuntimeInfoTest, VerboseStatusNamesTheSandboxImageAsKubeadmReadsIt) {
  Options options;
  options.pod_infra_image = "registry.k8s.io/pause:3.10.2";
  CriService service(options, docker_, network_);
  v1::StatusRequest req;
  req.set_verbose(true);
  auto s = service.Status(ctx_, req);
  ASSERT_TRUE(s.ok()) << s.status();
  const auto config = nlohmann::json::parse(s->info().at("config"));
  ASSERT_TRUE(config.contains("sandboxImage")) << config.dump();
  EXPECT_EQ(config["sandboxImage"], "registry.k8s.io/pause:3.10.2");
  EXPECT_EQ(config["podInfraContainerImage"], "registry.k8s.io/pause:3.10.2") << "cri-dockerd's name, kept";
  EXPECT_FALSE(service.Status(ctx_, v1::StatusRequest())->info().contains("config")) << "only when verbose";
}

TEST_F(RuntimeInfoTest, StatusListsRuntimeHandlers) {
  docker_.info.runtimes = {"runc", "runsc"};
  auto s = service_.Status(ctx_, v1::StatusRequest());
  ASSERT_EQ(s->runtime_handlers_size(), 3);
  EXPECT_EQ(s->runtime_handlers(0).name(), "");
  EXPECT_EQ(s->runtime_handlers(2).name(), "runsc");
}

// Every handler, the default included, gets rro where the engine (API 1.44+) and its
// runtime (OCI features with "rro", as runc reports them) make it; Docker has no
// per-pod user namespaces on any engine.
TEST_F(RuntimeInfoTest, StatusAdvertisesHandlerFeaturesOfTheEngine) {
  const nlohmann::json runc = {
      {"path", "runc"},
      {"status", {{"org.opencontainers.runtime-spec.features", R"({"mountOptions":["ro","rro","rbind"]})"}}}};
  for (const auto& [api, rro] : {std::pair{"1.41", false}, std::pair{"1.43", false}, std::pair{"1.44", true},
                                 std::pair{"1.51", true}}) {
    testing_fakes::FakeDockerClient docker;
    docker.version.api_version = api;
    docker.info.runtimes = {"runc", "runsc"};
    docker.info.raw["Runtimes"] = {{"runc", runc}, {"runsc", {{"path", "/usr/bin/runsc"}}}};
    CriService service(Options(), docker, network_);
    auto s = service.Status(ctx_, v1::StatusRequest());
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_EQ(s->runtime_handlers_size(), 3) << api;
    for (const v1::RuntimeHandler& handler : s->runtime_handlers()) {
      ASSERT_TRUE(handler.has_features()) << api << " " << handler.name();
      EXPECT_EQ(handler.features().recursive_read_only_mounts(), rro && handler.name() != "runsc")
          << api << " " << handler.name();
      EXPECT_FALSE(handler.features().user_namespaces()) << api << " " << handler.name();
    }
    EXPECT_FALSE(s->has_features()) << "nothing runtime-wide (Strict groups, userns with host network) is true";
  }
}

TEST_F(RuntimeInfoTest, FeaturesFollowTheNegotiatedVersionAndInfo) {
  docker_.version.api_version = "1.51";
  docker_.info.server_version = "28.5.2";
  docker_.info.raw["CDISpecDirs"] = nlohmann::json::array({"/etc/cdi", "/var/run/cdi"});
  auto f = service_.Features(ctx_);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->api_version, "1.51");
  EXPECT_EQ(f->engine_version, "28.5.2");
  EXPECT_TRUE(f->recursive_read_only);
  EXPECT_TRUE(f->image_mounts);
  EXPECT_TRUE(f->cdi);
  // Cached with /info: a second call asks Docker nothing.
  const int pings = docker_.CallCount("Ping"), infos = docker_.CallCount("Info");
  ASSERT_TRUE(service_.Features(ctx_).ok());
  EXPECT_EQ(docker_.CallCount("Ping"), pings);
  EXPECT_EQ(docker_.CallCount("Info"), infos);
}

// A burst of calls before any /info is cached asks Docker once; a caller whose deadline
// passes while it waits for that answer gets DEADLINE_EXCEEDED.
TEST_F(RuntimeInfoTest, CallsThatComeTogetherShareOneInfo) {
  absl::Notification release;
  std::atomic<int> entered{0};
  docker_.on_info = [&](const common::Context&) {
    if (entered++ == 0) release.WaitForNotification();
  };
  std::vector<std::thread> callers;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i) {
    callers.emplace_back([&] { ok += service_.Features(ctx_).ok() ? 1 : 0; });
  }
  while (entered.load() == 0) absl::SleepFor(absl::Milliseconds(1));
  absl::SleepFor(absl::Milliseconds(100));  // the others are waiting now
  const auto impatient = service_.Features(common::Context::WithTimeout(absl::Milliseconds(20)));
  EXPECT_EQ(impatient.status().code(), absl::StatusCode::kDeadlineExceeded) << impatient.status();
  release.Notify();
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(ok.load(), 8);
  EXPECT_EQ(docker_.CallCount("Info"), 1);
}

// Once the cached /info is stale, one caller asks Docker again; meanwhile the others get
// the answer from before at once.
TEST(RuntimeInfoCacheTest, WhileAStaleInfoIsRefreshedOthersGetTheOneFromBefore) {
  testing_fakes::FakeDockerClient docker;
  testing_fakes::FakeNetwork network;
  absl::Mutex clock_mu;
  absl::Time now = absl::FromUnixSeconds(1000);
  Options options;
  options.clock = [&] {
    absl::MutexLock lock(&clock_mu);
    return now;
  };
  CriService service(options, docker, network);
  const common::Context ctx = common::Context::WithTimeout(absl::Seconds(5));
  ASSERT_TRUE(service.Features(ctx).ok());
  {
    absl::MutexLock lock(&clock_mu);
    now += absl::Seconds(11);
  }
  absl::Notification release, refreshing;
  docker.on_info = [&](const common::Context&) {
    refreshing.Notify();
    release.WaitForNotification();
  };
  std::thread refresher([&] { EXPECT_TRUE(service.Features(ctx).ok()); });
  refreshing.WaitForNotification();
  EXPECT_TRUE(service.Features(common::Context::WithTimeout(absl::Milliseconds(200))).ok());
  release.Notify();
  refresher.join();
  EXPECT_EQ(docker.CallCount("Info"), 2);
}

TEST_F(RuntimeInfoTest, AFailedInfoIsAskedAgainByTheNextCall) {
  docker_.FailOperation("Info", absl::UnavailableError("cannot connect to the Docker daemon"));
  EXPECT_EQ(service_.Features(ctx_).status().code(), absl::StatusCode::kUnavailable);
  docker_.ClearFailures();
  EXPECT_TRUE(service_.Features(ctx_).ok());
  EXPECT_EQ(docker_.CallCount("Info"), 2);
}

TEST_F(RuntimeInfoTest, FeaturesFailWhenDockerIsDown) {
  docker_.FailOperation("Info", absl::UnavailableError("cannot connect to the Docker daemon"));
  EXPECT_EQ(service_.Features(ctx_).status().code(), absl::StatusCode::kUnavailable);
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
