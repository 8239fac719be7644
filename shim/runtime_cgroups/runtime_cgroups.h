#pragma once
// --runtime-cgroups: keeps dockerd and containerd in a cgroup of the operator's choice
// (the kubelet's --runtime-cgroups names the same one, to account their usage), with
// oom_score_adj -999 so that the OOM killer takes pods before the runtime.
//
// Re-checked every 5 minutes, as the in-tree dockershim did: a daemon restarted by
// systemd (or dockerd restarting its containerd) starts again in its unit's cgroup
// with the default OOM score.
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "shim/oom_score.h"
#include "shim/stats/cgroup.h"

namespace shim::runtime_cgroups {

struct Options {
  std::string cgroup;  // absolute path inside each hierarchy, e.g. "/system.slice/docker-runtime"
  // Unix sockets whose listening process is a runtime daemon (found by SO_PEERCRED).
  std::vector<std::string> daemon_sockets;
  // Read instead when a socket's listener is PID 1: systemd holds socket-activated
  // sockets (docker.socket), so the daemon is the one its pid file names.
  std::vector<std::string> pid_files;
  int oom_score_adj = -999;
  absl::Duration period = absl::Minutes(5);
  // Fake trees in tests: where /proc is, and what goes before each cgroup mount point.
  std::string proc_root = "/proc";
  std::string path_prefix;
  std::optional<int> oom_floor;  // OomScoreClamp's; probed when unset
};

// INVALID_ARGUMENT unless `cgroup` is an absolute path below the root, without . or ..
absl::Status ValidateCgroupPath(const std::string& cgroup);

// The Docker endpoint's daemon (pid file /var/run/docker.pid), containerd on its
// system socket, and the containerd that dockerd 20.10 runs itself.
Options DefaultOptions(std::string cgroup, std::string docker_socket_path);

// The pid of the process that listens on unix socket `path` (the credentials the
// kernel recorded at its listen(2)); none when nothing answers.
std::optional<int> ListenerPid(const std::string& path);
// The pid in a pid file ("1234\n"); none when missing or malformed.
std::optional<int> ReadPidFile(const std::string& path);

// What one pass found and did.
struct Pass {
  std::vector<int> found;  // runtime daemons' pids
  std::vector<int> moved;  // moved into the cgroup (in at least one hierarchy)
  std::vector<int> oom_lowered;
};

class RuntimeCgroups {
 public:
  // Checks the path (INVALID_ARGUMENT), creates the cgroup in every v1 hierarchy with
  // controllers (named ones such as name=systemd are left to systemd) or in cgroup2,
  // and runs one pass. No thread: see Start.
  static absl::StatusOr<std::unique_ptr<RuntimeCgroups>> Create(Options options);
  // Create, then a pass every `period` on its own thread until Stop.
  static absl::StatusOr<std::unique_ptr<RuntimeCgroups>> Start(Options options);
  ~RuntimeCgroups() { Stop(); }
  RuntimeCgroups(const RuntimeCgroups&) = delete;
  RuntimeCgroups& operator=(const RuntimeCgroups&) = delete;

  // Finds the daemons, moves those outside the cgroup into it, lowers their
  // oom_score_adj (to what the host permits). Failures are logged, once per kind.
  Pass EnsureOnce();
  void Stop();

  // The cgroup's directory in each hierarchy it was made in.
  std::vector<std::string> Directories() const;

 private:
  struct Hierarchy {
    stats::CgroupMount mount;
    std::string dir;       // the cgroup's directory
    std::string expected;  // its path as /proc/<pid>/cgroup shows it
  };
  RuntimeCgroups(Options options, std::vector<Hierarchy> hierarchies);
  std::vector<int> FindDaemons() const;
  bool MoveInto(int pid);
  bool LowerOomScore(int pid);
  void Loop();

  const Options options_;
  const std::vector<Hierarchy> hierarchies_;
  OomScoreClamp oom_clamp_;
  bool move_failure_logged_ = false, oom_failure_logged_ = false;  // the pass's thread only
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace shim::runtime_cgroups
