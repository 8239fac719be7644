#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"

#include "shim/cri_service.h"
#include "tests/unit/fake_docker_client.h"
#include "tests/unit/fake_network.h"
#include "tests/unit/gated_docker_client.h"

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

// A service whose clock the test moves.
class RuntimeInfoClockTest : public ::testing::Test {
 protected:
  static Options WithClock(absl::Time* now) {
    Options options;
    options.clock = [now] { return *now; };
    return options;
  }
  absl::Time now = absl::FromUnixSeconds(1000);
  testing_fakes::FakeDockerClient docker;
  testing_fakes::FakeNetwork network;
  CriService service{WithClock(&now), docker, network};
  const common::Context ctx = common::Context::WithTimeout(absl::Seconds(5));
};

// Docker's version is asked at most once a minute, however often Version is called
// (crictl calls it before every command).
TEST_F(RuntimeInfoClockTest, DockersVersionIsAskedAtMostOnceAMinute) {
  for (int i = 0; i < 100; ++i) {
    auto v = service.Version(ctx, v1::VersionRequest());
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ(v->runtime_version(), "20.10.24");
  }
  EXPECT_EQ(docker.CallCount("Version"), 1);
  now += absl::Seconds(61);
  docker.version.version = "26.1.4";  // dockerd was upgraded and restarted
  EXPECT_EQ(service.Version(ctx, v1::VersionRequest())->runtime_version(), "26.1.4");
  EXPECT_EQ(docker.CallCount("Version"), 2);
}

// The kubelet does not start on a runtime whose Version fails, and crictl calls it
// before `crictl info`: Version answers while Docker is away, with the last version
// Docker told, or none.
TEST_F(RuntimeInfoClockTest, VersionAnswersWhileDockerIsAway) {
  docker.FailOperation("Version", absl::UnavailableError("get Docker version: cannot connect to the Docker daemon"));
  auto never = service.Version(ctx, v1::VersionRequest());
  ASSERT_TRUE(never.ok()) << never.status();
  EXPECT_EQ(never->runtime_name(), "docker");
  EXPECT_EQ(never->runtime_api_version(), "v1");
  EXPECT_EQ(never->version(), "0.1.0");
  EXPECT_EQ(never->runtime_version(), "") << "Docker never answered";

  docker.ClearFailures();
  EXPECT_EQ(service.Version(ctx, v1::VersionRequest())->runtime_version(), "20.10.24");
  docker.FailOperation("Version", absl::UnavailableError("get Docker version: cannot connect to the Docker daemon"));
  now += absl::Minutes(5);
  auto away = service.Version(ctx, v1::VersionRequest());
  ASSERT_TRUE(away.ok()) << away.status();
  EXPECT_EQ(away->runtime_version(), "20.10.24") << "the last known one";
  EXPECT_EQ(docker.CallCount("Version"), 3) << "asked again once stale";
}

// A dockerd that accepts and does not answer: Version and Status answer within 2 s (or
// half the caller's time), Status with RuntimeReady false and Docker's error.
TEST(RuntimeInfoHungDockerTest, VersionAndStatusAnswerInTimeWhileDockerHangs) {
  testing_fakes::GatedDockerClient docker;
  testing_fakes::FakeNetwork network;
  CriService service(Options(), docker, network);
  docker.Close("Version");
  docker.Close("Ping");

  absl::Time start = absl::Now();
  auto version = service.Version(common::Context::WithTimeout(absl::Seconds(120)), v1::VersionRequest());
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(version->runtime_version(), "");
  EXPECT_LT(absl::Now() - start, absl::Seconds(3)) << "2 s for Docker at most";

  start = absl::Now();
  auto status = service.Status(common::Context::WithTimeout(absl::Seconds(2)), v1::StatusRequest());
  const absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_LT(took, absl::Milliseconds(1500)) << "half of crictl's 2 s";
  const v1::RuntimeCondition& runtime = status->status().conditions(0);
  EXPECT_EQ(runtime.type(), "RuntimeReady");
  EXPECT_FALSE(runtime.status());
  EXPECT_EQ(runtime.reason(), "DockerDaemonNotReady");
  EXPECT_THAT(runtime.message(), ::testing::HasSubstr("did not answer"));
  EXPECT_TRUE(status->status().conditions(1).status()) << "the network is ready";

  // dockerd answers pings but not /info (a stuck containerd holds it): ready, without
  // the runtime handlers, in time.
  docker.OpenAll();
  docker.Close("Info");
  start = absl::Now();
  status = service.Status(common::Context::WithTimeout(absl::Seconds(2)), v1::StatusRequest());
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(1500));
  EXPECT_TRUE(status->status().conditions(0).status());
  EXPECT_EQ(status->runtime_handlers_size(), 0);

  docker.OpenAll();
  status = service.Status(common::Context::WithTimeout(absl::Seconds(2)), v1::StatusRequest());
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_TRUE(status->status().conditions(0).status());
  EXPECT_EQ(status->runtime_handlers_size(), 1 + docker.info.runtimes.size()) << "the default and Docker's";
  EXPECT_EQ(service.Version(common::Context::WithTimeout(absl::Seconds(2)), v1::VersionRequest())->runtime_version(),
            "20.10.24");
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
