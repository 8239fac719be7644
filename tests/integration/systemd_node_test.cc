// The installed Debian package on a systemd node: its units as systemd runs them (socket
// activation, Type=notify readiness, the watchdog), --runtime-cgroups on cgroup v2, and
// the systemd cgroup driver in RuntimeConfig. scripts/vm-package-test.sh installs the .deb
// in the VM of scripts/vm.sh and runs these. They stop, restart and reconfigure the
// node's dockershim.service: skipped unless DOCKERSHIM_TEST_SYSTEMD_NODE=1.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdint>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "api/cri.h"
#include "tests/integration/cgroup_node.h"
#include "tests/integration/cri_client.h"
#include "tests/integration/daemon.h"
#include "tests/integration/shell.h"

namespace {

namespace v1 = runtime::v1;
using namespace std::chrono_literals;
using testenv::Trimmed;
using testenv::WaitUntil;

constexpr char kService[] = "dockershim.service";
constexpr char kSocket[] = "dockershim.socket";
// The package's socket (examples/systemd/dockershim.socket) and configuration file.
constexpr char kSocketPath[] = "/run/dockershim.sock";
constexpr char kConfig[] = "/etc/dockershim/config.toml";

std::string Show(const std::string& unit, const std::string& property) {
  return Trimmed(testenv::Sh(absl::StrCat("systemctl show -p ", property, " --value ", unit)));
}

int64_t ShowInt(const std::string& unit, const std::string& property) {
  int64_t value = -1;
  return absl::SimpleAtoi(Show(unit, property), &value) ? value : -1;
}

// A property of the service's D-Bus object as a number: timestamps in µs since the
// epoch, where `systemctl show` prints them for people.
int64_t ServiceProperty(const std::string& interface, const std::string& property) {
  const std::string out = Trimmed(testenv::Sh(
      absl::StrCat("busctl get-property org.freedesktop.systemd1 /org/freedesktop/systemd1/unit/dockershim_2eservice "
                   "org.freedesktop.systemd1.",
                   interface, " ", property)));
  int64_t value = -1;
  absl::string_view number = out;
  return absl::ConsumePrefix(&number, "t ") && absl::SimpleAtoi(number, &value) ? value : -1;
}

std::string JournalCursor() { return Trimmed(testenv::Sh("journalctl -n 1 -o export | sed -n 's/^__CURSOR=//p'")); }

// The service's journal (its own lines and systemd's about it) after `cursor`.
std::string JournalSince(const std::string& cursor) {
  return testenv::Sh(absl::StrCat("journalctl -u ", kService, " --no-pager -o cat --after-cursor='", cursor, "'"));
}

// Version on a connection of its own, waiting for the shim to come (as the kubelet does
// while its runtime restarts) until the deadline.
grpc::Status Version(std::chrono::seconds deadline, int connection, v1::VersionResponse* out = nullptr) {
  grpc::ChannelArguments args;
  args.SetInt("dsops.distinct", connection);
  testenv::CriClient cri(kSocketPath, deadline, args);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + deadline);
  ctx.set_wait_for_ready(true);
  v1::VersionResponse dropped;
  return cri.runtime().Version(&ctx, v1::VersionRequest(), out ? out : &dropped);
}

std::string ProcFile(int pid, const std::string& name) {
  return Trimmed(testenv::ReadFile(absl::StrCat("/proc/", pid, "/", name)));
}

bool RuntimeReady() {
  testenv::CriClient cri(kSocketPath, 60s);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 60s);
  ctx.set_wait_for_ready(true);
  v1::StatusResponse status;
  if (!cri.runtime().Status(&ctx, v1::StatusRequest(), &status).ok()) return false;
  for (const v1::RuntimeCondition& c : status.status().conditions())
    if (c.type() == "RuntimeReady") return c.status();
  return false;
}

int PidOf(const std::string& program) {
  int pid = -1;
  return absl::SimpleAtoi(Trimmed(testenv::Sh("pidof -s " + program)), &pid) ? pid : -1;
}

class SystemdNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testenv::Get("DOCKERSHIM_TEST_SYSTEMD_NODE", "") != "1")
      GTEST_SKIP() << "changes the node's dockershim.service: DOCKERSHIM_TEST_SYSTEMD_NODE=1 "
                      "(scripts/vm-package-test.sh in scripts/vm.sh's VM)";
    ASSERT_EQ(Trimmed(testenv::Sh("cat /proc/1/comm")), "systemd");
    ASSERT_TRUE(testenv::ShOk(absl::StrCat("systemctl start ", kSocket)));
  }

  int MainPid() { return static_cast<int>(ShowInt(kService, "MainPID")); }
  bool Active() { return Show(kService, "ActiveState") == "active" && Show(kService, "SubState") == "running"; }
};

TEST_F(SystemdNodeTest, TheFirstCallActivatesTheServiceWhichIsActiveOnlyOnceItServes) {
  ASSERT_TRUE(testenv::ShOk(absl::StrCat("systemctl stop ", kService)));
  // The socket outlives the service: a stop or restart of the shim keeps its queue.
  EXPECT_EQ(Show(kSocket, "ActiveState"), "active");
  ASSERT_EQ(Show(kService, "ActiveState"), "inactive");
  EXPECT_EQ(Show(kService, "TriggeredBy"), kSocket);
  std::this_thread::sleep_for(2s);
  ASSERT_EQ(Show(kService, "ActiveState"), "inactive") << "started without a connection";
  const std::string cursor = JournalCursor();

  v1::VersionResponse version;
  const auto start = std::chrono::steady_clock::now();
  grpc::Status s = Version(120s, 1, &version);
  ASSERT_TRUE(s.ok()) << s.error_message() << JournalSince(cursor);
  const auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ figures  ] the first call, activation included: " << took << " s\n";
  EXPECT_EQ(version.runtime_name(), "docker");
  EXPECT_TRUE(Active()) << Show(kService, "ActiveState") << "/" << Show(kService, "SubState");

  EXPECT_EQ(Show(kService, "Type"), "notify");
  EXPECT_EQ(Show(kService, "NotifyAccess"), "main");
  EXPECT_EQ(ServiceProperty("Service", "WatchdogUSec"), 30'000'000);
  EXPECT_EQ(Show(kService, "Restart"), "always");

  // Type=notify: systemd calls the unit active when READY=1 comes, which the shim sends
  // after it logged that it serves; started as a simple service, the unit would be active
  // at the fork, before the shim had even asked Docker.
  std::string serving_line;
  for (absl::string_view line : absl::StrSplit(JournalSince(cursor), '\n'))
    if (absl::StrContains(line, "serving CRI v1")) serving_line = std::string(line);
  ASSERT_FALSE(serving_line.empty()) << JournalSince(cursor);
  absl::Time serving;
  std::string error;
  ASSERT_TRUE(absl::ParseTime("%Y-%m-%dT%H:%M:%E3SZ", serving_line.substr(0, serving_line.find(' ')), &serving, &error))
      << serving_line << ": " << error;
  const int64_t serving_us = absl::ToUnixMicros(serving);  // truncated to ms: at most the true time
  const int64_t exec_us = ServiceProperty("Service", "ExecMainStartTimestamp");
  const int64_t active_us = ServiceProperty("Unit", "ActiveEnterTimestamp");
  ASSERT_GT(exec_us, 0);
  EXPECT_LT(exec_us, serving_us) << serving_line;
  EXPECT_GE(active_us, serving_us) << "the unit was active before the shim served: " << serving_line;
  std::cout << "[ figures  ] exec to READY=1: " << (active_us - exec_us) / 1000 << " ms\n";
}

TEST_F(SystemdNodeTest, RuntimeConfigSaysSystemdLikeDocker) {
  ASSERT_EQ(testenv::DockerCgroupDriver(), "systemd");
  ASSERT_TRUE(Version(120s, 2).ok());
  testenv::CriClient cri(kSocketPath, 60s);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 60s);
  v1::RuntimeConfigResponse config;
  grpc::Status s = cri.runtime().RuntimeConfig(&ctx, v1::RuntimeConfigRequest(), &config);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(config.linux().cgroup_driver(), v1::SYSTEMD);
}

TEST_F(SystemdNodeTest, AStoppedShimIsKilledByTheWatchdogAndRestartedBehindTheSameSocket) {
  ASSERT_TRUE(Version(120s, 3).ok());
  ASSERT_TRUE(Active());
  const int pid = MainPid();
  ASSERT_GT(pid, 0);
  const int64_t restarts = ShowInt(kService, "NRestarts");
  const int64_t watchdog_us = ServiceProperty("Service", "WatchdogUSec");
  ASSERT_GT(watchdog_us, 0);
  // WATCHDOG=1 arrives: systemd records when.
  const int64_t ping = ServiceProperty("Service", "WatchdogTimestamp");
  EXPECT_TRUE(WaitUntil([&] { return ServiceProperty("Service", "WatchdogTimestamp") > ping; },
                        std::chrono::seconds(watchdog_us / 1'000'000)))
      << "no WATCHDOG=1 within WatchdogSec";
  const int64_t socket_since = ShowInt(kSocket, "ActiveEnterTimestampMonotonic");
  struct stat socket_file {};
  ASSERT_EQ(::stat(kSocketPath, &socket_file), 0);
  const std::string cursor = JournalCursor();

  ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  const auto stopped = std::chrono::steady_clock::now();
  // A call made while the shim hangs waits in the socket's queue for the next one.
  std::future<grpc::Status> queued =
      std::async(std::launch::async, [&] { return Version(std::chrono::seconds(watchdog_us / 1'000'000 + 120), 4); });
  const auto bound = std::chrono::seconds(watchdog_us / 1'000'000 + 60);
  const bool restarted = WaitUntil([&] { return ShowInt(kService, "NRestarts") == restarts + 1; }, bound);
  if (!restarted) ::kill(pid, SIGCONT);
  ASSERT_TRUE(restarted) << "NRestarts stayed " << ShowInt(kService, "NRestarts") << " for " << bound.count()
                         << " s\n"
                         << JournalSince(cursor);
  std::cout << "[ figures  ] SIGSTOP to the restart: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped).count()
            << " s (WatchdogSec " << watchdog_us / 1'000'000 << " s)\n";
  EXPECT_TRUE(WaitUntil([&] { return Active(); }, 120s)) << JournalSince(cursor);
  EXPECT_NE(MainPid(), pid);
  const grpc::Status s = queued.get();
  EXPECT_TRUE(s.ok()) << "the call made during the hang: " << s.error_message();
  const std::string journal = JournalSince(cursor);
  EXPECT_TRUE(absl::StrContains(journal, "Watchdog timeout")) << journal;

  // systemd kept the listening socket all along: not closed and made again.
  EXPECT_EQ(ShowInt(kSocket, "ActiveEnterTimestampMonotonic"), socket_since)
      << testenv::Sh(absl::StrCat("journalctl -u ", kSocket, " --no-pager -o cat --after-cursor='", cursor, "'"));
  struct stat after {};
  ASSERT_EQ(::stat(kSocketPath, &after), 0);
  EXPECT_EQ(after.st_ino, socket_file.st_ino);
}

TEST_F(SystemdNodeTest, RuntimeCgroupsHoldDockerdAndContainerdInACgroupV2Cgroup) {
  DOCKERSHIM_REQUIRE_CGROUP_V2();
  const int dockerd = PidOf("dockerd"), containerd = PidOf("containerd");
  ASSERT_GT(dockerd, 0);
  ASSERT_GT(containerd, 0);
  struct Saved {
    int pid;
    std::string cgroup, oom;
  };
  const Saved saved[] = {{dockerd, ProcFile(dockerd, "cgroup"), ProcFile(dockerd, "oom_score_adj")},
                         {containerd, ProcFile(containerd, "cgroup"), ProcFile(containerd, "oom_score_adj")}};
  const std::string config = testenv::ReadFile(kConfig);
  ASSERT_FALSE(config.empty());
  const std::string cursor = JournalCursor();
  // As an operator sets it: the configuration file the unit reads.
  std::ofstream(kConfig, std::ios::app) << "runtime-cgroups = \"/docker-runtime\"\n";
  const bool restarted = testenv::ShOk(absl::StrCat("systemctl restart ", kService));
  bool moved = false, ready = false;
  if (restarted) {
    moved = WaitUntil([&] {
      return ProcFile(dockerd, "cgroup") == "0::/docker-runtime" && ProcFile(containerd, "cgroup") == "0::/docker-runtime";
    }, 30s);
    ready = RuntimeReady();  // Docker answers from its new cgroup
  }
  const std::string dockerd_cgroup = ProcFile(dockerd, "cgroup"), containerd_cgroup = ProcFile(containerd, "cgroup");
  const std::string dockerd_oom = ProcFile(dockerd, "oom_score_adj"),
                    containerd_oom = ProcFile(containerd, "oom_score_adj");
  const std::string procs = testenv::ReadFile("/sys/fs/cgroup/docker-runtime/cgroup.procs");
  const std::string journal = JournalSince(cursor);

  // Back as it was: the configuration, the daemons in their units' cgroups, their scores.
  std::ofstream(kConfig, std::ios::trunc) << config;
  for (const Saved& d : saved) {
    std::ofstream(absl::StrCat("/sys/fs/cgroup", absl::StripPrefix(d.cgroup, "0::"), "/cgroup.procs")) << d.pid << "\n";
    std::ofstream(absl::StrCat("/proc/", d.pid, "/oom_score_adj")) << d.oom << "\n";
  }
  EXPECT_TRUE(testenv::ShOk(absl::StrCat("systemctl restart ", kService)));
  EXPECT_EQ(::rmdir("/sys/fs/cgroup/docker-runtime"), 0) << std::strerror(errno);

  ASSERT_TRUE(restarted) << journal;
  EXPECT_TRUE(moved) << journal;
  EXPECT_EQ(dockerd_cgroup, "0::/docker-runtime");
  EXPECT_EQ(containerd_cgroup, "0::/docker-runtime");
  EXPECT_EQ(dockerd_oom, "-999");
  EXPECT_EQ(containerd_oom, "-999");
  EXPECT_TRUE(absl::StrContains(procs, absl::StrCat(dockerd, "\n")) &&
              absl::StrContains(procs, absl::StrCat(containerd, "\n")))
      << procs;
  EXPECT_TRUE(ready) << journal;
}

}  // namespace
