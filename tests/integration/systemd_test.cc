// The binary started the way systemd starts a Type=notify, socket-activated service:
// the listening CRI socket as fd 3 (LISTEN_FDS/LISTEN_PID), a NOTIFY_SOCKET datagram
// socket, and WATCHDOG_USEC.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <future>
#include <mutex>

#include "api/cri.h"
#include "common/unique_fd.h"
#include "tests/integration/cri_client.h"
#include "tests/integration/env.h"
#include "tests/integration/shell.h"
#include "tests/integration/daemon.h"

namespace {

namespace fs = std::filesystem;
namespace v1 = runtime::v1;

common::UniqueFd UnixSocket(int type, const std::string& path) {
  common::UniqueFd fd(::socket(AF_UNIX, type | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return {};
  if (type == SOCK_STREAM && ::listen(fd.get(), 128) != 0) return {};
  return fd;
}

// What the service sent to NOTIFY_SOCKET, collected on a thread.
class NotifyLog {
 public:
  explicit NotifyLog(common::UniqueFd fd) : fd_(std::move(fd)) {
    thread_ = std::thread([this] {
      char buf[4096];
      while (!stop_) {
        pollfd p{fd_.get(), POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) continue;
        ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
        if (n <= 0) continue;
        std::lock_guard lock(mu_);
        messages_.emplace_back(buf, static_cast<size_t>(n));
      }
    });
  }
  ~NotifyLog() {
    stop_ = true;
    thread_.join();
  }
  int Count(const std::string& message) {
    std::lock_guard lock(mu_);
    return static_cast<int>(std::count(messages_.begin(), messages_.end(), message));
  }
  bool WaitFor(const std::string& message, int count, std::chrono::seconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (Count(message) < count) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }
  std::vector<std::string> All() {
    std::lock_guard lock(mu_);
    return messages_;
  }

 private:
  common::UniqueFd fd_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::string> messages_;
  std::thread thread_;
};

std::unique_ptr<grpc::ClientContext> Ctx(int seconds = 60) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  return ctx;
}

class SystemdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dsops-systemd-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    testenv::Sh("docker ps -aq --filter name=_dsops-systemd_ | xargs -r docker rm -f");
    fs::remove_all(dir_);
  }
  std::vector<std::string> Args() {
    return {"--container-runtime-endpoint",
            "fd://",
            "--docker-endpoint",
            testenv::DockerEndpoint(),
            "--network-plugin",
            "docker",
            "--root-directory",
            (dir_ / "root").string(),
            "--pod-infra-container-image",
            testenv::PauseImage()};
  }
  testenv::CriClient Client(int distinct = 0) {
    grpc::ChannelArguments args;
    args.SetInt("dsops.distinct", distinct);  // its own connection
    return testenv::CriClient((dir_ / "cri.sock").string(), std::chrono::seconds(60), args);
  }
  fs::path dir_;
};

TEST_F(SystemdTest, SocketActivatedNotifyServiceServesCriAndStopsCleanly) {
  common::UniqueFd listener = UnixSocket(SOCK_STREAM, (dir_ / "cri.sock").string());
  ASSERT_TRUE(listener) << std::strerror(errno);
  common::UniqueFd notify = UnixSocket(SOCK_DGRAM, (dir_ / "notify").string());
  ASSERT_TRUE(notify) << std::strerror(errno);
  NotifyLog log(std::move(notify));
  testenv::Daemon shim(dir_, Args(), {"NOTIFY_SOCKET=" + (dir_ / "notify").string(), "WATCHDOG_USEC=400000"},
                            listener.get());
  listener.Reset();  // the child holds it now, as systemd would
  ASSERT_TRUE(log.WaitFor("READY=1", 1, std::chrono::seconds(30))) << shim.Stderr();

  // Serving by then, on the inherited socket; the shim made no socket of its own.
  testenv::CriClient cri = Client();
  v1::VersionResponse version;
  grpc::Status s = cri.runtime().Version(Ctx().get(), v1::VersionRequest(), &version);
  ASSERT_TRUE(s.ok()) << s.error_message() << shim.Stderr();
  EXPECT_EQ(version.runtime_name(), "docker");

  // The watchdog: WATCHDOG_USEC 0.4 s, so a ping every 0.2 s.
  EXPECT_TRUE(log.WaitFor("WATCHDOG=1", 3, std::chrono::seconds(10))) << ::testing::PrintToString(log.All());

  // Many connections at once, each accepted by the shim and handed to gRPC.
  std::vector<std::future<bool>> calls;
  for (int i = 1; i <= 24; ++i) {
    calls.push_back(std::async(std::launch::async, [this, i] {
      testenv::CriClient own = Client(i);
      v1::VersionResponse r;
      return own.runtime().Version(Ctx().get(), v1::VersionRequest(), &r).ok();
    }));
  }
  for (auto& call : calls) EXPECT_TRUE(call.get());

  // A 6 MiB request passes gRPC's 4 MiB default: the server's 16 MiB limit applies
  // to adopted connections too (the reference is then refused as a reference).
  v1::ImageStatusRequest big;
  big.mutable_image()->set_image(std::string(6 << 20, 'a'));
  v1::ImageStatusResponse big_status;
  s = cri.images().ImageStatus(Ctx().get(), big, &big_status);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message().substr(0, 200);

  // A server stream (GetContainerEvents) and a container's lifecycle with an ExecSync.
  grpc::ClientContext events_ctx;
  events_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(2));
  auto events = cri.runtime().GetContainerEvents(&events_ctx, v1::GetEventsRequest());
  events->WaitForInitialMetadata();
  v1::PodSandboxConfig pod;
  pod.mutable_metadata()->set_name("sd");
  pod.mutable_metadata()->set_namespace_("dsops-systemd");
  pod.mutable_metadata()->set_uid(dir_.filename().string());
  pod.mutable_linux();
  std::string pod_id;
  s = cri.RunPodSandbox(pod, &pod_id);
  ASSERT_TRUE(s.ok()) << s.error_message();
  std::string container_id;
  s = cri.CreateAndStartContainer(pod_id, pod, testenv::BusyboxContainer("app", {"sleep", "300"}), &container_id);
  ASSERT_TRUE(s.ok()) << s.error_message();
  v1::ExecSyncRequest exec;
  exec.set_container_id(container_id);
  for (const char* part : {"sh", "-c", "echo via-fd-3"}) exec.add_cmd(part);
  exec.set_timeout(30);
  v1::ExecSyncResponse execed;
  s = cri.runtime().ExecSync(Ctx().get(), exec, &execed);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(execed.exit_code(), 0);
  EXPECT_EQ(execed.stdout(), "via-fd-3\n");
  v1::ContainerEventResponse event;
  bool saw_started = false;
  while (!saw_started && events->Read(&event)) {
    saw_started = event.container_id() == container_id && event.container_event_type() == v1::CONTAINER_STARTED_EVENT;
  }
  EXPECT_TRUE(saw_started) << "no CONTAINER_STARTED_EVENT on the stream";
  s = cri.StopAndRemoveContainer(container_id, 0);
  EXPECT_TRUE(s.ok()) << s.error_message();
  s = cri.StopAndRemovePodSandbox(pod_id);
  EXPECT_TRUE(s.ok()) << s.error_message();

  // SIGTERM with the event stream still open: STOPPING=1, exit 0, and systemd's socket
  // file stays (systemd, not the service, owns it).
  shim.Signal(SIGTERM);
  auto e = shim.Wait(std::chrono::seconds(20));
  ASSERT_TRUE(e.has_value()) << "dockershim did not exit after SIGTERM";
  EXPECT_EQ(e->code, 0) << e->stderr_text;
  EXPECT_EQ(log.Count("STOPPING=1"), 1) << ::testing::PrintToString(log.All());
  EXPECT_EQ(log.Count("READY=1"), 1);
  EXPECT_TRUE(fs::exists(dir_ / "cri.sock"));
  events_ctx.TryCancel();
  events->Finish();
}

TEST_F(SystemdTest, FdEndpointWithoutASocketFromSystemdExitsTwo) {
  testenv::Daemon shim(dir_, Args());
  auto e = shim.Wait(std::chrono::seconds(10));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, 2);
  EXPECT_NE(e->stderr_text.find("LISTEN_FDS"), std::string::npos) << e->stderr_text;
}

TEST_F(SystemdTest, APassedFdThatIsNotAListeningSocketExitsTwo) {
  common::UniqueFd notlistening(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  testenv::Daemon shim(dir_, Args(), {}, notlistening.get());
  auto e = shim.Wait(std::chrono::seconds(10));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, 2);
  EXPECT_NE(e->stderr_text.find("not a listening stream socket"), std::string::npos) << e->stderr_text;
}

}  // namespace
