// The dockershim binary as kubelet and crictl meet it: flags, the socket, gRPC
// status codes, credentials kept out of logs, and a clean SIGTERM.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "api/cri.h"
#include "tests/integration/env.h"
#include "tests/integration/shell.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
namespace v1 = runtime::v1;

struct Exit {
  int code = -1;
  std::string stdout_text, stderr_text;
};

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class Daemon {
 public:
  Daemon(const fs::path& dir, std::vector<std::string> args) : dir_(dir) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, (dir / "stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&actions, 2, (dir / "stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    args.insert(args.begin(), DOCKERSHIM_BINARY);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, DOCKERSHIM_BINARY, &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Daemon() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  // Waits up to `timeout` for the process to end.
  std::optional<Exit> Wait(std::chrono::milliseconds timeout) {
    auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        Exit e;
        e.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        e.stdout_text = ReadFile(dir_ / "stdout");
        e.stderr_text = ReadFile(dir_ / "stderr");
        return e;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return std::nullopt;
  }
  void Signal(int sig) { kill(pid_, sig); }
  std::string Stderr() const { return ReadFile(dir_ / "stderr"); }

 private:
  fs::path dir_;
  pid_t pid_ = -1;
};

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
            "--pod-infra-container-image", testenv::PauseImage()};
  }
  bool WaitForSocket() {
    for (int i = 0; i < 250; ++i) {
      struct stat st;
      if (::stat(socket_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  std::shared_ptr<grpc::Channel> Channel() {
    return grpc::CreateChannel("unix://" + socket_, grpc::InsecureChannelCredentials());
  }
  static std::unique_ptr<grpc::ClientContext> Ctx() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return ctx;
  }

  // A pod (Docker's bridge network) with one busybox container running `script`, its
  // CRI log at <dir>/logs/writer/0.log. Returns the container ID, "" on failure.
  std::string RunWriter(const std::string& script) {
    auto runtime = v1::RuntimeService::NewStub(Channel());
    v1::PodSandboxConfig pod;
    pod.mutable_metadata()->set_name("writer");
    pod.mutable_metadata()->set_namespace_(kLogNamespace);
    pod.mutable_metadata()->set_uid(dir_.filename().string());  // unique per test and run
    pod.set_log_directory((dir_ / "logs").string());
    pod.mutable_linux();
    v1::RunPodSandboxRequest run;
    *run.mutable_config() = pod;
    v1::RunPodSandboxResponse ran;
    if (grpc::Status s = runtime->RunPodSandbox(Ctx().get(), run, &ran); !s.ok()) {
      ADD_FAILURE() << "RunPodSandbox: " << s.error_message();
      return "";
    }
    v1::CreateContainerRequest create;
    create.set_pod_sandbox_id(ran.pod_sandbox_id());
    *create.mutable_sandbox_config() = pod;
    v1::ContainerConfig& c = *create.mutable_config();
    c.mutable_metadata()->set_name("writer");
    c.mutable_image()->set_image(testenv::BusyboxImage());
    for (const char* part : {"sh", "-c"}) c.add_command(part);
    c.add_command(script);
    c.set_log_path("writer/0.log");
    c.mutable_linux();
    v1::CreateContainerResponse created;
    if (grpc::Status s = runtime->CreateContainer(Ctx().get(), create, &created); !s.ok()) {
      ADD_FAILURE() << "CreateContainer: " << s.error_message();
      return "";
    }
    v1::StartContainerRequest start;
    start.set_container_id(created.container_id());
    v1::StartContainerResponse started;
    if (grpc::Status s = runtime->StartContainer(Ctx().get(), start, &started); !s.ok()) {
      ADD_FAILURE() << "StartContainer: " << s.error_message();
      return "";
    }
    return created.container_id();
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
  struct stat st;
  ASSERT_EQ(::stat(socket_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660);

  auto runtime = v1::RuntimeService::NewStub(Channel());
  auto images = v1::ImageService::NewStub(Channel());
  v1::VersionResponse version;
  ASSERT_TRUE(runtime->Version(Ctx().get(), v1::VersionRequest(), &version).ok());
  EXPECT_EQ(version.runtime_name(), "docker");
  EXPECT_EQ(version.runtime_api_version(), "v1");

  v1::ImageStatusRequest bad;
  bad.mutable_image()->set_image("Not A Reference");
  v1::ImageStatusResponse image_status;
  grpc::Status s = images->ImageStatus(Ctx().get(), bad, &image_status);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("invalid image reference"), std::string::npos) << s.error_message();

  v1::CreateContainerResponse created;
  s = runtime->CreateContainer(Ctx().get(), v1::CreateContainerRequest(), &created);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("pod_sandbox_id is required"), std::string::npos) << s.error_message();

  v1::CheckpointContainerResponse checkpointed;
  s = runtime->CheckpointContainer(Ctx().get(), v1::CheckpointContainerRequest(), &checkpointed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_NE(s.error_message().find("CheckpointContainer"), std::string::npos) << s.error_message();

  d.Signal(SIGTERM);
  auto e = d.Wait(std::chrono::seconds(15));
  ASSERT_TRUE(e.has_value()) << "dockershim did not exit after SIGTERM";
  EXPECT_EQ(e->code, 0) << e->stderr_text;
  EXPECT_FALSE(fs::exists(socket_));
}

TEST_F(DaemonTest, CredentialsNeverReachTheLog) {
  Daemon d(dir_, ServeArgs());
  ASSERT_TRUE(WaitForSocket()) << d.Stderr();
  auto images = v1::ImageService::NewStub(Channel());
  const std::string password = "Sup3r-Secret-Pw-771";
  v1::PullImageRequest pull;
  pull.mutable_image()->set_image(testenv::AuthRegistry() + "/private/busybox:latest");
  pull.mutable_auth()->set_username(testenv::AuthUser());
  pull.mutable_auth()->set_password(password);
  v1::PullImageResponse pulled;
  grpc::Status s = images->PullImage(Ctx().get(), pull, &pulled);
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

TEST_F(DaemonTest, RotationByRenameAndReopenContainerLogLosesNoLine) {
  constexpr int kLines = 2000;
  Daemon d(dir_, ServeArgs());
  ASSERT_TRUE(WaitForSocket()) << d.Stderr();
  const std::string id = RunWriter(NumberedLines(kLines));
  ASSERT_FALSE(id.empty());
  auto runtime = v1::RuntimeService::NewStub(Channel());
  // The kubelet's rotation: rename to <log>.<timestamp>, then ReopenContainerLog.
  std::vector<fs::path> rotated;
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    rotated.push_back(WriterLog().string() + ".20261201-10000" + std::to_string(i));
    fs::rename(WriterLog(), rotated.back());
    v1::ReopenContainerLogRequest reopen;
    reopen.set_container_id(id);
    v1::ReopenContainerLogResponse reopened;
    grpc::Status s = runtime->ReopenContainerLog(Ctx().get(), reopen, &reopened);
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

  // A stopped container's log cannot be reopened (containerd answers the same).
  v1::StopContainerRequest stop;
  stop.set_container_id(id);
  stop.set_timeout(0);
  v1::StopContainerResponse stopped;
  ASSERT_TRUE(runtime->StopContainer(Ctx().get(), stop, &stopped).ok());
  v1::ReopenContainerLogRequest reopen;
  reopen.set_container_id(id);
  v1::ReopenContainerLogResponse reopened;
  EXPECT_EQ(runtime->ReopenContainerLog(Ctx().get(), reopen, &reopened).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
}

}  // namespace
