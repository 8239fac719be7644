// CheckpointContainer through the real binary on the engine under test: where the
// engine has no experimental features it is FAILED_PRECONDITION and nothing is
// written; where it has them, CRIU's archive or CRIU's error, and nothing half-written.
#include <grpcpp/grpcpp.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "api/cri.h"
#include "tests/integration/cri_client.h"
#include "tests/integration/env.h"
#include "tests/integration/shell.h"
#include "tests/integration/daemon.h"

namespace {

namespace fs = std::filesystem;
namespace v1 = runtime::v1;
using ::testing::HasSubstr;
using testenv::Sh;

class CheckpointIntegration : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / absl::StrCat("dscheckpoint-", getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "out");
    socket_ = (dir_ / "shim.sock").string();
    shim_ = std::make_unique<testenv::Daemon>(
        dir_, std::vector<std::string>{"--container-runtime-endpoint", "unix://" + socket_, "--docker-endpoint",
                                       testenv::DockerEndpoint(), "--network-plugin", "docker", "--root-directory",
                                       (dir_ / "root").string(), "--pod-infra-container-image",
                                       testenv::PauseImage()});
    ASSERT_TRUE(testenv::WaitForSocket(socket_, std::chrono::seconds(10))) << shim_->Stderr();
    cri_ = std::make_unique<testenv::CriClient>(socket_, std::chrono::seconds(60));
  }
  void TearDown() override {
    Sh("docker ps -aq --filter name=_dstest-ckpt-" + std::to_string(getpid()) + "_ | xargs -r docker rm -f");
    shim_.reset();
    fs::remove_all(dir_);
  }
  static std::unique_ptr<grpc::ClientContext> Ctx() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    return ctx;
  }
  // A pod with a running `sleep`; returns the container's ID.
  std::string RunSleeper() {
    v1::PodSandboxConfig pod;
    pod.mutable_metadata()->set_name("ckpt");
    pod.mutable_metadata()->set_namespace_("dstest-ckpt-" + std::to_string(getpid()));
    pod.mutable_metadata()->set_uid("uid-ckpt");
    pod.mutable_linux();
    std::string pod_id;
    if (grpc::Status s = cri_->RunPodSandbox(pod, &pod_id); !s.ok()) {
      ADD_FAILURE() << s.error_message();
      return "";
    }
    // "" if it was not created; its ID, with a failure, if it was but did not start.
    std::string id;
    grpc::Status s =
        cri_->CreateAndStartContainer(pod_id, pod, testenv::BusyboxContainer("sleeper", {"sleep", "600"}), &id);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return id;
  }
  grpc::Status Checkpoint(const std::string& id, const std::string& location) {
    v1::CheckpointContainerRequest req;
    req.set_container_id(id);
    req.set_location(location);
    req.set_timeout(60);
    v1::CheckpointContainerResponse resp;
    return cri_->runtime().CheckpointContainer(Ctx().get(), req, &resp);
  }
  std::vector<std::string> Out() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_ / "out")) names.push_back(e.path().filename().string());
    return names;
  }

  fs::path dir_;
  std::string socket_;
  std::unique_ptr<testenv::Daemon> shim_;
  std::unique_ptr<testenv::CriClient> cri_;
};

TEST_F(CheckpointIntegration, WhatTheEngineCanDoAndNothingHalfWritten) {
  const std::string id = RunSleeper();
  ASSERT_FALSE(id.empty());
  const std::string location = (dir_ / "out" / "checkpoint-ckpt.tar").string();

  EXPECT_EQ(Checkpoint(std::string(64, 'f'), location).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Checkpoint(id, "relative.tar").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Checkpoint(id, (dir_ / "missing" / "c.tar").string()).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  const bool experimental = Sh("docker info --format '{{.ExperimentalBuild}}'").rfind("true", 0) == 0;
  grpc::Status s = Checkpoint(id, location);
  std::printf("CheckpointContainer on Docker %s (experimental %s): %s %s\n",
              std::string(absl::StripTrailingAsciiWhitespace(Sh("docker version --format '{{.Server.Version}}'"))).c_str(), experimental ? "on" : "off",
              s.ok() ? "OK" : std::to_string(static_cast<int>(s.error_code())).c_str(), s.error_message().c_str());
  if (!experimental) {
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_THAT(s.error_message(), HasSubstr("\"experimental\": true"));
    EXPECT_TRUE(Out().empty());
  } else if (s.ok()) {
    const std::string listing = Sh("tar -tf " + location);
    EXPECT_THAT(listing, HasSubstr("checkpoint/inventory.img"));
    EXPECT_THAT(listing, HasSubstr("config.dump"));
    EXPECT_EQ(Out().size(), 1u);
  } else {
    // CRIU could not dump here: its error, and no archive or dump directory left.
    EXPECT_TRUE(Out().empty());
  }

  ASSERT_TRUE(cri_->StopContainer(id, 0).ok());
  fs::remove(location);
  s = Checkpoint(id, location);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("not running"));
  EXPECT_TRUE(Out().empty());
}

}  // namespace
