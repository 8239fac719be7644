#include "shim/runtime_cgroups/runtime_cgroups.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/log.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "shim/stats/kernel_file.h"

namespace shim::runtime_cgroups {
namespace {

absl::Status WriteFile(const std::string& path, const std::string& text) {
  // O_CREAT only matters in fake trees: cgroupfs makes its files with the directory.
  common::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!fd) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    return absl::ErrnoToStatus(errno, absl::StrCat("write ", path));
  return absl::OkStatus();
}

// Makes `dir` and its missing parents below `point`. A new v1 cpuset cgroup has no CPUs
// and memory nodes and refuses processes until given its parent's.
absl::Status MakeCgroupDirs(const std::string& point, const std::string& cgroup, bool cpuset) {
  std::string dir = point;
  for (absl::string_view part : absl::StrSplit(cgroup, '/', absl::SkipEmpty())) {
    const std::string parent = dir;
    absl::StrAppend(&dir, "/", part);
    if (::mkdir(dir.c_str(), 0755) != 0) {
      if (errno == EEXIST) continue;
      return absl::ErrnoToStatus(errno, absl::StrCat("mkdir ", dir));
    }
    if (!cpuset) continue;
    for (const char* file : {"cpuset.cpus", "cpuset.mems"}) {
      absl::StatusOr<std::string> value = stats::ReadKernelFile(absl::StrCat(parent, "/", file));
      if (!value.ok()) return value.status();
      RETURN_IF_ERROR(WriteFile(absl::StrCat(dir, "/", file), *value));
    }
  }
  return absl::OkStatus();
}

// The hierarchy's path for `pid` in /proc/<pid>/cgroup ("4:memory:/docker", "0::/x").
std::optional<std::string> PathIn(absl::string_view proc_cgroup, const stats::CgroupMount& mount) {
  for (absl::string_view line : absl::StrSplit(proc_cgroup, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> fields = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (fields.size() != 3) continue;
    if (mount.v2 ? fields[0] == "0" && fields[1].empty()
                 : absl::c_linear_search(absl::StrSplit(fields[1], ','), mount.controllers.front()))
      return std::string(fields[2]);
  }
  return std::nullopt;
}

}  // namespace

absl::Status ValidateCgroupPath(const std::string& path) {
  if (path.empty() || path[0] != '/')
    return absl::InvalidArgumentError(
        absl::StrCat("\"", path, "\" must be an absolute cgroup path such as /docker-runtime"));
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part == "." || part == "..")
      return absl::InvalidArgumentError(absl::StrCat("\"", path, "\" must not contain . or .."));
  }
  if (path == "/") return absl::InvalidArgumentError("\"/\" is the root cgroup; name a cgroup of its own");
  return absl::OkStatus();
}

Options DefaultOptions(std::string cgroup, std::string docker_socket_path) {
  Options options;
  options.cgroup = std::move(cgroup);
  options.daemon_sockets = {std::move(docker_socket_path), "/run/containerd/containerd.sock",
                            "/var/run/docker/containerd/containerd.sock"};
  options.pid_files = {"/var/run/docker.pid", "/run/containerd/containerd.pid"};
  return options;
}

std::optional<int> ListenerPid(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return std::nullopt;
  std::memcpy(addr.sun_path, path.data(), path.size());
  common::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd || ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return std::nullopt;
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid <= 0) return std::nullopt;
  return cred.pid;
}

std::optional<int> ReadPidFile(const std::string& path) {
  absl::StatusOr<std::string> text = stats::ReadKernelFile(path);
  int pid = 0;
  if (!text.ok() || !absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &pid) || pid <= 0) return std::nullopt;
  return pid;
}

absl::StatusOr<std::unique_ptr<RuntimeCgroups>> RuntimeCgroups::Create(Options options) {
  RETURN_IF_ERROR(ValidateCgroupPath(options.cgroup));
  ASSIGN_OR_RETURN(std::vector<stats::CgroupMount> mounts,
                   stats::ListCgroupMounts(options.proc_root, options.path_prefix));
  // As runc: on hybrid hosts the v1 hierarchies hold the controllers, cgroup2 none.
  const bool v1 = absl::c_any_of(mounts, [](const auto& m) { return !m.v2; });
  std::vector<Hierarchy> hierarchies;
  for (stats::CgroupMount& mount : mounts) {
    if (mount.v2 == v1) continue;
    if (v1 && absl::c_all_of(mount.controllers, [](const std::string& c) { return absl::StartsWith(c, "name="); }))
      continue;
    // A hierarchy mounted twice (a bind mount of a subtree) is moved into once.
    if (absl::c_any_of(hierarchies, [&](const Hierarchy& h) { return h.mount.controllers == mount.controllers; }))
      continue;
    const bool cpuset = absl::c_linear_search(mount.controllers, "cpuset");
    RETURN_IF_ERROR(MakeCgroupDirs(mount.point, options.cgroup, cpuset));
    Hierarchy h;
    h.dir = mount.point + options.cgroup;
    h.expected = mount.root == "/" ? options.cgroup : mount.root + options.cgroup;
    h.mount = std::move(mount);
    hierarchies.push_back(std::move(h));
  }
  if (hierarchies.empty())
    return absl::FailedPreconditionError(absl::StrCat("no cgroup hierarchy in ", options.proc_root, "/self/mountinfo"));
  std::unique_ptr<RuntimeCgroups> manager(new RuntimeCgroups(std::move(options), std::move(hierarchies)));
  manager->EnsureOnce();
  return manager;
}

absl::StatusOr<std::unique_ptr<RuntimeCgroups>> RuntimeCgroups::Start(Options options) {
  ASSIGN_OR_RETURN(std::unique_ptr<RuntimeCgroups> manager, Create(std::move(options)));
  manager->thread_ = std::thread([m = manager.get()] { m->Loop(); });
  return manager;
}

RuntimeCgroups::RuntimeCgroups(Options options, std::vector<Hierarchy> hierarchies)
    : options_(std::move(options)), hierarchies_(std::move(hierarchies)), oom_clamp_(options_.oom_floor) {}

std::vector<std::string> RuntimeCgroups::Directories() const {
  std::vector<std::string> dirs;
  for (const Hierarchy& h : hierarchies_) dirs.push_back(h.dir);
  return dirs;
}

std::vector<int> RuntimeCgroups::FindDaemons() const {
  std::vector<int> pids;
  auto add = [&pids](std::optional<int> pid) {
    if (pid && !absl::c_linear_search(pids, *pid)) pids.push_back(*pid);
  };
  for (const std::string& socket : options_.daemon_sockets) {
    std::optional<int> pid = ListenerPid(socket);
    if (pid == 1) {
      for (const std::string& file : options_.pid_files) add(ReadPidFile(file));
    } else {
      add(pid);
    }
  }
  return pids;
}

bool RuntimeCgroups::MoveInto(int pid) {
  absl::StatusOr<std::string> proc_cgroup =
      stats::ReadKernelFile(absl::StrCat(options_.proc_root, "/", pid, "/cgroup"));
  if (!proc_cgroup.ok()) return false;  // gone since it was found
  bool moved = false;
  for (const Hierarchy& h : hierarchies_) {
    if (PathIn(*proc_cgroup, h.mount) == h.expected) continue;
    if (absl::Status s = WriteFile(h.dir + "/cgroup.procs", absl::StrCat(pid, "\n")); !s.ok()) {
      if (!std::exchange(move_failure_logged_, true))
        LOG_WARN << "--runtime-cgroups: cannot move pid " << pid << " into " << h.dir << ": " << s.message();
      continue;
    }
    moved = true;
  }
  if (moved) LOG_INFO << "--runtime-cgroups: moved pid " << pid << " into " << options_.cgroup;
  return moved;
}

bool RuntimeCgroups::LowerOomScore(int pid) {
  const std::string path = absl::StrCat(options_.proc_root, "/", pid, "/oom_score_adj");
  absl::StatusOr<std::string> text = stats::ReadKernelFile(path);
  int current = 0;
  if (!text.ok() || !absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &current)) return false;
  // Logs once when the host does not permit the value; never raises a lower score.
  const int wanted = oom_clamp_.Clamp(options_.oom_score_adj);
  if (current <= wanted) return false;
  // Not O_APPEND: /proc takes the number at offset 0 (and so does a fake tree's file).
  common::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  const std::string value = absl::StrCat(wanted, "\n");
  if (!fd || ::write(fd.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size())) {
    if (!std::exchange(oom_failure_logged_, true))
      LOG_WARN << "--runtime-cgroups: cannot set oom_score_adj " << wanted << " for pid " << pid << ": "
               << std::strerror(errno);
    return false;
  }
  return true;
}

Pass RuntimeCgroups::EnsureOnce() {
  Pass pass;
  pass.found = FindDaemons();
  for (int pid : pass.found) {
    if (MoveInto(pid)) pass.moved.push_back(pid);
    if (LowerOomScore(pid)) pass.oom_lowered.push_back(pid);
  }
  return pass;
}

void RuntimeCgroups::Loop() {
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, absl::ToChronoMilliseconds(options_.period), [this] { return stopping_; })) {
    lock.unlock();
    EnsureOnce();
    lock.lock();
  }
}

void RuntimeCgroups::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace shim::runtime_cgroups
