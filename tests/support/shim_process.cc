#include "tests/support/shim_process.h"

#include <fcntl.h>
#include <sched.h>
#include <net/if.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/support/socket_probe.h"

extern char** environ;

namespace testsupport {

namespace {

// Loopback up in a new network namespace (it starts down), so that the shim's
// --metrics-bind-addr on 127.0.0.1 answers there. Async-signal-safe calls only.
void LoopbackUp() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, "lo", 3);
  if (::ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) {
    ifr.ifr_flags |= IFF_UP;
    ::ioctl(fd, SIOCSIFFLAGS, &ifr);
  }
  ::close(fd);
}

// A waitpid status as a shell reports it: the exit code, or 128 + the signal.
int ExitCode(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

}  // namespace

absl::StatusOr<std::unique_ptr<NetworkNamespace>> NetworkNamespace::Create() {
  // A network namespace belongs to a thread: a short-lived one makes it and opens it, so
  // that this process's other threads stay where they are.
  int fd = -1, error = 0;
  std::thread([&] {
    if (::unshare(CLONE_NEWNET) != 0) {
      error = errno;
      return;
    }
    LoopbackUp();
    fd = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (fd < 0) error = errno;
  }).join();
  if (fd < 0)
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create a network namespace (run as root): ", std::strerror(error)));
  return std::unique_ptr<NetworkNamespace>(new NetworkNamespace(fd));
}

NetworkNamespace::~NetworkNamespace() { ::close(fd_); }

absl::StatusOr<std::unique_ptr<ShimProcess>> ShimProcess::Start(const ShimLaunch& launch) {
  // Everything the child needs is prepared before fork: between fork and exec a
  // multi-threaded parent's child may only make async-signal-safe calls.
  std::vector<std::string> args = launch.args;
  args.insert(args.begin(), launch.binary);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string out = launch.output_dir + "/stdout", err = launch.output_dir + "/stderr";
  const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out_fd < 0 || err_fd < 0) {
    if (out_fd >= 0) ::close(out_fd);
    if (err_fd >= 0) ::close(err_fd);
    return absl::InternalError(absl::StrCat("cannot create ", out, " or ", err, ": ", std::strerror(errno)));
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (launch.netns_fd >= 0) {
      if (::setns(launch.netns_fd, CLONE_NEWNET) != 0) _exit(126);
    } else if (launch.private_netns) {
      if (::unshare(CLONE_NEWNET) != 0) _exit(126);
      LoopbackUp();
    }
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    ::execve(argv[0], argv.data(), environ);
    _exit(127);
  }
  const int fork_errno = errno;
  ::close(out_fd);
  ::close(err_fd);
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(fork_errno)));
  std::unique_ptr<ShimProcess> shim(new ShimProcess(pid, launch.output_dir));

  const absl::Time until = absl::Now() + launch.ready_timeout;
  for (;;) {
    if (AcceptsConnections(launch.socket_path)) return shim;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      shim->pid_ = -1;
      const int code = ExitCode(status);
      return absl::FailedPreconditionError(absl::StrCat(
          launch.binary, " exited with ", code,
          code == 126 ? " (unshare or setns of its network namespace failed: run as root)" : "", " before serving; stderr: ",
          shim->Stderr().substr(shim->Stderr().size() > 2000 ? shim->Stderr().size() - 2000 : 0)));
    }
    if (absl::Now() > until)
      return absl::DeadlineExceededError(
          absl::StrCat(launch.binary, " did not create ", launch.socket_path, " within ", absl::FormatDuration(launch.ready_timeout)));
    absl::SleepFor(absl::Milliseconds(20));
  }
}

ShimProcess::~ShimProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

absl::StatusOr<int> ShimProcess::WaitExit(absl::Duration timeout) {
  const absl::Time until = absl::Now() + timeout;
  while (pid_ > 0) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      exit_code_ = ExitCode(status);
      return *exit_code_;
    }
    if (absl::Now() > until) return absl::DeadlineExceededError(absl::StrCat("still running after ", absl::FormatDuration(timeout)));
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::FailedPreconditionError("not running");
}

std::optional<int> ShimProcess::Exited() {
  int status = 0;
  if (pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) {
    pid_ = -1;
    exit_code_ = ExitCode(status);
  }
  return exit_code_;
}

absl::StatusOr<int> ShimProcess::Stop(absl::Duration grace) {
  if (pid_ <= 0) return absl::FailedPreconditionError("not running");
  ::kill(pid_, SIGTERM);
  return WaitExit(grace);
}

std::string ShimProcess::Stderr() const {
  std::ifstream in(output_dir_ + "/stderr");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace testsupport
