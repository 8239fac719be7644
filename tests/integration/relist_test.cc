// Relists from memory on a real dockerd: a pod and a container that the docker CLI
// creates, starts, kills and removes behind the shim's back show in ListPodSandbox
// and ListContainers within a second (the view follows Docker's events; the measured
// delays are printed), and what the view lists is what Docker lists.
#include <gmock/gmock.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "dockerclient/docker_client_impl.h"
#include "shim/cri_service.h"
#include "shim/events/event_hub.h"
#include "shim/network/docker_bridge.h"
#include "shim/view/view_client.h"
#include "tests/integration/env.h"
#include "tests/integration/shell.h"

namespace shim {
namespace {

namespace fs = std::filesystem;

constexpr absl::Duration kShownWithin = absl::Seconds(1);

std::string SocketPath(const std::string& endpoint) {
  return std::string(absl::StripPrefix(endpoint, "unix://"));
}

class RelistIntegration : public ::testing::Test {
 protected:
  void SetUp() override {
    testenv::Sh("docker ps -aq --filter name=_dsrelist_ | xargs -r docker rm -f");
    root_ = fs::temp_directory_path() / ("dsrelist-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    auto docker = dockerclient::DockerClientImpl::Create(testenv::DockerEndpoint());
    ASSERT_TRUE(docker.ok()) << docker.status();
    docker_ = *std::move(docker);
    view_ = std::make_unique<view::ContainerView>(*docker_);
    viewed_ = std::make_unique<view::ViewClient>(*docker_, *view_);
    network_ = std::make_unique<network::DockerBridgeNetwork>(*docker_);
    Options o;
    o.root_directory = root_.string();
    o.pod_infra_image = testenv::PauseImage();
    service_ = std::make_unique<CriService>(o, *viewed_, *network_);
    ASSERT_TRUE(service_->Init().ok());
    events::HubOptions hub;
    hub.docker_socket_path = SocketPath(testenv::DockerEndpoint());
    hub_ = std::make_unique<events::EventHub>(
        *docker_, hub, [](const events::CriEvent&) { return v1::ContainerEventResponse(); }, view_.get());
    for (int i = 0; i < 500 && !view_->Live(); ++i) absl::SleepFor(absl::Milliseconds(10));
    ASSERT_TRUE(view_->Live()) << "the view did not list Docker's containers";
    uid_ = absl::StrCat("u", ::getpid());
  }
  void TearDown() override {
    hub_.reset();
    service_.reset();
    testenv::Sh("docker ps -aq --filter name=_dsrelist_ | xargs -r docker rm -f");
    fs::remove_all(root_);
  }

  // Polls `shown` until it holds; returns how long that took, or nullopt after 5 s.
  static std::optional<absl::Duration> Until(const std::function<bool()>& shown) {
    const absl::Time start = absl::Now();
    while (absl::Now() - start < absl::Seconds(5)) {
      if (shown()) return absl::Now() - start;
      absl::SleepFor(absl::Milliseconds(2));
    }
    return std::nullopt;
  }
  // Runs `command` behind the shim's back, then polls; reports the delay.
  void ExpectShown(const std::string& what, const std::string& command, const std::function<bool()>& shown) {
    int code = -1;
    const std::string out = testenv::Sh(command, &code);
    ASSERT_EQ(code, 0) << command << ": " << out;
    std::optional<absl::Duration> delay = Until(shown);
    ASSERT_TRUE(delay.has_value()) << what << ": not shown after 5 s";
    std::printf("[ relist   ] %-40s shown after %s\n", what.c_str(), absl::FormatDuration(*delay).c_str());
    EXPECT_LE(*delay, kShownWithin) << what;
  }

  // The state of the pod or container `id` as listed ("" when not listed).
  std::string PodState(const std::string& id) {
    auto resp = service_->ListPodSandbox(ctx_, v1::ListPodSandboxRequest());
    EXPECT_TRUE(resp.ok()) << resp.status();
    if (resp.ok()) {
      for (const auto& p : resp->items())
        if (p.id() == id) return v1::PodSandboxState_Name(p.state());
    }
    return "";
  }
  std::string ContainerState(const std::string& id) {
    auto resp = service_->ListContainers(ctx_, v1::ListContainersRequest());
    EXPECT_TRUE(resp.ok()) << resp.status();
    if (resp.ok()) {
      for (const auto& c : resp->containers())
        if (c.id() == id) return v1::ContainerState_Name(c.state());
    }
    return "";
  }

  fs::path root_;
  std::string uid_;
  std::unique_ptr<dockerclient::DockerClient> docker_;
  std::unique_ptr<view::ContainerView> view_;
  std::unique_ptr<view::ViewClient> viewed_;
  std::unique_ptr<network::DockerBridgeNetwork> network_;
  std::unique_ptr<CriService> service_;
  std::unique_ptr<events::EventHub> hub_;
  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(60));
};

TEST_F(RelistIntegration, WhatDockerDoesBehindTheShimsBackShowsWithinASecond) {
  const std::string pod_labels = absl::StrCat("--label io.kubernetes.docker.type=podsandbox ",
                                              "--label io.kubernetes.pod.name=stale ",
                                              "--label io.kubernetes.pod.namespace=dsrelist --label io.kubernetes.pod.uid=",
                                              uid_);
  const std::string pod_name = absl::StrCat("k8s_POD_stale_dsrelist_", uid_, "_0");
  int code = -1;
  std::string pod = std::string(absl::StripAsciiWhitespace(
      testenv::Sh(absl::StrCat("docker create --network none ", pod_labels, " --name ", pod_name, " ", testenv::PauseImage()),
                  &code)));
  ASSERT_EQ(code, 0);
  std::optional<absl::Duration> delay = Until([&] { return PodState(pod) == "SANDBOX_NOTREADY"; });
  ASSERT_TRUE(delay.has_value());
  std::printf("[ relist   ] %-40s shown after %s\n", "pod created", absl::FormatDuration(*delay).c_str());
  EXPECT_LE(*delay, kShownWithin);

  ExpectShown("pod started", "docker start " + pod, [&] { return PodState(pod) == "SANDBOX_READY"; });

  const std::string ctr_name = absl::StrCat("k8s_app_stale_dsrelist_", uid_, "_0");
  std::string ctr = std::string(absl::StripAsciiWhitespace(testenv::Sh(
      absl::StrCat("docker create --network container:", pod, " --label io.kubernetes.docker.type=container --label io.kubernetes.sandbox.id=", pod,
                   " --label io.kubernetes.container.name=app ", pod_labels.substr(pod_labels.find("--label io.kubernetes.pod.name")),
                   " --name ", ctr_name, " ", testenv::BusyboxImage(), " sleep 600"),
      &code)));
  ASSERT_EQ(code, 0);
  delay = Until([&] { return ContainerState(ctr) == "CONTAINER_CREATED"; });
  ASSERT_TRUE(delay.has_value());
  std::printf("[ relist   ] %-40s shown after %s\n", "container created", absl::FormatDuration(*delay).c_str());
  EXPECT_LE(*delay, kShownWithin);

  ExpectShown("container started", "docker start " + ctr, [&] { return ContainerState(ctr) == "CONTAINER_RUNNING"; });
  ExpectShown("container killed", "docker kill " + ctr, [&] { return ContainerState(ctr) == "CONTAINER_EXITED"; });

  // Served from memory all along, and the same as Docker's own list.
  EXPECT_TRUE(view_->Live());
  v1::ListContainersRequest mine;
  mine.mutable_filter()->set_pod_sandbox_id(pod);
  auto from_view = service_->ListContainers(ctx_, mine);
  CriService direct(service_->options(), *docker_, *network_);
  auto from_docker = direct.ListContainers(ctx_, mine);
  ASSERT_TRUE(from_view.ok() && from_docker.ok());
  ASSERT_EQ(from_view->containers_size(), 1);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*from_view, *from_docker))
      << from_view->ShortDebugString() << "\nvs\n" << from_docker->ShortDebugString();

  ExpectShown("container removed", "docker rm " + ctr, [&] { return ContainerState(ctr).empty(); });
  ExpectShown("pod killed", "docker kill " + pod, [&] { return PodState(pod) == "SANDBOX_NOTREADY"; });
  ExpectShown("pod removed", "docker rm " + pod, [&] { return PodState(pod).empty(); });
}

}  // namespace
}  // namespace shim
