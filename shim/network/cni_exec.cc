#include "shim/network/cni_exec.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "shim/network/cni_config.h"

extern char** environ;

namespace network {
namespace {

class UniqueFd {
 public:
  UniqueFd() = default;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }
  int get() const { return fd_; }
  void Reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

std::string ErrnoText(int err) { return std::generic_category().message(err); }

// The child's ends are dup2'ed onto 0, 1 and 2; none of them may already be one of
// those numbers (a daemon started with closed stdio), or one dup2 would clobber another.
int AboveStdio(int fd) {
  if (fd < 0 || fd > 2) return fd;
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  ::close(fd);
  return moved;
}

absl::Status MakePipe(UniqueFd* read_end, UniqueFd* write_end, bool socket) {
  int fds[2];
  int rc = socket ? socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) : pipe2(fds, O_CLOEXEC);
  if (rc != 0) return absl::InternalError(absl::StrCat("cannot create a pipe for a CNI plugin: ", ErrnoText(errno)));
  read_end->Reset(AboveStdio(fds[0]));
  write_end->Reset(AboveStdio(fds[1]));
  if (read_end->get() < 0 || write_end->get() < 0)
    return absl::InternalError(absl::StrCat("cannot create a pipe for a CNI plugin: ", ErrnoText(errno)));
  return absl::OkStatus();
}

std::vector<std::string> PluginEnvironment(const PluginRequest& req, const std::string& cni_path) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e)
    if (!absl::StartsWith(*e, "CNI_")) env.emplace_back(*e);
  env.push_back("CNI_COMMAND=" + req.command);
  env.push_back("CNI_CONTAINERID=" + req.container_id);
  env.push_back("CNI_NETNS=" + req.netns);
  env.push_back("CNI_IFNAME=" + req.ifname);
  env.push_back("CNI_ARGS=" + req.cni_args);
  env.push_back("CNI_PATH=" + cni_path);
  return env;
}

// A started plugin; killed (with its process group) and reaped unless Wait() reaped it.
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0) Kill();
  }
  void Kill() {
    ::kill(-pid_, SIGKILL);  // the plugin's group: delegated IPAM plugins, iptables
    int status;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  // Reaps the child if it has exited; true then, with its wait status.
  bool TryReap(int* status) {
    pid_t r;
    do r = waitpid(pid_, status, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == 0) return false;
    if (r < 0) *status = -1;  // reaped by someone else: the exit status is lost
    pid_ = -1;
    return true;
  }

 private:
  pid_t pid_;
};

// Reads what is available; false at EOF or on an error.
bool Drain(int fd, std::string* out) {
  constexpr size_t kMaxOutput = 16 << 20;  // a plugin result is a few KiB
  char buf[16384];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out->append(buf, std::min(static_cast<size_t>(n), kMaxOutput - std::min(kMaxOutput, out->size())));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

std::string DescribeWaitStatus(int status) {
  if (status == -1) return "exit status unknown (the process was reaped elsewhere)";
  if (WIFSIGNALED(status)) return absl::StrCat("killed by signal ", WTERMSIG(status));
  return absl::StrCat("exit status ", WEXITSTATUS(status));
}

}  // namespace

absl::StatusOr<std::string> ProcessPluginExecutor::FindPlugin(const std::string& type) const {
  std::string not_executable;
  for (const std::string& dir : bin_dirs_) {
    std::string path = absl::StrCat(dir, "/", type);
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (::access(path.c_str(), X_OK) == 0) return path;
    not_executable = path;
  }
  if (bin_dirs_.empty())
    return absl::FailedPreconditionError(absl::StrCat("CNI plugin ", type, " not found: no CNI bin dir is configured"));
  std::string message = absl::StrCat("CNI plugin ", type, " not found in ", absl::StrJoin(bin_dirs_, ":"));
  if (!not_executable.empty()) absl::StrAppend(&message, " (", not_executable, " is not executable)");
  return absl::FailedPreconditionError(message);
}

absl::StatusOr<std::string> ProcessPluginExecutor::Exec(const common::Context& ctx, const std::string& type,
                                                        const PluginRequest& req, const std::string& stdin_config) {
  const std::string what = absl::StrCat("CNI plugin ", type, " (", req.command, ")");
  if (ctx.Cancelled()) return absl::CancelledError(absl::StrCat(what, " not run: the request was cancelled"));
  if (ctx.Expired()) return absl::DeadlineExceededError(absl::StrCat(what, " not run: the deadline has passed"));
  auto path = FindPlugin(type);
  if (!path.ok()) return path.status();

  // stdin is a socket so that writing to a plugin that exits without reading its
  // config fails with EPIPE (MSG_NOSIGNAL) instead of raising SIGPIPE in the daemon.
  UniqueFd in_child, in_parent, out_parent, out_child, err_parent, err_child;
  if (absl::Status s = MakePipe(&in_child, &in_parent, /*socket=*/true); !s.ok()) return s;
  if (absl::Status s = MakePipe(&out_parent, &out_child, false); !s.ok()) return s;
  if (absl::Status s = MakePipe(&err_parent, &err_child, false); !s.ok()) return s;

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_child.get(), 0);
  posix_spawn_file_actions_adddup2(&actions, out_child.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, err_child.get(), 2);
  // Fds the daemon opened without O_CLOEXEC must not leak into plugins.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

  std::vector<std::string> env = PluginEnvironment(req, absl::StrJoin(bin_dirs_, ":"));
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  char* argv[] = {path->data(), nullptr};

  const absl::Time start = absl::Now();
  pid_t pid;
  int rc = posix_spawn(&pid, path->c_str(), &actions, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return absl::FailedPreconditionError(absl::StrCat("cannot run CNI plugin ", *path, ": ", ErrnoText(rc)));
  Child child(pid);
  in_child.Reset();
  out_child.Reset();
  err_child.Reset();
  for (int fd : {in_parent.get(), out_parent.get(), err_parent.get()})
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);

  std::string out, err;
  size_t written = 0;
  if (stdin_config.empty()) in_parent.Reset();
  int status = 0;
  bool reaped = false;
  while (out_parent.get() >= 0 || err_parent.get() >= 0) {
    if (ctx.Cancelled()) {
      child.Kill();
      return absl::CancelledError(absl::StrCat(what, " was killed: the request was cancelled"));
    }
    absl::Duration left = ctx.deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      child.Kill();
      return absl::DeadlineExceededError(absl::StrCat(what, " did not finish before the deadline and was killed"));
    }
    // Wake up now and then to notice cancellation, and a plugin that exited while
    // something it started still holds the pipes open.
    int timeout_ms = static_cast<int>(std::min(absl::ToInt64Milliseconds(left) + 1, int64_t{100}));
    pollfd fds[3] = {{in_parent.get(), POLLOUT, 0}, {out_parent.get(), POLLIN, 0}, {err_parent.get(), POLLIN, 0}};
    int n = ::poll(fds, 3, timeout_ms);
    if (n < 0 && errno != EINTR) {
      child.Kill();
      return absl::InternalError(absl::StrCat("waiting for ", what, ": poll: ", ErrnoText(errno)));
    }
    if (n == 0 && child.TryReap(&status)) {
      reaped = true;
      Drain(out_parent.get(), &out);
      Drain(err_parent.get(), &err);
      break;
    }
    if (n <= 0) continue;
    if (fds[0].revents & POLLOUT) {
      ssize_t w = ::send(in_parent.get(), stdin_config.data() + written, stdin_config.size() - written,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w > 0) written += static_cast<size_t>(w);
      // Done, or the plugin stopped reading: either way it sees EOF now.
      if (written == stdin_config.size() || (w < 0 && errno != EAGAIN && errno != EINTR)) in_parent.Reset();
    } else if (fds[0].revents & (POLLERR | POLLHUP)) {
      in_parent.Reset();
    }
    if ((fds[1].revents & (POLLIN | POLLHUP | POLLERR)) && !Drain(out_parent.get(), &out)) out_parent.Reset();
    if ((fds[2].revents & (POLLIN | POLLHUP | POLLERR)) && !Drain(err_parent.get(), &err)) err_parent.Reset();
  }
  // Both pipes are closed: the plugin has exited or is about to.
  for (absl::Duration pause = absl::Milliseconds(1); !reaped; pause = std::min(pause * 2, absl::Milliseconds(50))) {
    if ((reaped = child.TryReap(&status))) break;
    if (ctx.Expired() || ctx.Cancelled()) {
      child.Kill();
      return absl::Status(ctx.Cancelled() ? absl::StatusCode::kCancelled : absl::StatusCode::kDeadlineExceeded,
                          absl::StrCat(what, " closed its output but did not exit and was killed"));
    }
    absl::SleepFor(pause);
  }

  LOG_DEBUG << what << " container=" << req.container_id << " took " << absl::Now() - start << " "
            << DescribeWaitStatus(status) << (err.empty() ? "" : " stderr: ") << err;
  if (status != 0) return PluginFailure(type, req.command, DescribeWaitStatus(status), out, err);
  return out;
}

}  // namespace network
