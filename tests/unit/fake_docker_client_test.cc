// The fake's exec/attach streams and resizes, which streaming tests build on.
#include "tests/unit/fake_docker_client.h"

#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace testing_fakes {
namespace {

using dockerclient::ConsoleSize;
using ::testing::ElementsAre;

common::Context Ctx() { return common::Context::WithTimeout(absl::Seconds(5)); }

class FakeStreamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    docker_.AddImage({"busybox:latest"});
    container_ = *docker_.CreateContainer(Ctx(), "c", {{"Image", "busybox:latest"}, {"Tty", true}});
    ASSERT_TRUE(docker_.StartContainer(Ctx(), container_).ok());
    docker_.OnStream([this](FakeDockerClient::StreamPeer peer) { peer_ = std::move(peer); });
  }

  std::string Exec(std::vector<std::string> cmd) {
    dockerclient::ExecConfig config;
    config.cmd = std::move(cmd);
    config.attach_stdin = true;
    return *docker_.CreateExec(Ctx(), container_, config);
  }

  FakeDockerClient docker_;
  std::string container_;
  FakeDockerClient::StreamPeer peer_;
};

std::string ReadSome(int fd) {
  char buf[64];
  const ssize_t n = ::read(fd, buf, sizeof(buf));
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

TEST_F(FakeStreamsTest, StartedExecIsConnectedToTheTestAndRunsUntilFinished) {
  const std::string exec = Exec({"cat"});
  auto conn = docker_.StartExecAttached(Ctx(), exec, false);
  ASSERT_TRUE(conn.ok()) << conn.status();
  ASSERT_TRUE(peer_.fd.valid());
  EXPECT_EQ(peer_.id, exec);
  EXPECT_EQ(peer_.container_id, container_);
  EXPECT_THAT(peer_.config.cmd, ElementsAre("cat"));
  EXPECT_TRUE(peer_.config.attach_stdin);

  ASSERT_EQ(::write(conn->fd.get(), "in", 2), 2);
  EXPECT_EQ(ReadSome(peer_.fd.get()), "in");
  ASSERT_EQ(::write(peer_.fd.get(), "out", 3), 3);
  EXPECT_EQ(ReadSome(conn->fd.get()), "out");
  ::shutdown(conn->fd.get(), SHUT_WR);
  EXPECT_EQ(ReadSome(peer_.fd.get()), "") << "the shim's half-close reaches the peer";

  EXPECT_TRUE(docker_.InspectExec(Ctx(), exec)->running);
  docker_.FinishExec(exec, 3);
  auto inspect = docker_.InspectExec(Ctx(), exec);
  EXPECT_FALSE(inspect->running);
  EXPECT_EQ(inspect->exit_code, 3);
}

TEST_F(FakeStreamsTest, WithoutOnStreamTheShimReadsEof) {
  docker_.OnStream(nullptr);
  auto conn = docker_.StartExecAttached(Ctx(), Exec({"true"}), false);
  ASSERT_TRUE(conn.ok()) << conn.status();
  EXPECT_EQ(ReadSome(conn->fd.get()), "");
}

TEST_F(FakeStreamsTest, StartInAStoppedContainerIsFailedPrecondition) {
  const std::string exec = Exec({"sh"});
  ASSERT_TRUE(docker_.StopContainer(Ctx(), container_, {}).ok());
  EXPECT_EQ(docker_.StartExecAttached(Ctx(), exec, false).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(docker_.StartExecAttached(Ctx(), "no-such-exec", false).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(FakeStreamsTest, AttachGivesTheContainersTtyAndTheAttachedStreams) {
  auto conn = docker_.AttachContainer(Ctx(), container_, {.stdin = true, .stdout = true});
  ASSERT_TRUE(conn.ok()) << conn.status();
  EXPECT_EQ(peer_.id, container_);
  EXPECT_TRUE(peer_.config.tty);
  EXPECT_TRUE(peer_.config.attach_stdin);
  EXPECT_TRUE(peer_.config.attach_stdout);
  EXPECT_FALSE(peer_.config.attach_stderr);

  ASSERT_TRUE(docker_.StopContainer(Ctx(), container_, {}).ok());
  EXPECT_EQ(docker_.AttachContainer(Ctx(), container_, {.stdout = true}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(FakeStreamsTest, ResizesAreRecordedAndCheckedAsDockerWould) {
  const std::string exec = Exec({"sh"});
  ASSERT_TRUE(docker_.StartExecAttached(Ctx(), exec, true).ok());
  ASSERT_TRUE(docker_.ResizeExec(Ctx(), exec, {.height = 24, .width = 80}).ok());
  ASSERT_TRUE(docker_.ResizeContainer(Ctx(), container_, {.height = 30, .width = 100}).ok());
  EXPECT_EQ(docker_.ResizeExec(Ctx(), exec, {.height = 0, .width = 80}).code(), absl::StatusCode::kInvalidArgument);
  docker_.FinishExec(exec, 0);
  EXPECT_EQ(docker_.ResizeExec(Ctx(), exec, {.height = 24, .width = 80}).code(),
            absl::StatusCode::kFailedPrecondition);

  const auto resizes = docker_.Resizes();
  ASSERT_EQ(resizes.size(), 2u);
  EXPECT_EQ(resizes[0].id, exec);
  EXPECT_EQ(resizes[0].size.height, 24);
  EXPECT_EQ(resizes[0].size.width, 80);
  EXPECT_EQ(resizes[1].id, container_);
  EXPECT_EQ(resizes[1].size.width, 100);
}

TEST_F(FakeStreamsTest, EachNewOperationCanBeMadeToFail) {
  const std::string exec = Exec({"sh"});
  for (const char* op : {"StartExecAttached", "ResizeExec", "AttachContainer", "ResizeContainer"}) {
    docker_.FailOperation(op, absl::UnavailableError(op));
  }
  EXPECT_EQ(docker_.StartExecAttached(Ctx(), exec, false).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(docker_.ResizeExec(Ctx(), exec, {.height = 1, .width = 1}).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(docker_.AttachContainer(Ctx(), container_, {}).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(docker_.ResizeContainer(Ctx(), container_, {.height = 1, .width = 1}).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(docker_.CallCount("AttachContainer"), 1);
}

}  // namespace
}  // namespace testing_fakes
