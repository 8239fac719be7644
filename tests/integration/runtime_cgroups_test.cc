// --runtime-cgroups on the host's real cgroup file system, with a stand-in daemon
// this test starts (a child listening on its own socket): the engines other tests use
// are never moved.
#include "shim/runtime_cgroups/runtime_cgroups.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/unique_fd.h"

namespace shim::runtime_cgroups {
namespace {

namespace fs = std::filesystem;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class RuntimeCgroupsHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dsops-cgroups-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    socket_ = (dir_ / "daemon.sock").string();
    cgroup_ = "/dsops-runtime-" + std::to_string(::getpid());
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, socket_.c_str());
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    daemon_ = ::fork();
    if (daemon_ == 0) {  // the stand-in daemon: only system calls until it is killed
      const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
      if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 8) != 0) ::_exit(1);
      (void)!::write(ready[1], "x", 1);
      for (;;) ::pause();
    }
    ::close(ready[1]);
    char byte;
    ASSERT_EQ(::read(ready[0], &byte, 1), 1) << "the stand-in daemon did not listen";
    ::close(ready[0]);
    std::ofstream(ProcFile("oom_score_adj")) << "500\n";  // raising is always permitted
  }
  void TearDown() override {
    if (daemon_ > 0) {
      ::kill(daemon_, SIGKILL);
      ::waitpid(daemon_, nullptr, 0);
    }
    for (const std::string& dir : dirs_) ::rmdir(dir.c_str());
    for (const std::string& dir : dirs_) ::rmdir(fs::path(dir).parent_path().c_str());
    fs::remove_all(dir_);
  }

  Options Opts() {
    Options o;
    o.cgroup = cgroup_ + "/daemons";
    o.daemon_sockets = {socket_};
    return o;
  }
  std::string ProcFile(const std::string& name) { return "/proc/" + std::to_string(daemon_) + "/" + name; }
  // The daemon's /proc/<pid>/cgroup lines that name our cgroup.
  int LinesInCgroup() {
    std::istringstream in(Read(ProcFile("cgroup")));
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line.ends_with(":" + cgroup_ + "/daemons");
    return n;
  }

  fs::path dir_;
  std::string socket_, cgroup_;
  pid_t daemon_ = -1;
  std::vector<std::string> dirs_;
};

TEST_F(RuntimeCgroupsHostTest, MovesTheDaemonIntoEveryHierarchyLowersItsOomScoreAndKeepsItThere) {
  auto manager = RuntimeCgroups::Start([&] {
    Options o = Opts();
    o.period = absl::Milliseconds(100);
    return o;
  }());
  ASSERT_TRUE(manager.ok()) << manager.status();
  dirs_ = (*manager)->Directories();
  ASSERT_FALSE(dirs_.empty());
  EXPECT_EQ(LinesInCgroup(), static_cast<int>(dirs_.size())) << Read(ProcFile("cgroup"));
  for (const std::string& dir : dirs_) {
    EXPECT_NE(Read(dir + "/cgroup.procs").find(std::to_string(daemon_)), std::string::npos) << dir;
  }
  // -999 where the host permits it; else the lowest it permits (this process's score).
  const int expected = std::max(-999, OomScoreClamp().lowest_permitted());
  EXPECT_EQ(Read(ProcFile("oom_score_adj")), std::to_string(expected) + "\n");

  // Moved out (as a restart by systemd would): the next periodic pass moves it back.
  const std::string root_procs = fs::path(dirs_.front()).parent_path().parent_path().string() + "/cgroup.procs";
  std::ofstream(root_procs) << daemon_ << "\n";
  ASSERT_LT(LinesInCgroup(), static_cast<int>(dirs_.size()));
  for (int i = 0; i < 100 && LinesInCgroup() < static_cast<int>(dirs_.size()); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(LinesInCgroup(), static_cast<int>(dirs_.size())) << Read(ProcFile("cgroup"));
  (*manager)->Stop();
  ::kill(daemon_, SIGKILL);  // empty the cgroups so that TearDown can remove them
  ::waitpid(daemon_, nullptr, 0);
  daemon_ = -1;
}

}  // namespace
}  // namespace shim::runtime_cgroups
