// --runtime-cgroups over a fake /proc and cgroup tree; the daemon is this test
// process, found through a unix socket it listens on.
#include "shim/runtime_cgroups/runtime_cgroups.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/unique_fd.h"
#include "tests/unit/stats_fake_tree.h"

namespace shim::runtime_cgroups {
namespace {

namespace fs = std::filesystem;

constexpr char kHybridMountinfo[] =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
    "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n";

constexpr char kOutsideV1[] =
    "12:memory:/system.slice/docker.service\n"
    "5:cpuset:/\n"
    "3:cpu,cpuacct:/system.slice/docker.service\n"
    "1:name=systemd:/system.slice/docker.service\n"
    "0::/system.slice/docker.service\n";

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class RuntimeCgroupsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_path_ = tree_.Path("dockerd.sock");
    listener_.Reset(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    ASSERT_LT(socket_path_.size(), sizeof addr.sun_path);
    std::strcpy(addr.sun_path, socket_path_.c_str());
    ASSERT_EQ(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(listener_.get(), 8), 0);
    pid_dir_ = "proc/" + std::to_string(::getpid());
  }

  void Host(const std::string& mountinfo, const std::string& proc_cgroup, int oom_score_adj) {
    tree_.Write("proc/self/mountinfo", mountinfo);
    tree_.Write(pid_dir_ + "/cgroup", proc_cgroup);
    tree_.Write(pid_dir_ + "/oom_score_adj", std::to_string(oom_score_adj) + "\n");
    for (const char* dir : {"cpu,cpuacct", "cpuset", "memory", "systemd", "unified"})
      fs::create_directories(tree_.Path(std::string("sys/fs/cgroup/") + dir));
    tree_.Write("sys/fs/cgroup/cpuset/cpuset.cpus", "0-3\n");
    tree_.Write("sys/fs/cgroup/cpuset/cpuset.mems", "0\n");
  }

  Options Opts(int oom_floor = -1000) {
    Options o;
    o.cgroup = "/runtime/docker";
    o.daemon_sockets = {socket_path_, tree_.Path("no-such.sock")};
    o.proc_root = tree_.Path("proc");
    o.path_prefix = tree_.root();
    o.oom_floor = oom_floor;
    return o;
  }
  std::string Procs(const std::string& hierarchy) {
    return Read(tree_.Path("sys/fs/cgroup/" + hierarchy + "/runtime/docker/cgroup.procs"));
  }
  std::string OomScore() { return Read(tree_.Path(pid_dir_ + "/oom_score_adj")); }

  testutil::FakeTree tree_;
  std::string socket_path_, pid_dir_;
  common::UniqueFd listener_;
};

TEST_F(RuntimeCgroupsTest, ListenerPidIsTheListeningProcess) {
  EXPECT_EQ(ListenerPid(socket_path_), ::getpid());
  EXPECT_EQ(ListenerPid(tree_.Path("no-such.sock")), std::nullopt);
}

TEST_F(RuntimeCgroupsTest, PidFiles) {
  tree_.Write("ok.pid", "1234\n");
  tree_.Write("bad.pid", "12ab\n");
  EXPECT_EQ(ReadPidFile(tree_.Path("ok.pid")), 1234);
  EXPECT_EQ(ReadPidFile(tree_.Path("bad.pid")), std::nullopt);
  EXPECT_EQ(ReadPidFile(tree_.Path("missing.pid")), std::nullopt);
}

TEST_F(RuntimeCgroupsTest, CreatesTheCgroupInEveryControllerHierarchyAndMovesTheDaemon) {
  Host(kHybridMountinfo, kOutsideV1, 0);
  auto manager = RuntimeCgroups::Create(Opts());
  ASSERT_TRUE(manager.ok()) << manager.status();
  const std::string pid_line = std::to_string(::getpid()) + "\n";
  EXPECT_EQ(Procs("cpu,cpuacct"), pid_line);
  EXPECT_EQ(Procs("memory"), pid_line);
  EXPECT_EQ(Procs("cpuset"), pid_line);
  // A new cpuset cgroup takes its parent's CPUs and memory nodes, on each level.
  EXPECT_EQ(Read(tree_.Path("sys/fs/cgroup/cpuset/runtime/cpuset.cpus")), "0-3\n");
  EXPECT_EQ(Read(tree_.Path("sys/fs/cgroup/cpuset/runtime/docker/cpuset.mems")), "0\n");
  // systemd's named hierarchy and the hybrid host's empty cgroup2 are left alone.
  EXPECT_FALSE(fs::exists(tree_.Path("sys/fs/cgroup/systemd/runtime")));
  EXPECT_FALSE(fs::exists(tree_.Path("sys/fs/cgroup/unified/runtime")));
  EXPECT_EQ(OomScore(), "-999\n");
  EXPECT_EQ((*manager)->Directories().size(), 3u);
}

TEST_F(RuntimeCgroupsTest, ADaemonAlreadyThereIsLeftWhereItIs) {
  Host(kHybridMountinfo,
       "12:memory:/runtime/docker\n5:cpuset:/runtime/docker\n3:cpu,cpuacct:/runtime/docker\n"
       "1:name=systemd:/system.slice/docker.service\n",
       -999);
  auto manager = RuntimeCgroups::Create(Opts());
  ASSERT_TRUE(manager.ok()) << manager.status();
  const Pass pass = (*manager)->EnsureOnce();
  EXPECT_EQ(pass.found, std::vector<int>{::getpid()});
  EXPECT_TRUE(pass.moved.empty());
  EXPECT_TRUE(pass.oom_lowered.empty());
  EXPECT_EQ(Procs("memory"), "");
}

TEST_F(RuntimeCgroupsTest, OnlyTheHierarchiesItLeftAreMovedBackOnTheNextPass) {
  Host(kHybridMountinfo, kOutsideV1, 0);
  auto manager = RuntimeCgroups::Create(Opts());
  ASSERT_TRUE(manager.ok()) << manager.status();
  // Restarted by systemd: back in its unit's memory cgroup only.
  tree_.Write(pid_dir_ + "/cgroup",
              "12:memory:/system.slice/docker.service\n5:cpuset:/runtime/docker\n3:cpu,cpuacct:/runtime/docker\n");
  const Pass pass = (*manager)->EnsureOnce();
  EXPECT_EQ(pass.moved, std::vector<int>{::getpid()});
  const std::string pid_line = std::to_string(::getpid()) + "\n";
  EXPECT_EQ(Procs("memory"), pid_line + pid_line);
  EXPECT_EQ(Procs("cpu,cpuacct"), pid_line);
}

TEST_F(RuntimeCgroupsTest, OomScoreIsClampedToWhatTheHostPermitsAndNeverRaised) {
  Host(kHybridMountinfo, kOutsideV1, 500);
  auto manager = RuntimeCgroups::Create(Opts(/*oom_floor=*/0));  // no CAP_SYS_RESOURCE
  ASSERT_TRUE(manager.ok()) << manager.status();
  EXPECT_EQ(OomScore(), "0\n");

  tree_.Write(pid_dir_ + "/oom_score_adj", "-500\n");  // set by someone who could
  EXPECT_TRUE((*manager)->EnsureOnce().oom_lowered.empty());
  EXPECT_EQ(OomScore(), "-500\n");
}

TEST_F(RuntimeCgroupsTest, CgroupV2) {
  Host("41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n",
       "0::/system.slice/docker.service\n", 0);
  auto manager = RuntimeCgroups::Create(Opts());
  ASSERT_TRUE(manager.ok()) << manager.status();
  EXPECT_EQ(Procs("unified"), std::to_string(::getpid()) + "\n");
  EXPECT_EQ((*manager)->Directories(), std::vector<std::string>{tree_.Path("sys/fs/cgroup/unified/runtime/docker")});
  tree_.Write(pid_dir_ + "/cgroup", "0::/runtime/docker\n");
  EXPECT_TRUE((*manager)->EnsureOnce().moved.empty());
}

TEST_F(RuntimeCgroupsTest, BadPathsAreInvalidArgumentsAndCreateNothing) {
  Host(kHybridMountinfo, kOutsideV1, 0);
  for (const char* path : {"runtime", "/runtime/../etc", "/", ""}) {
    Options o = Opts();
    o.cgroup = path;
    auto manager = RuntimeCgroups::Create(o);
    EXPECT_EQ(manager.status().code(), absl::StatusCode::kInvalidArgument) << path;
  }
  EXPECT_FALSE(fs::exists(tree_.Path("sys/fs/cgroup/memory/runtime")));
  EXPECT_EQ(OomScore(), "0\n");
}

TEST_F(RuntimeCgroupsTest, NoDaemonAnsweringIsNotAnError) {
  Host(kHybridMountinfo, kOutsideV1, 0);
  Options o = Opts();
  o.daemon_sockets = {tree_.Path("no-such.sock")};
  auto manager = RuntimeCgroups::Create(o);
  ASSERT_TRUE(manager.ok()) << manager.status();
  EXPECT_TRUE((*manager)->EnsureOnce().found.empty());
  EXPECT_TRUE(fs::exists(tree_.Path("sys/fs/cgroup/memory/runtime/docker")));
}

TEST_F(RuntimeCgroupsTest, StartRechecksPeriodicallyUntilStopped) {
  Host(kHybridMountinfo, kOutsideV1, 0);
  Options o = Opts();
  o.period = absl::Milliseconds(20);
  auto manager = RuntimeCgroups::Start(o);
  ASSERT_TRUE(manager.ok()) << manager.status();
  const std::string pid_line = std::to_string(::getpid()) + "\n";
  // /proc keeps saying "outside", so each pass moves it again.
  for (int i = 0; i < 250 && Procs("memory").size() < 3 * pid_line.size(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GE(Procs("memory").size(), 3 * pid_line.size());
  (*manager)->Stop();
  const std::string after_stop = Procs("memory");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(Procs("memory"), after_stop);
}

}  // namespace
}  // namespace shim::runtime_cgroups
