// DockerClientImpl against the real dockerd (scripts/test-env.sh starts it;
// scripts/test-images.sh builds dockershim-test/busybox).
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "dockerclient/docker_client_impl.h"
#include "dockerclient/stdcopy.h"
#include "tests/integration/env.h"

namespace dockerclient {
namespace {

using nlohmann::json;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Message(const absl::Status& status) { return std::string(status.message()); }

class DockerClientIntegration : public ::testing::Test {
 protected:
  void SetUp() override {
    auto client = DockerClientImpl::Create(testenv::DockerEndpoint());
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
    auto version = client_->Ping(Ctx());
    ASSERT_TRUE(version.ok()) << "dockerd must run (scripts/test-env.sh): " << version.status();
  }

  void TearDown() override {
    for (const auto& id : created_) (void)client_->RemoveContainer(Ctx(), id, /*force=*/true);
  }

  static common::Context Ctx() { return common::Context::WithTimeout(absl::Seconds(60)); }

  // Skips the test when the locally built busybox image is missing.
  bool HaveBusybox() {
    auto image = client_->InspectImage(Ctx(), testenv::BusyboxImage());
    if (image.ok()) return true;
    EXPECT_EQ(image.status().code(), absl::StatusCode::kNotFound) << image.status();
    return false;
  }

  std::string UniqueName() {
    static std::atomic<int> counter{0};
    return absl::StrCat("dockershim-dctest-", ::getpid(), "-", counter++);
  }

  // A busybox container that sleeps (it ignores SIGTERM as PID 1, so stop kills it).
  absl::StatusOr<std::string> CreateSleeper(const std::string& name) {
    const json body = {{"Image", testenv::BusyboxImage()},
                       {"Cmd", {"sleep", "600"}},
                       {"Labels", {{"io.dockershim.test", "docker_client_test"}, {"name", name}}}};
    auto id = client_->CreateContainer(Ctx(), name, body);
    if (id.ok()) created_.push_back(*id);
    return id;
  }

  // A started busybox container running `cmd` with its stdin open for one attach.
  absl::StatusOr<std::string> StartWithStdin(std::vector<std::string> cmd) {
    const json body = {{"Image", testenv::BusyboxImage()}, {"Cmd", cmd},          {"OpenStdin", true},
                       {"StdinOnce", true},                {"AttachStdin", true}, {"AttachStdout", true},
                       {"AttachStderr", true},             {"Labels", {{"io.dockershim.test", "docker_client_test"}}}};
    auto id = client_->CreateContainer(Ctx(), UniqueName(), body);
    if (!id.ok()) return id;
    created_.push_back(*id);
    if (absl::Status started = client_->StartContainer(Ctx(), *id); !started.ok()) return started;
    return id;
  }

  // A started exec of `cmd` in `container`, with stdin attached.
  absl::StatusOr<std::pair<std::string, HijackedConnection>> StartAttached(const std::string& container,
                                                                           std::vector<std::string> cmd, bool tty) {
    ExecConfig config;
    config.cmd = std::move(cmd);
    config.attach_stdin = true;
    config.tty = tty;
    auto exec = client_->CreateExec(Ctx(), container, config);
    if (!exec.ok()) return exec.status();
    auto conn = client_->StartExecAttached(Ctx(), *exec, tty);
    if (!conn.ok()) return conn.status();
    return std::make_pair(*exec, std::move(*conn));
  }

  std::unique_ptr<DockerClientImpl> client_;
  std::vector<std::string> created_;
};

TEST_F(DockerClientIntegration, PingVersionInfo) {
  auto api = client_->Ping(Ctx());
  ASSERT_TRUE(api.ok()) << api.status();
  EXPECT_TRUE(NegotiateApiVersion(*api).ok()) << *api;

  auto version = client_->Version(Ctx());
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_FALSE(version->version.empty());
  EXPECT_FALSE(version->api_version.empty());
  EXPECT_EQ(version->os, "linux");

  auto info = client_->Info(Ctx());
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_FALSE(info->docker_root_dir.empty());
  EXPECT_FALSE(info->driver.empty());
  EXPECT_THAT(info->cgroup_driver, ::testing::AnyOf("cgroupfs", "systemd"));
  EXPECT_THAT(info->runtimes, Contains("runc"));
  EXPECT_TRUE(info->raw.is_object());
}

TEST_F(DockerClientIntegration, ListAndInspectImages) {
  if (!HaveBusybox()) GTEST_SKIP() << testenv::BusyboxImage() << " is missing: run scripts/test-images.sh";
  auto all = client_->ListImages(Ctx(), "");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_FALSE(all->empty());

  auto filtered = client_->ListImages(Ctx(), testenv::BusyboxImage());
  ASSERT_TRUE(filtered.ok()) << filtered.status();
  ASSERT_EQ(filtered->size(), 1u);
  EXPECT_THAT((*filtered)[0].repo_tags, Contains(testenv::BusyboxImage()));

  auto image = client_->InspectImage(Ctx(), testenv::BusyboxImage());
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->id, (*filtered)[0].id);
  EXPECT_THAT(image->config.cmd, ElementsAre("sh"));
  EXPECT_EQ(image->os, "linux");

  // By ID, and by the ID's short form.
  auto by_id = client_->InspectImage(Ctx(), image->id);
  ASSERT_TRUE(by_id.ok()) << by_id.status();
  EXPECT_EQ(by_id->id, image->id);
  auto by_short_id = client_->InspectImage(Ctx(), image->id.substr(7, 12));
  ASSERT_TRUE(by_short_id.ok()) << by_short_id.status();
  EXPECT_EQ(by_short_id->id, image->id);
}

TEST_F(DockerClientIntegration, MissingImageIsNotFound) {
  for (const std::string ref : {"dockershim-test/no-such-image:never", "127.0.0.1:5000/no/such:image",
                                "no-such@sha256:0000000000000000000000000000000000000000000000000000000000000000"}) {
    const absl::Status status = client_->InspectImage(Ctx(), ref).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
    EXPECT_THAT(Message(status), StartsWith("inspect image " + ref + ": ")) << status;
  }
  const absl::Status removed = client_->RemoveImage(Ctx(), "dockershim-test/no-such-image:never", false);
  EXPECT_EQ(removed.code(), absl::StatusCode::kNotFound) << removed;
}

TEST_F(DockerClientIntegration, PullFromUnreachableRegistryFailsNamingTheImage) {
  PullOptions options;
  options.reference = "127.0.0.1:1/nothing/here:1";
  options.registry_auth = "eyJ1c2VybmFtZSI6InUiLCJwYXNzd29yZCI6InNlY3JldCJ9";
  const absl::Status status = client_->PullImage(Ctx(), options);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(Message(status), StartsWith("pull image 127.0.0.1:1/nothing/here:1: "));
  EXPECT_THAT(Message(status), ::testing::Not(HasSubstr(options.registry_auth)));
}

TEST_F(DockerClientIntegration, ContainerLifecycle) {
  if (!HaveBusybox()) GTEST_SKIP() << testenv::BusyboxImage() << " is missing: run scripts/test-images.sh";
  const std::string name = UniqueName();
  auto id = CreateSleeper(name);
  ASSERT_TRUE(id.ok()) << id.status();

  auto created = client_->InspectContainer(Ctx(), *id);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->id, *id);
  EXPECT_EQ(created->name, "/" + name);
  EXPECT_EQ(created->state.status, "created");
  EXPECT_EQ(created->config_image, testenv::BusyboxImage());
  EXPECT_EQ(created->labels.at("io.dockershim.test"), "docker_client_test");

  ASSERT_TRUE(client_->StartContainer(Ctx(), *id).ok());
  EXPECT_TRUE(client_->StartContainer(Ctx(), *id).ok()) << "starting a running container is a no-op";
  auto running = client_->InspectContainer(Ctx(), name);  // by name too
  ASSERT_TRUE(running.ok()) << running.status();
  EXPECT_TRUE(running->state.running);
  EXPECT_GT(running->state.pid, 0);
  EXPECT_FALSE(running->sandbox_key.empty());

  ListContainersOptions by_label;
  by_label.label_filter = {{"io.dockershim.test", "docker_client_test"}, {"name", name}};
  auto listed = client_->ListContainers(Ctx(), by_label);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].id, *id);
  EXPECT_EQ((*listed)[0].state, "running");
  EXPECT_THAT((*listed)[0].names, ElementsAre("/" + name));

  ListContainersOptions by_id_and_status;
  by_id_and_status.id = id->substr(0, 12);
  by_id_and_status.status = "exited";
  auto none = client_->ListContainers(Ctx(), by_id_and_status);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());

  // The caller's deadline is shorter than the stop timeout: the request still waits for Docker.
  const absl::Status stopped =
      client_->StopContainer(common::Context::WithTimeout(absl::Milliseconds(300)), *id, StopOptions{1});
  ASSERT_TRUE(stopped.ok()) << stopped;
  EXPECT_TRUE(client_->StopContainer(Ctx(), *id, StopOptions{1}).ok()) << "stopping a stopped container is a no-op";
  auto exited = client_->InspectContainer(Ctx(), *id);
  ASSERT_TRUE(exited.ok()) << exited.status();
  EXPECT_FALSE(exited->state.running);
  EXPECT_EQ(exited->state.status, "exited");
  EXPECT_EQ(exited->state.exit_code, 137);

  ASSERT_TRUE(client_->RemoveContainer(Ctx(), *id, false).ok());
  const absl::Status gone = client_->InspectContainer(Ctx(), *id).status();
  EXPECT_EQ(gone.code(), absl::StatusCode::kNotFound) << gone;
  EXPECT_THAT(Message(gone), StartsWith("inspect container " + *id + ": "));
}

TEST_F(DockerClientIntegration, RemovingARunningContainerNeedsForce) {
  if (!HaveBusybox()) GTEST_SKIP() << testenv::BusyboxImage() << " is missing: run scripts/test-images.sh";
  auto id = CreateSleeper(UniqueName());
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(client_->StartContainer(Ctx(), *id).ok());
  const absl::Status refused = client_->RemoveContainer(Ctx(), *id, false);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_TRUE(client_->RemoveContainer(Ctx(), *id, true).ok());
}

TEST_F(DockerClientIntegration, DuplicateNameIsAlreadyExists) {
  if (!HaveBusybox()) GTEST_SKIP() << testenv::BusyboxImage() << " is missing: run scripts/test-images.sh";
  const std::string name = UniqueName();
  ASSERT_TRUE(CreateSleeper(name).ok());
  const absl::Status again = CreateSleeper(name).status();
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists) << again;
  EXPECT_THAT(Message(again), StartsWith("create container " + name + ": "));
}

TEST_F(DockerClientIntegration, MissingContainerIsNotFound) {
  const std::string id = "dockershim-no-such-container";
  EXPECT_EQ(client_->RemoveContainer(Ctx(), id, true).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->StartContainer(Ctx(), id).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->StopContainer(Ctx(), id, StopOptions{1}).code(), absl::StatusCode::kNotFound);
  const absl::Status status = client_->InspectContainer(Ctx(), id).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Message(status), "inspect container " + id + ": No such container: " + id);
}

TEST_F(DockerClientIntegration, ConcurrentInspectsAllSucceed) {
  if (!HaveBusybox()) GTEST_SKIP() << testenv::BusyboxImage() << " is missing: run scripts/test-images.sh";
  auto id = CreateSleeper(UniqueName());
  ASSERT_TRUE(id.ok()) << id.status();
  constexpr int kThreads = 8, kCalls = 50;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kCalls; ++i) {
        auto c = client_->InspectContainer(Ctx(), *id);
        if (c.ok() && c->id == *id) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, kThreads * kCalls);
}

struct ExecResult {
  absl::Status status;
  std::string out, err;
  std::optional<int> exit_code;
};

// Runs `cmd` in `id` to completion as ExecSync does.
ExecResult RunToEnd(DockerClientImpl& client, const std::string& id, std::vector<std::string> cmd,
                    absl::Duration timeout = absl::Seconds(30)) {
  ExecResult r;
  ExecConfig config;
  config.cmd = std::move(cmd);
  auto exec = client.CreateExec(common::Context::WithTimeout(absl::Seconds(10)), id, config);
  if (!exec.ok()) {
    r.status = exec.status();
    return r;
  }
  ExecOutput output{[&](std::string_view d) { r.out.append(d); }, [&](std::string_view d) { r.err.append(d); }};
  r.status = client.RunExec(common::Context::WithTimeout(timeout), *exec, false, output);
  if (!r.status.ok()) return r;
  for (int i = 0; i < 100 && !r.exit_code; ++i) {
    auto inspect = client.InspectExec(common::Context::WithTimeout(absl::Seconds(10)), *exec);
    if (!inspect.ok()) {
      r.status = inspect.status();
      return r;
    }
    if (!inspect->running) r.exit_code = inspect->exit_code;
    if (!r.exit_code) absl::SleepFor(absl::Milliseconds(10));
  }
  return r;
}

TEST_F(DockerClientIntegration, ExecSeparatesStreamsAndReportsTheExitCode) {
  if (!HaveBusybox()) GTEST_SKIP() << testenv::BusyboxImage() << " is missing: run scripts/test-images.sh";
  auto id = CreateSleeper(UniqueName());
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(client_->StartContainer(Ctx(), *id).ok());

  ExecResult r = RunToEnd(*client_, *id, {"sh", "-c", "echo out; echo err >&2; echo more; exit 7"});
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.out, "out\nmore\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_EQ(r.exit_code, 7);

  // Larger than any one frame or read buffer.
  r = RunToEnd(*client_, *id, {"sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' x"});
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.out, std::string(3000000, 'x'));
  EXPECT_EQ(r.exit_code, 0);

  r = RunToEnd(*client_, *id, {"no-such-binary"});
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_NE(r.exit_code.value_or(0), 0);
  EXPECT_THAT(r.out + r.err, HasSubstr("no-such-binary"));
}

TEST_F(DockerClientIntegration, ExecPastItsDeadlineIsAbandoned) {
  if (!HaveBusybox()) GTEST_SKIP() << testenv::BusyboxImage() << " is missing: run scripts/test-images.sh";
  auto id = CreateSleeper(UniqueName());
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(client_->StartContainer(Ctx(), *id).ok());
  const absl::Time start = absl::Now();
  ExecResult r = RunToEnd(*client_, *id, {"sleep", "30"}, absl::Milliseconds(500));
  EXPECT_EQ(r.status.code(), absl::StatusCode::kDeadlineExceeded) << r.status;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST_F(DockerClientIntegration, ExecInAStoppedContainerIsFailedPrecondition) {
  if (!HaveBusybox()) GTEST_SKIP() << testenv::BusyboxImage() << " is missing: run scripts/test-images.sh";
  auto id = CreateSleeper(UniqueName());
  ASSERT_TRUE(id.ok()) << id.status();
  ExecResult r = RunToEnd(*client_, *id, {"true"});
  EXPECT_EQ(r.status.code(), absl::StatusCode::kFailedPrecondition) << r.status;
}

// ---- Hijacked exec and attach ----

// The rest of a hijacked connection's output after `conn.buffered`, until EOF (a test
// failure when none comes within 20 s).
std::string ReadToEof(const HijackedConnection& conn) {
  std::string out = conn.buffered;
  char chunk[4096];
  for (;;) {
    pollfd p{conn.fd.get(), POLLIN, 0};
    if (::poll(&p, 1, 20000) != 1) {
      ADD_FAILURE() << "no EOF within 20s after \"" << out << "\"";
      return out;
    }
    const ssize_t n = ::read(conn.fd.get(), chunk, sizeof(chunk));
    if (n <= 0) return out;
    out.append(chunk, static_cast<size_t>(n));
  }
}

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

struct Demuxed {
  std::string out, err;
};

Demuxed Demux(std::string_view stream) {
  Demuxed d;
  StdDemuxer demux([&d](StdStream s, std::string_view data) { (s == StdStream::kStdout ? d.out : d.err).append(data); });
  EXPECT_TRUE(demux.Feed(stream));
  EXPECT_TRUE(demux.AtFrameBoundary());
  return d;
}

std::optional<int> WaitForExit(DockerClientImpl& client, const std::string& exec) {
  for (int i = 0; i < 200; ++i) {
    auto inspect = client.InspectExec(common::Context::WithTimeout(absl::Seconds(10)), exec);
    if (!inspect.ok()) {
      ADD_FAILURE() << inspect.status();
      return std::nullopt;
    }
    if (!inspect->running) return inspect->exit_code;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return std::nullopt;
}

TEST_F(DockerClientIntegration, AttachedExecSeparatesStdoutFromStderr) {
  if (!HaveBusybox()) GTEST_SKIP() << testenv::BusyboxImage() << " is missing: run scripts/test-images.sh";
  auto id = CreateSleeper(UniqueName());
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(client_->StartContainer(Ctx(), *id).ok());
  auto started = StartAttached(*id, {"sh", "-c", "echo out; echo err >&2; exit 5"}, false);
  ASSERT_TRUE(started.ok()) << started.status();
  auto& [exec, conn] = *started;
  ASSERT_EQ(::shutdown(conn.fd.get(), SHUT_WR), 0);  // no stdin to give
  const Demuxed output = Demux(ReadToEof(conn));
  EXPECT_EQ(output.out, "out\n");
  EXPECT_EQ(output.err, "err\n");
  EXPECT_EQ(WaitForExit(*client_, exec), 5);
}

TEST_F(DockerClientIntegration, AttachedExecReadsStdinUntilItsEof) {
  if (!HaveBusybox()) GTEST_SKIP() << testenv::BusyboxImage() << " is missing: run scripts/test-images.sh";
  auto id = CreateSleeper(UniqueName());
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(client_->StartContainer(Ctx(), *id).ok());
  auto started = StartAttached(*id, {"cat"}, false);
  ASSERT_TRUE(started.ok()) << started.status();
  auto& [exec, conn] = *started;
  ASSERT_TRUE(WriteAll(conn.fd.get(), "hello\nworld\n"));
  ASSERT_EQ(::shutdown(conn.fd.get(), SHUT_WR), 0);
  // cat ends only at stdin's EOF, and the output's EOF follows.
  const Demuxed output = Demux(ReadToEof(conn));
  EXPECT_EQ(output.out, "hello\nworld\n");
  EXPECT_EQ(output.err, "");
  EXPECT_EQ(WaitForExit(*client_, exec), 0);
}

TEST_F(DockerClientIntegration, TtyExecTakesTheSizeOfAResizeAfterTheStart) {
  if (!HaveBusybox()) GTEST_SKIP() << testenv::BusyboxImage() << " is missing: run scripts/test-images.sh";
  auto id = CreateSleeper(UniqueName());
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(client_->StartContainer(Ctx(), *id).ok());
  // The process waits for a line so that the size is read after the resize.
  auto started = StartAttached(*id, {"sh", "-c", "read _; stty size"}, true);
  ASSERT_TRUE(started.ok()) << started.status();
  auto& [exec, conn] = *started;
  const absl::Status resized = client_->ResizeExec(Ctx(), exec, ConsoleSize{.height = 33, .width = 111});
  ASSERT_TRUE(resized.ok()) << resized;
  ASSERT_TRUE(WriteAll(conn.fd.get(), "\n"));
  EXPECT_THAT(ReadToEof(conn), HasSubstr("33 111\r\n"));  // raw, through the terminal
  EXPECT_EQ(WaitForExit(*client_, exec), 0);

  // Depending on how far Docker got cleaning up after the exit: the process is not
  // running (dockerd's 500s for a stopped or deleted process), the exec is gone (404), or
  // containerd no longer knows the process (26.1: "process does not exist ...: not found";
  // 28.5 at times with containerd's class first: "NotFound: process does not exist ...").
  const absl::Status ended = client_->ResizeExec(Ctx(), exec, ConsoleSize{.height = 10, .width = 10});
  EXPECT_THAT(ended.code(), AnyOf(absl::StatusCode::kFailedPrecondition, absl::StatusCode::kNotFound)) << ended;
  const std::string about = "resize exec " + exec + ": ";
  EXPECT_THAT(Message(ended), AnyOf(StartsWith(about + "the process is not running"), StartsWith(about + "no such exec"),
                                    StartsWith(about + "process does not exist"),
                                    StartsWith(about + "NotFound: process does not exist")));
}

TEST_F(DockerClientIntegration, StartingAnExecWhoseContainerStoppedFails) {
  if (!HaveBusybox()) GTEST_SKIP() << testenv::BusyboxImage() << " is missing: run scripts/test-images.sh";
  auto id = CreateSleeper(UniqueName());
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(client_->StartContainer(Ctx(), *id).ok());
  ExecConfig config;
  config.cmd = {"true"};
  auto exec = client_->CreateExec(Ctx(), *id, config);
  ASSERT_TRUE(exec.ok()) << exec.status();
  ASSERT_TRUE(client_->StopContainer(Ctx(), *id, StopOptions{1}).ok());
  // Docker 20.10 forgets a stopped container's execs (404); engines that keep them
  // answer 409.
  const absl::Status status = client_->StartExecAttached(Ctx(), *exec, false).status();
  EXPECT_THAT(status.code(), ::testing::AnyOf(absl::StatusCode::kNotFound, absl::StatusCode::kFailedPrecondition))
      << status;
  EXPECT_THAT(Message(status), StartsWith("start exec " + *exec + ": "));
}

TEST_F(DockerClientIntegration, AttachTalksToTheContainersShell) {
  if (!HaveBusybox()) GTEST_SKIP() << testenv::BusyboxImage() << " is missing: run scripts/test-images.sh";
  auto id = StartWithStdin({"sh"});
  ASSERT_TRUE(id.ok()) << id.status();
  auto conn = client_->AttachContainer(Ctx(), *id, AttachOptions{.stdin = true, .stdout = true, .stderr = true});
  ASSERT_TRUE(conn.ok()) << conn.status();
  ASSERT_TRUE(WriteAll(conn->fd.get(), "echo hi; echo oops >&2\n"));
  // With StdinOnce, closing our stdin closes the shell's: it exits and the output ends.
  ASSERT_EQ(::shutdown(conn->fd.get(), SHUT_WR), 0);
  const Demuxed output = Demux(ReadToEof(*conn));
  EXPECT_EQ(output.out, "hi\n");
  EXPECT_EQ(output.err, "oops\n");
}

TEST_F(DockerClientIntegration, AttachToAStoppedContainerIsFailedPrecondition) {
  if (!HaveBusybox()) GTEST_SKIP() << testenv::BusyboxImage() << " is missing: run scripts/test-images.sh";
  auto id = CreateSleeper(UniqueName());  // created, never started
  ASSERT_TRUE(id.ok()) << id.status();
  const absl::Status attach = client_->AttachContainer(Ctx(), *id, AttachOptions{.stdout = true}).status();
  EXPECT_EQ(attach.code(), absl::StatusCode::kFailedPrecondition) << attach;
  EXPECT_EQ(Message(attach), "attach to container " + *id + ": Container " + *id + " is not running");
  const absl::Status resize = client_->ResizeContainer(Ctx(), *id, ConsoleSize{.height = 24, .width = 80});
  EXPECT_EQ(resize.code(), absl::StatusCode::kFailedPrecondition) << resize;
  EXPECT_EQ(client_->AttachContainer(Ctx(), "dockershim-no-such-container", {}).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace dockerclient
