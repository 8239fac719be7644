// DockerStreamingRuntime on the fake Docker client: what exec and attach ask of
// Docker, how the hijacked stream is handed to the streaming server, terminal sizes,
// exit codes, killing abandoned execs, and where port-forward connects.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "shim/naming.h"
#include "shim/streaming_runtime.h"
#include "tests/unit/fake_docker_client.h"

namespace shim {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Optional;
using ::testing::Pair;
using ::testing::SizeIs;
using testing_fakes::FakeDockerClient;

constexpr char kImage[] = "busybox:1.36";

// Reads what `fd` has within `timeout_ms`: the bytes, "" at EOF, nullopt if nothing came.
std::optional<std::string> ReadWithin(int fd, int timeout_ms = 5000) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) != 1) return std::nullopt;
  char buf[256];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  return std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
}

class StreamingRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    docker_.AddImage({kImage});
    docker_.OnStream([this](FakeDockerClient::StreamPeer peer) {
      std::lock_guard lock(mu_);
      peers_.push_back(std::move(peer));
    });
  }

  // A started container of `type` (the io.kubernetes.docker.type label).
  std::string RunContainer(const std::string& name, const std::string& type, bool tty = false,
                           const std::string& network_mode = "none") {
    nlohmann::json body = {{"Image", kImage},
                           {"Tty", tty},
                           {"Labels", {{kContainerTypeLabel, type}}},
                           {"HostConfig", {{"NetworkMode", network_mode}}}};
    auto id = docker_.CreateContainer(ctx_, name, body);
    EXPECT_TRUE(id.ok()) << id.status();
    if (!id.ok()) return "";
    EXPECT_TRUE(docker_.StartContainer(ctx_, *id).ok());
    return *id;
  }
  std::string RunApp(bool tty = false) { return RunContainer("app", kContainerTypeContainer, tty); }

  // The one stream handed over so far (dockerd's end).
  FakeDockerClient::StreamPeer TakePeer() {
    std::lock_guard lock(mu_);
    EXPECT_THAT(peers_, SizeIs(1));
    if (peers_.empty()) return {};
    FakeDockerClient::StreamPeer peer = std::move(peers_.front());
    peers_.clear();
    return peer;
  }

  static streaming::ExecRequest ExecReq(const std::string& id, bool tty) {
    streaming::ExecRequest req;
    req.container_id = id;
    req.cmd = {"sh", "-c", "echo hi"};
    req.tty = tty;
    req.stdin = true;
    req.stdout = true;
    req.stderr = !tty;
    return req;
  }

  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(10));
  FakeDockerClient docker_;
  std::mutex mu_;
  std::vector<FakeDockerClient::StreamPeer> peers_;  // guarded by mu_
  std::vector<std::pair<int, int>> signalled_;       // (pid, signal)
  DockerStreamingRuntime runtime_{docker_, [this](int pid, int signal) {
                                    signalled_.emplace_back(pid, signal);
                                    return 0;
                                  }};
};

TEST_F(StreamingRuntimeTest, TtyExecAsksDockerForTheRequestedStreamsAndSize) {
  const std::string app = RunApp();
  auto started = runtime_.Exec(ExecReq(app, /*tty=*/true), streaming::TerminalSize{.width = 120, .height = 40});
  ASSERT_TRUE(started.ok()) << started.status();
  FakeDockerClient::StreamPeer peer = TakePeer();
  EXPECT_EQ(peer.container_id, app);
  EXPECT_THAT(peer.config.cmd, ElementsAre("sh", "-c", "echo hi"));
  EXPECT_TRUE(peer.config.tty);
  EXPECT_TRUE(peer.config.attach_stdin);
  EXPECT_TRUE(peer.config.attach_stdout);
  EXPECT_FALSE(peer.config.attach_stderr);
  ASSERT_TRUE(peer.config.console_size.has_value());
  EXPECT_EQ(peer.config.console_size->height, 40);
  EXPECT_EQ(peer.config.console_size->width, 120);
  // Engines before API 1.42 drop ConsoleSize: the size is also applied once started.
  auto resizes = docker_.Resizes();
  ASSERT_THAT(resizes, SizeIs(1));
  EXPECT_EQ(resizes[0].id, peer.id);
  EXPECT_EQ(resizes[0].size.height, 40);
  EXPECT_EQ(resizes[0].size.width, 120);
  // A TTY's output is raw.
  EXPECT_FALSE(started->io.multiplexed);
}

TEST_F(StreamingRuntimeTest, ExecWithoutTtyIsMultiplexedAndUnsized) {
  const std::string app = RunApp();
  // A size without a TTY means nothing to Docker.
  auto started = runtime_.Exec(ExecReq(app, /*tty=*/false), streaming::TerminalSize{.width = 80, .height = 24});
  ASSERT_TRUE(started.ok()) << started.status();
  FakeDockerClient::StreamPeer peer = TakePeer();
  EXPECT_FALSE(peer.config.tty);
  EXPECT_TRUE(peer.config.attach_stderr);
  EXPECT_FALSE(peer.config.console_size.has_value());
  EXPECT_THAT(docker_.Resizes(), IsEmpty());
  EXPECT_TRUE(started->io.multiplexed);
}

TEST_F(StreamingRuntimeTest, TtyExecWithoutASizeIsNotResized) {
  const std::string app = RunApp();
  auto started = runtime_.Exec(ExecReq(app, /*tty=*/true), std::nullopt);
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_FALSE(TakePeer().config.console_size.has_value());
  EXPECT_THAT(docker_.Resizes(), IsEmpty());
}

TEST_F(StreamingRuntimeTest, AFailedFirstResizeStillStartsTheExec) {
  const std::string app = RunApp();
  docker_.FailOperation("ResizeExec", absl::UnknownError("timeout waiting for exec session ready"));
  auto started = runtime_.Exec(ExecReq(app, /*tty=*/true), streaming::TerminalSize{.width = 80, .height = 24});
  EXPECT_TRUE(started.ok()) << started.status();
}

TEST_F(StreamingRuntimeTest, ExecStreamIsDockersConnection) {
  const std::string app = RunApp();
  auto started = runtime_.Exec(ExecReq(app, /*tty=*/false), std::nullopt);
  ASSERT_TRUE(started.ok()) << started.status();
  FakeDockerClient::StreamPeer peer = TakePeer();
  ASSERT_EQ(::write(started->io.fd.get(), "in", 2), 2);
  EXPECT_EQ(ReadWithin(peer.fd.get()), "in");
  ASSERT_EQ(::write(peer.fd.get(), "out", 3), 3);
  EXPECT_EQ(ReadWithin(started->io.fd.get()), "out");
}

TEST_F(StreamingRuntimeTest, ExecWithoutTtyPassesStdinEofToDocker) {
  const std::string app = RunApp();
  auto started = runtime_.Exec(ExecReq(app, /*tty=*/false), std::nullopt);
  ASSERT_TRUE(started.ok()) << started.status();
  FakeDockerClient::StreamPeer peer = TakePeer();
  ASSERT_EQ(::shutdown(started->io.fd.get(), SHUT_WR), 0);
  EXPECT_EQ(ReadWithin(peer.fd.get()), "");
}

// Docker ends a TTY's output at its stdin's EOF, so that EOF must not be passed on.
TEST_F(StreamingRuntimeTest, OnlyExecsWithoutTtyTakeAStdinEof) {
  const std::string app = RunApp();
  auto plain = runtime_.Exec(ExecReq(app, /*tty=*/false), std::nullopt);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(plain->io.half_close_stdin);
  auto tty = runtime_.Exec(ExecReq(app, /*tty=*/true), std::nullopt);
  ASSERT_TRUE(tty.ok()) << tty.status();
  EXPECT_FALSE(tty->io.half_close_stdin);
}

TEST_F(StreamingRuntimeTest, ExecResizeGoesToTheExec) {
  const std::string app = RunApp();
  auto started = runtime_.Exec(ExecReq(app, /*tty=*/true), std::nullopt);
  ASSERT_TRUE(started.ok()) << started.status();
  const std::string exec_id = TakePeer().id;
  ASSERT_TRUE(started->process->Resize({.width = 100, .height = 30}).ok());
  auto resizes = docker_.Resizes();
  ASSERT_THAT(resizes, SizeIs(1));
  EXPECT_EQ(resizes[0].id, exec_id);
  EXPECT_EQ(resizes[0].size.width, 100);
  EXPECT_EQ(resizes[0].size.height, 30);
}

TEST_F(StreamingRuntimeTest, WaitReturnsTheExitCode) {
  const std::string app = RunApp();
  auto started = runtime_.Exec(ExecReq(app, /*tty=*/false), std::nullopt);
  ASSERT_TRUE(started.ok()) << started.status();
  docker_.FinishExec(TakePeer().id, 3);
  auto exit = started->process->Wait();
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_THAT(*exit, Optional(3));
}

TEST_F(StreamingRuntimeTest, WaitFailsWhenDockerForgotTheExec) {
  const std::string app = RunApp();
  auto started = runtime_.Exec(ExecReq(app, /*tty=*/false), std::nullopt);
  ASSERT_TRUE(started.ok()) << started.status();
  docker_.FailOperation("InspectExec", absl::NotFoundError("No such exec instance"));
  EXPECT_EQ(started->process->Wait().status().code(), absl::StatusCode::kNotFound);
}

TEST_F(StreamingRuntimeTest, AbandonKillsARunningExec) {
  const std::string app = RunApp();
  auto started = runtime_.Exec(ExecReq(app, /*tty=*/false), std::nullopt);
  ASSERT_TRUE(started.ok()) << started.status();
  auto inspect = docker_.InspectExec(ctx_, TakePeer().id);
  ASSERT_TRUE(inspect.ok()) << inspect.status();
  ASSERT_GT(inspect->pid, 0);
  started->process->Abandon();
  EXPECT_THAT(signalled_, ElementsAre(Pair(inspect->pid, SIGKILL)));
}

TEST_F(StreamingRuntimeTest, AbandonLeavesAFinishedExecAlone) {
  const std::string app = RunApp();
  auto started = runtime_.Exec(ExecReq(app, /*tty=*/false), std::nullopt);
  ASSERT_TRUE(started.ok()) << started.status();
  docker_.FinishExec(TakePeer().id, 0);
  started->process->Abandon();
  EXPECT_THAT(signalled_, IsEmpty());
}

TEST_F(StreamingRuntimeTest, ExecFailuresFromDockerAreReturned) {
  const std::string app = RunApp();
  docker_.FailOperation("StartExecAttached", absl::UnavailableError("dockerd went away"));
  EXPECT_EQ(runtime_.Exec(ExecReq(app, false), std::nullopt).status().code(), absl::StatusCode::kUnavailable);
  docker_.ClearFailures();
  ASSERT_TRUE(docker_.StopContainer(ctx_, app, {}).ok());
  EXPECT_EQ(runtime_.Exec(ExecReq(app, false), std::nullopt).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(StreamingRuntimeTest, AttachFramingFollowsTheContainersTtyNotTheRequests) {
  const std::string tty_app = RunContainer("tty-app", kContainerTypeContainer, /*tty=*/true);
  const std::string plain_app = RunContainer("plain-app", kContainerTypeContainer, /*tty=*/false);
  streaming::AttachRequest req;
  req.stdout = true;

  req.container_id = tty_app;
  req.tty = false;
  auto to_tty = runtime_.Attach(req, streaming::TerminalSize{.width = 90, .height = 20});
  ASSERT_TRUE(to_tty.ok()) << to_tty.status();
  EXPECT_FALSE(to_tty->io.multiplexed);
  EXPECT_FALSE(to_tty->io.half_close_stdin);
  TakePeer();
  // The container's own terminal takes the size.
  auto resizes = docker_.Resizes();
  ASSERT_THAT(resizes, SizeIs(1));
  EXPECT_EQ(resizes[0].id, tty_app);
  EXPECT_EQ(resizes[0].size.width, 90);

  req.container_id = plain_app;
  req.tty = true;
  auto to_plain = runtime_.Attach(req, streaming::TerminalSize{.width = 90, .height = 20});
  ASSERT_TRUE(to_plain.ok()) << to_plain.status();
  EXPECT_TRUE(to_plain->io.multiplexed);
  EXPECT_TRUE(to_plain->io.half_close_stdin);
  TakePeer();
  EXPECT_THAT(docker_.Resizes(), SizeIs(1));  // no terminal to size
}

TEST_F(StreamingRuntimeTest, AttachAsksForTheRequestedStreams) {
  const std::string app = RunApp();
  streaming::AttachRequest req;
  req.container_id = app.substr(0, 63);  // a unique prefix
  req.stdin = true;
  req.stderr = true;
  auto started = runtime_.Attach(req, std::nullopt);
  ASSERT_TRUE(started.ok()) << started.status();
  FakeDockerClient::StreamPeer peer = TakePeer();
  EXPECT_EQ(peer.container_id, app);
  EXPECT_TRUE(peer.config.attach_stdin);
  EXPECT_FALSE(peer.config.attach_stdout);
  EXPECT_TRUE(peer.config.attach_stderr);
  // An attach has no exit code of its own, and nothing to kill when the client leaves.
  auto exit = started->process->Wait();
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(*exit, std::nullopt);
  started->process->Abandon();
  EXPECT_THAT(signalled_, IsEmpty());
  ASSERT_TRUE(started->process->Resize({.width = 10, .height = 5}).ok());
  ASSERT_THAT(docker_.Resizes(), SizeIs(1));
  EXPECT_EQ(docker_.Resizes()[0].id, app);
}

TEST_F(StreamingRuntimeTest, AttachToAStoppedContainerFails) {
  const std::string app = RunApp();
  ASSERT_TRUE(docker_.StopContainer(ctx_, app, {}).ok());
  streaming::AttachRequest req;
  req.container_id = app;
  req.stdout = true;
  EXPECT_EQ(runtime_.Attach(req, std::nullopt).status().code(), absl::StatusCode::kFailedPrecondition);
  req.container_id = "0123456789ab";
  EXPECT_EQ(runtime_.Attach(req, std::nullopt).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(StreamingRuntimeTest, PortForwardTargetIsTheSandboxsNetworkNamespace) {
  const std::string sandbox = RunContainer("pod", kContainerTypeSandbox);
  auto netns = runtime_.PortForwardNetns(sandbox);
  ASSERT_TRUE(netns.ok()) << netns.status();
  auto inspect = docker_.InspectContainer(ctx_, sandbox);
  ASSERT_TRUE(inspect.ok());
  EXPECT_EQ(*netns, absl::StrCat("/proc/", inspect->state.pid, "/ns/net"));
}

TEST_F(StreamingRuntimeTest, PortForwardToAHostNetworkPodStaysInTheHostsNamespace) {
  const std::string sandbox = RunContainer("hostpod", kContainerTypeSandbox, false, "host");
  auto netns = runtime_.PortForwardNetns(sandbox);
  ASSERT_TRUE(netns.ok()) << netns.status();
  EXPECT_EQ(*netns, "");
}

TEST_F(StreamingRuntimeTest, PortForwardNeedsARunningSandbox) {
  EXPECT_EQ(runtime_.PortForwardNetns("0123456789ab").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(runtime_.PortForwardNetns(RunApp()).status().code(), absl::StatusCode::kNotFound);
  const std::string sandbox = RunContainer("pod", kContainerTypeSandbox);
  ASSERT_TRUE(docker_.StopContainer(ctx_, sandbox, {}).ok());
  EXPECT_EQ(runtime_.PortForwardNetns(sandbox).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace shim
