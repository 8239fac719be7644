// The dockershim binary as kubelet and crictl meet it: flags, the socket, gRPC
// status codes, credentials kept out of logs, and a clean SIGTERM.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "api/cri.h"
#include "tests/integration/cri_client.h"
#include "tests/integration/daemon.h"
#include "tests/integration/env.h"
#include "tests/integration/logs_env.h"
#include "tests/integration/event_watch.h"
#include "tests/integration/shell.h"

namespace {

namespace fs = std::filesystem;
namespace v1 = runtime::v1;

using testenv::Daemon;
using testenv::Exit;
using testenv::ReadFile;

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dsdaemon-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    socket_ = (dir_ / "shim.sock").string();
  }
  void TearDown() override {
    testenv::Sh("docker ps -aq --filter name=_dsdaemon-logs_ | xargs -r docker rm -f");
    fs::remove_all(dir_);
  }

  std::vector<std::string> ServeArgs() {
    return {"--container-runtime-endpoint", "unix://" + socket_, "--docker-endpoint", testenv::DockerEndpoint(),
            "--network-plugin", "docker", "--root-directory", (dir_ / "root").string(), "--log-level", "debug",
            "--pod-infra-container-image", testenv::PauseImage(), testenv::LogsFromFilesFlag()};
  }
  bool WaitForSocket() { return testenv::WaitForSocket(socket_); }
  testenv::CriClient Client() { return testenv::CriClient(socket_, std::chrono::seconds(30)); }
  static std::unique_ptr<grpc::ClientContext> Ctx() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return ctx;
  }

  // A pod (Docker's bridge network) with one busybox container running `script`, its
  // CRI log at <dir>/logs/writer/0.log, started unless `start` is false. Returns the
  // container ID, "" on failure.
  std::string RunWriter(const std::string& script, bool start = true) {
    testenv::CriClient cri = Client();
    v1::PodSandboxConfig pod;
    pod.mutable_metadata()->set_name("writer");
    pod.mutable_metadata()->set_namespace_(kLogNamespace);
    pod.mutable_metadata()->set_uid(dir_.filename().string());  // unique per test and run
    pod.set_log_directory((dir_ / "logs").string());
    pod.mutable_linux();
    std::string pod_id;
    if (grpc::Status s = cri.RunPodSandbox(pod, &pod_id); !s.ok()) {
      ADD_FAILURE() << "RunPodSandbox: " << s.error_message();
      return "";
    }
    v1::ContainerConfig c = testenv::BusyboxContainer("writer", {"sh", "-c", script});
    c.set_log_path("writer/0.log");
    std::string id;
    if (grpc::Status s = start ? cri.CreateAndStartContainer(pod_id, pod, c, &id) : cri.CreateContainer(pod_id, pod, c, &id);
        !s.ok()) {
      ADD_FAILURE() << s.error_message();
      return "";
    }
    return id;
  }
  fs::path WriterLog() const { return dir_ / "logs" / "writer" / "0.log"; }

  static constexpr char kLogNamespace[] = "dsdaemon-logs";
  fs::path dir_;
  std::string socket_;
};

// `lines` numbered lines, one every millisecond or so, then "done".
std::string NumberedLines(int lines) {
  return "i=0; while [ $i -lt " + std::to_string(lines) + " ]; do echo line-$i; i=$((i+1)); usleep 1000; done; echo done";
}

// Checks that `log` (CRI format) holds exactly line-0 ... line-<lines-1> then done, in
// order, each once, all complete stdout lines; says what is wrong otherwise.
std::string CheckNumberedLog(const std::string& log, int lines) {
  std::istringstream in(log);
  std::string line;
  int next = 0;
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    if (space == std::string::npos || line.compare(space, 10, " stdout F ") != 0) return "not a CRI line: " + line;
    const std::string text = line.substr(space + 10);
    const std::string want = next < lines ? "line-" + std::to_string(next) : "done";
    if (text != want) return "expected " + want + ", found " + text;
    ++next;
  }
  return next == lines + 1 ? "" : "only " + std::to_string(next) + " lines";
}

// Waits for `path` to end with "done\n".
bool WaitForDone(const fs::path& path, std::chrono::seconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    const std::string text = ReadFile(path);
    if (text.size() >= 5 && text.compare(text.size() - 5, 5, "done\n") == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

int CountLines(const fs::path& path) {
  const std::string text = ReadFile(path);
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}


TEST_F(DaemonTest, VersionFlag) {
  Daemon d(dir_, {"--version"});
  auto e = d.Wait(std::chrono::seconds(10));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, 0);
  EXPECT_NE(e->stdout_text.find("dockershim"), std::string::npos);
}

TEST_F(DaemonTest, BadFlagsExitTwoWithOneLine) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--no-such-flag"}, {"--image-pull-progress-deadline", "soon"},
        {"--log-level", "chatty"}, {"--network-plugin", "kubenet"}, {"--container-runtime-endpoint", "tcp://x:1"}}) {
    Daemon d(dir_, args);
    auto e = d.Wait(std::chrono::seconds(10));
    ASSERT_TRUE(e.has_value()) << args[0];
    EXPECT_EQ(e->code, 2) << args[0];
    EXPECT_EQ(std::count(e->stderr_text.begin(), e->stderr_text.end(), '\n'), 1) << e->stderr_text;
    EXPECT_EQ(e->stderr_text.rfind("dockershim: ", 0), 0u) << e->stderr_text;
  }
}

TEST_F(DaemonTest, ServesCriAndStopsOnSigterm) {
  std::ofstream(socket_) << "stale";  // a leftover file must not stop the daemon
  Daemon d(dir_, ServeArgs());
  ASSERT_TRUE(WaitForSocket()) << d.Stderr();
  EXPECT_EQ(testenv::SocketOnceOpenedToItsGroup(socket_, getegid()).st_mode & 0777, 0660);

  testenv::CriClient cri = Client();
  v1::VersionResponse version;
  ASSERT_TRUE(cri.runtime().Version(Ctx().get(), v1::VersionRequest(), &version).ok());
  EXPECT_EQ(version.runtime_name(), "docker");
  EXPECT_EQ(version.runtime_api_version(), "v1");

  v1::ImageStatusRequest bad;
  bad.mutable_image()->set_image("Not A Reference");
  v1::ImageStatusResponse image_status;
  grpc::Status s = cri.images().ImageStatus(Ctx().get(), bad, &image_status);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("invalid image reference"), std::string::npos) << s.error_message();

  v1::CreateContainerResponse created;
  s = cri.runtime().CreateContainer(Ctx().get(), v1::CreateContainerRequest(), &created);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("pod_sandbox_id is required"), std::string::npos) << s.error_message();

  v1::CheckpointContainerResponse checkpointed;
  s = cri.runtime().CheckpointContainer(Ctx().get(), v1::CheckpointContainerRequest(), &checkpointed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("container_id is required"), std::string::npos) << s.error_message();

  d.Signal(SIGTERM);
  auto e = d.Wait(std::chrono::seconds(15));
  ASSERT_TRUE(e.has_value()) << "dockershim did not exit after SIGTERM";
  EXPECT_EQ(e->code, 0) << e->stderr_text;
  EXPECT_FALSE(fs::exists(socket_));
}

TEST_F(DaemonTest, CredentialsNeverReachTheLog) {
  Daemon d(dir_, ServeArgs());
  ASSERT_TRUE(WaitForSocket()) << d.Stderr();
  testenv::CriClient cri = Client();
  const std::string password = "Sup3r-Secret-Pw-771";
  v1::PullImageRequest pull;
  pull.mutable_image()->set_image(testenv::AuthRegistry() + "/private/busybox:latest");
  pull.mutable_auth()->set_username(testenv::AuthUser());
  pull.mutable_auth()->set_password(password);
  v1::PullImageResponse pulled;
  grpc::Status s = cri.images().PullImage(Ctx().get(), pull, &pulled);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.error_message().find(password), std::string::npos);
  EXPECT_NE(s.error_message().find(testenv::AuthRegistry()), std::string::npos) << s.error_message();
  d.Signal(SIGTERM);
  auto e = d.Wait(std::chrono::seconds(15));
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(e->stderr_text.find("PullImage"), std::string::npos) << "debug log expected";
  EXPECT_EQ(e->stderr_text.find(password), std::string::npos) << "password leaked into the log";
}

TEST_F(DaemonTest, KillNineWhileAContainerWritesLosesAndDuplicatesNoLogLine) {
  constexpr int kLines = 3000;
  auto first = std::make_unique<Daemon>(dir_, ServeArgs());
  ASSERT_TRUE(WaitForSocket()) << first->Stderr();
  ASSERT_FALSE(RunWriter(NumberedLines(kLines)).empty());
  for (int i = 0; i < 200 && CountLines(WriterLog()) < 300; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_GE(CountLines(WriterLog()), 300) << ReadFile(WriterLog());
  first.reset();  // SIGKILL while the container goes on writing
  // What a write cut short by the kill would leave: half a line.
  std::ofstream(WriterLog(), std::ios::app) << "2026-12-01T10:00:00.000000001Z stdout F li";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));

  Daemon second(dir_, ServeArgs());
  ASSERT_TRUE(WaitForSocket()) << second.Stderr();
  ASSERT_TRUE(WaitForDone(WriterLog(), std::chrono::seconds(60))) << ReadFile(WriterLog()).substr(0, 2000);
  EXPECT_EQ(CheckNumberedLog(ReadFile(WriterLog()), kLines), "");
}

// The soak's lost log: a kill -9 during StartContainer, dockerd finishing the start
// after the next shim listed the container as created. Nobody calls StartContainer
// again; Docker's start event starts the copy.
TEST_F(DaemonTest, AContainerDockerStartsAfterTheRestartGetsItsLog) {
  constexpr int kLines = 200;
  auto first = std::make_unique<Daemon>(dir_, ServeArgs());
  ASSERT_TRUE(WaitForSocket()) << first->Stderr();
  const std::string id = RunWriter(NumberedLines(kLines), /*start=*/false);
  ASSERT_FALSE(id.empty());
  first.reset();  // SIGKILL

  Daemon second(dir_, ServeArgs());
  ASSERT_TRUE(WaitForSocket()) << second.Stderr();
  int code = -1;
  const std::string out = testenv::Sh("docker start " + id, &code);
  ASSERT_EQ(code, 0) << out;
  ASSERT_TRUE(WaitForDone(WriterLog(), std::chrono::seconds(60))) << ReadFile(WriterLog()).substr(0, 2000);
  EXPECT_EQ(CheckNumberedLog(ReadFile(WriterLog()), kLines), "");
}

TEST_F(DaemonTest, RotationByRenameAndReopenContainerLogLosesNoLine) {
  constexpr int kLines = 2000;
  Daemon d(dir_, ServeArgs());
  ASSERT_TRUE(WaitForSocket()) << d.Stderr();
  const std::string id = RunWriter(NumberedLines(kLines));
  ASSERT_FALSE(id.empty());
  testenv::CriClient cri = Client();
  // The kubelet's rotation: rename to <log>.<timestamp>, then ReopenContainerLog.
  std::vector<fs::path> rotated;
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    rotated.push_back(WriterLog().string() + ".20261201-10000" + std::to_string(i));
    fs::rename(WriterLog(), rotated.back());
    v1::ReopenContainerLogRequest reopen;
    reopen.set_container_id(id);
    v1::ReopenContainerLogResponse reopened;
    grpc::Status s = cri.runtime().ReopenContainerLog(Ctx().get(), reopen, &reopened);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_TRUE(fs::exists(WriterLog())) << "a fresh file at the path";
  }
  ASSERT_TRUE(WaitForDone(WriterLog(), std::chrono::seconds(60))) << ReadFile(WriterLog()).substr(0, 2000);
  std::string all;
  for (const fs::path& file : rotated) {
    EXPECT_GT(CountLines(file), 0) << file << " got no line: the rotation came too late";
    all += ReadFile(file);
  }
  all += ReadFile(WriterLog());
  EXPECT_EQ(CheckNumberedLog(all, kLines), "");
  // The source the copy used: Docker's json file (the default) or its logs API.
  EXPECT_EQ(d.Stderr().find("copying its log from Docker's json file") != std::string::npos, testenv::LogsFromFiles())
      << d.Stderr().substr(0, 3000);
  EXPECT_EQ(d.Stderr().find("copying from Docker's logs API"), std::string::npos) << "no fallback";

  // A stopped container's log cannot be reopened (containerd answers the same).
  ASSERT_TRUE(cri.StopContainer(id, 0).ok());
  v1::ReopenContainerLogRequest reopen;
  reopen.set_container_id(id);
  v1::ReopenContainerLogResponse reopened;
  EXPECT_EQ(cri.runtime().ReopenContainerLog(Ctx().get(), reopen, &reopened).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
}

using testenv::EventWatch;

std::vector<std::string> Types(const std::vector<v1::ContainerEventResponse>& events) {
  std::vector<std::string> types;
  for (const auto& e : events) types.push_back(v1::ContainerEventType_Name(e.container_event_type()));
  return types;
}

bool HasDeleted(const std::vector<v1::ContainerEventResponse>& events) {
  return !events.empty() && events.back().container_event_type() == v1::CONTAINER_DELETED_EVENT;
}

TEST_F(DaemonTest, ContainerEventsReachEverySubscriberInOrderWithThePodsStatus) {
  Daemon d(dir_, ServeArgs());
  ASSERT_TRUE(WaitForSocket()) << d.Stderr();
  testenv::CriClient cri = Client();
  EventWatch first(cri.channel()), second(cri.channel());

  // Statuses are read when the shim sends an event: each step waits for its event, so
  // that the statuses checked below are the step's.
  const auto await = [&](const std::string& id, size_t count) {
    for (EventWatch* watch : {&first, &second}) {
      watch->Of(id, [count](const auto& events) { return events.size() >= count; });
    }
  };
  v1::PodSandboxConfig pod;
  pod.mutable_metadata()->set_name("events");
  pod.mutable_metadata()->set_namespace_(kLogNamespace);
  const std::string uid = dir_.filename().string();  // unique per test and run
  pod.mutable_metadata()->set_uid(uid);
  pod.mutable_linux();
  std::string sandbox;
  ASSERT_TRUE(cri.RunPodSandbox(pod, &sandbox).ok());
  await(sandbox, 2);  // created, started

  std::string id;
  ASSERT_TRUE(cri.CreateContainer(sandbox, pod, testenv::BusyboxContainer("app", {"sleep", "300"}), &id).ok());
  await(id, 1);
  ASSERT_TRUE(cri.StartContainer(id).ok());
  await(id, 2);
  ASSERT_TRUE(cri.StopContainer(id, 0).ok());
  await(id, 3);
  ASSERT_TRUE(cri.RemoveContainer(id).ok());
  await(id, 4);
  ASSERT_TRUE(cri.StopPodSandbox(sandbox).ok());
  await(sandbox, 3);
  ASSERT_TRUE(cri.RemovePodSandbox(sandbox).ok());

  const std::vector<std::string> kLifecycle = {"CONTAINER_CREATED_EVENT", "CONTAINER_STARTED_EVENT",
                                               "CONTAINER_STOPPED_EVENT", "CONTAINER_DELETED_EVENT"};
  for (EventWatch* watch : {&first, &second}) {
    const std::vector<v1::ContainerEventResponse> events = watch->Of(id, HasDeleted);
    ASSERT_EQ(Types(events), kLifecycle);
    for (const auto& e : events) {
      EXPECT_EQ(e.pod_sandbox_status().id(), sandbox) << e.DebugString();
      EXPECT_EQ(e.pod_sandbox_status().metadata().uid(), uid);
      EXPECT_EQ(e.pod_sandbox_status().state(), v1::SANDBOX_READY);
      EXPECT_GT(e.created_at(), 0);
    }
    for (size_t i = 1; i < events.size(); ++i) EXPECT_GE(events[i].created_at(), events[i - 1].created_at());
    // The pod's containers as each event left them; a deleted one is no longer there.
    ASSERT_EQ(events[1].containers_statuses_size(), 1);
    EXPECT_EQ(events[1].containers_statuses(0).id(), id);
    EXPECT_EQ(events[1].containers_statuses(0).metadata().name(), "app");
    EXPECT_EQ(events[1].containers_statuses(0).state(), v1::CONTAINER_RUNNING);
    ASSERT_EQ(events[2].containers_statuses_size(), 1);
    EXPECT_EQ(events[2].containers_statuses(0).state(), v1::CONTAINER_EXITED);
    EXPECT_EQ(events[3].containers_statuses_size(), 0);

    // The pod's own events carry its ID; the last one its ID and metadata only.
    const std::vector<v1::ContainerEventResponse> pod_events = watch->Of(sandbox, HasDeleted);
    ASSERT_EQ(Types(pod_events), kLifecycle);
    EXPECT_EQ(pod_events[1].pod_sandbox_status().state(), v1::SANDBOX_READY);
    EXPECT_EQ(pod_events[2].pod_sandbox_status().state(), v1::SANDBOX_NOTREADY);
    EXPECT_EQ(pod_events[3].pod_sandbox_status().id(), sandbox);
    EXPECT_EQ(pod_events[3].pod_sandbox_status().metadata().uid(), uid);
    EXPECT_EQ(pod_events[3].pod_sandbox_status().state(), v1::SANDBOX_NOTREADY);
  }

  // Open streams do not hold up a SIGTERM.
  d.Signal(SIGTERM);
  auto e = d.Wait(std::chrono::seconds(15));
  ASSERT_TRUE(e.has_value()) << "dockershim did not exit after SIGTERM";
  EXPECT_EQ(e->code, 0) << e->stderr_text;
}

}  // namespace
