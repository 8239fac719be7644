// Docker's containerd image store with its containerd gone or stuck under dockerd (the
// engines scripts/docker-engines.sh starts run their own, which dockerd restarts when it
// dies): the image calls fail UNAVAILABLE (or at the caller's deadline while Docker waits
// on a stuck containerd) and work again once it is back. Engines on a graph driver, and
// the system's 20.10, are left alone.
#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "dockerclient/docker_client_impl.h"
#include "shim/cri_service.h"
#include "shim/network/docker_bridge.h"
#include "tests/integration/env.h"
#include "tests/integration/shell.h"

namespace shim {
namespace {

using ::testing::HasSubstr;

class ContainerdOutageIntegration : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string ctl = testenv::Get("DOCKERSHIM_TEST_ENGINE_CTL", "");
    engine_ = testenv::Get("DOCKERSHIM_TEST_ENGINE", "");
    if (!absl::StrContains(testenv::Sh("docker info -f '{{json .DriverStatus}}'"), "io.containerd.snapshotter.v1"))
      GTEST_SKIP() << "the engine under test keeps images with a graph driver";
    if (ctl.empty() || engine_.empty() || engine_ == "20")
      GTEST_SKIP() << "the engine's containerd is not the test's to stop (set DOCKERSHIM_TEST_ENGINE to one "
                      "scripts/docker-engines.sh starts)";
    ctl_ = ctl;
    auto docker = dockerclient::DockerClientImpl::Create(testenv::DockerEndpoint());
    ASSERT_TRUE(docker.ok()) << docker.status();
    docker_ = std::move(*docker);
    network_ = std::make_unique<network::DockerBridgeNetwork>(*docker_);
    ASSERT_TRUE(docker_->Ping(Ctx(absl::Seconds(10))).ok()) << "dockerd must run (scripts/test-env.sh)";
  }

  static common::Context Ctx(absl::Duration timeout) { return common::Context::WithTimeout(timeout); }
  // A service that has not asked containerd anything yet.
  std::unique_ptr<CriService> FreshService() {
    Options options;
    options.pod_infra_image = testenv::PauseImage();
    return std::make_unique<CriService>(options, *docker_, *network_);
  }
  int ContainerdPid() {
    int pid = 0;
    EXPECT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(testenv::Sh(ctl_ + " containerd " + engine_)), &pid));
    return pid;
  }
  // Waits (up to 90 s: dockerd restarts a dead containerd after some seconds) until the
  // image calls work again; returns how long that took.
  absl::Duration WaitForImages() {
    const absl::Time start = absl::Now();
    while (absl::Now() - start < absl::Seconds(90)) {
      auto service = FreshService();
      if (service->ListImages(Ctx(absl::Seconds(5)), v1::ListImagesRequest()).ok() &&
          service->ImageFsInfo(Ctx(absl::Seconds(5)), v1::ImageFsInfoRequest()).ok())
        return absl::Now() - start;
      absl::SleepFor(absl::Milliseconds(250));
    }
    ADD_FAILURE() << "the image calls did not work again within 90 s";
    return absl::Now() - start;
  }

  std::string engine_, ctl_;
  std::unique_ptr<dockerclient::DockerClient> docker_;
  std::unique_ptr<network::NetworkPlugin> network_;
};

TEST_F(ContainerdOutageIntegration, AKilledContainerdIsUnavailableUntilDockerdRestartsIt) {
  const int pid = ContainerdPid();
  ASSERT_GT(pid, 0);
  auto service = FreshService();
  ASSERT_TRUE(service->ImageFsInfo(Ctx(absl::Seconds(10)), v1::ImageFsInfoRequest()).ok());
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  for (int i = 0; i < 100 && ::kill(pid, 0) == 0; ++i) absl::SleepFor(absl::Milliseconds(20));

  auto listed = service->ListImages(Ctx(absl::Seconds(5)), v1::ListImagesRequest());
  EXPECT_EQ(listed.status().code(), absl::StatusCode::kUnavailable) << listed.status();
  EXPECT_THAT(listed.status().message(), HasSubstr("containerd"));
  v1::PullImageRequest pull;
  pull.mutable_image()->set_image(testenv::Registry() + "/busybox:1.0");
  auto pulled = service->PullImage(Ctx(absl::Seconds(5)), pull);
  EXPECT_EQ(pulled.status().code(), absl::StatusCode::kUnavailable) << pulled.status();
  EXPECT_THAT(pulled.status().message(), HasSubstr("Docker cannot reach its containerd"));
  // The service that knows the store's directories measures them without containerd;
  // one that does not must ask it, and says that it cannot.
  EXPECT_TRUE(service->ImageFsInfo(Ctx(absl::Seconds(5)), v1::ImageFsInfoRequest()).ok());
  auto fs = FreshService()->ImageFsInfo(Ctx(absl::Seconds(5)), v1::ImageFsInfoRequest());
  EXPECT_EQ(fs.status().code(), absl::StatusCode::kUnavailable) << fs.status();
  EXPECT_THAT(fs.status().message(), HasSubstr("containerd at "));
  std::printf("containerd killed: ListImages: %s; PullImage: %s; ImageFsInfo (fresh): %s\n",
              std::string(listed.status().message()).c_str(), std::string(pulled.status().message()).c_str(),
              std::string(fs.status().message()).c_str());

  const absl::Duration back = WaitForImages();
  std::printf("containerd back (dockerd restarted it) after %s\n", absl::FormatDuration(back).c_str());
  EXPECT_NE(ContainerdPid(), pid);
  EXPECT_TRUE(service->PullImage(Ctx(absl::Seconds(30)), pull).ok());
  v1::RemoveImageRequest remove;
  remove.mutable_image()->set_image(pull.image().image());
  EXPECT_TRUE(service->RemoveImage(Ctx(absl::Seconds(30)), remove).ok());
}

TEST_F(ContainerdOutageIntegration, AStuckContainerdFailsWithinTheDeadlinesAndRecovers) {
  const int pid = ContainerdPid();
  ASSERT_GT(pid, 0);
  // Docker's /info waits on a stuck containerd too: both services have it (for 10 s), the
  // first also the store's directories.
  auto knows_the_store = FreshService();
  ASSERT_TRUE(knows_the_store->ImageFsInfo(Ctx(absl::Seconds(10)), v1::ImageFsInfoRequest()).ok());
  auto must_ask = FreshService();
  ASSERT_TRUE(must_ask->RuntimeConfig(Ctx(absl::Seconds(10)), v1::RuntimeConfigRequest()).ok());
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  absl::Cleanup resume = [pid] { ::kill(pid, SIGCONT); };
  // A signal stops a process's threads one after the other, not at once.
  const std::string unstopped = absl::StrCat("grep -L '^[0-9]* ([^)]*) T' /proc/", pid, "/task/*/stat");
  for (int i = 0; i < 200 && !testenv::Sh(unstopped).empty(); ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_EQ(testenv::Sh(unstopped), "") << "containerd's threads did not all stop";

  // The shim's own question to containerd gives up after containerdclient::kCallTimeout.
  absl::Time t0 = absl::Now();
  auto fs = must_ask->ImageFsInfo(Ctx(absl::Seconds(30)), v1::ImageFsInfoRequest());
  const absl::Duration fs_took = absl::Now() - t0;
  EXPECT_EQ(fs.status().code(), absl::StatusCode::kUnavailable) << fs.status();
  EXPECT_THAT(fs.status().message(), HasSubstr("did not answer within 5s"));
  EXPECT_LT(fs_took, absl::Seconds(8));
  EXPECT_TRUE(knows_the_store->ImageFsInfo(Ctx(absl::Seconds(3)), v1::ImageFsInfoRequest()).ok());
  // Docker waits on containerd with the call: the shim ends it at the caller's deadline.
  t0 = absl::Now();
  auto listed = FreshService()->ListImages(Ctx(absl::Seconds(3)), v1::ListImagesRequest());
  const absl::Duration list_took = absl::Now() - t0;
  EXPECT_EQ(listed.status().code(), absl::StatusCode::kDeadlineExceeded) << listed.status();
  EXPECT_LT(list_took, absl::Seconds(5));
  std::printf("containerd stopped: ImageFsInfo failed in %s (%s); ListImages with a 3 s deadline in %s (%s)\n",
              absl::FormatDuration(fs_took).c_str(), std::string(fs.status().message()).c_str(),
              absl::FormatDuration(list_took).c_str(), std::string(listed.status().message()).c_str());

  std::move(resume).Invoke();
  const absl::Duration back = WaitForImages();
  std::printf("containerd resumed: the image calls work again after %s\n", absl::FormatDuration(back).c_str());
  EXPECT_EQ(ContainerdPid(), pid);
}

}  // namespace
}  // namespace shim
