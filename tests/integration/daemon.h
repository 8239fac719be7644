#pragma once
// The dockershim binary as a child process, its stdout and stderr in files of a
// directory: what tests that run the real daemon share. Optionally run as systemd runs
// it: extra environment and, for socket activation, a listening socket as fd 3 with
// LISTEN_FDS=1 and LISTEN_PID=<its pid>.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/socket_probe.h"

extern char** environ;

namespace testenv {

struct Exit {
  int code = -1;
  std::string stdout_text, stderr_text;
};

inline std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class Daemon {
 public:
  Daemon(const std::filesystem::path& dir, std::vector<std::string> args, std::vector<std::string> env = {},
              int listen_fd = -1)
      : dir_(dir) {
    args.insert(args.begin(), DOCKERSHIM_BINARY);
    for (char** e = environ; *e; ++e) env.emplace_back(*e);
    // The child fills in its own pid (digits only: nothing but async-signal-safe
    // calls between fork and exec).
    if (listen_fd >= 0) {
      env.emplace_back("LISTEN_FDS=1");
      env.emplace_back("LISTEN_PID=" + std::string(20, '\0'));
    }
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    char* listen_pid = listen_fd >= 0 ? envp[envp.size() - 2] + std::strlen("LISTEN_PID=") : nullptr;
    const std::string out = (dir / "stdout").string(), err = (dir / "stderr").string();
    pid_ = ::fork();
    if (pid_ != 0) return;
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(o, 1);
    ::dup2(e, 2);
    if (listen_fd >= 0) {
      if (listen_fd == 3) {
        ::fcntl(3, F_SETFD, 0);
      } else {
        ::dup2(listen_fd, 3);  // dup2 clears close-on-exec
      }
      char digits[20];
      int n = 0;
      for (pid_t p = ::getpid(); p > 0; p /= 10) digits[n++] = static_cast<char>('0' + p % 10);
      for (int i = 0; i < n; ++i) listen_pid[i] = digits[n - 1 - i];
    }
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ~Daemon() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int sig) { ::kill(pid_, sig); }
  std::string Stderr() const { return ReadFile(dir_ / "stderr"); }

  // Waits up to `timeout` for the process to end.
  std::optional<Exit> Wait(std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
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

 private:
  std::filesystem::path dir_;
  pid_t pid_ = -1;
};

// Waits up to `timeout` for the daemon's socket to accept connections.
inline bool WaitForSocket(const std::string& path, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  for (auto waited = std::chrono::milliseconds(0); waited < timeout; waited += std::chrono::milliseconds(20)) {
    if (testsupport::AcceptsConnections(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// The daemon's socket once it is open to `gid` (mode 0660), or as it is after 2 s. The
// daemon creates it 0600 and opens it to its group right after listen().
inline struct stat SocketOnceOpenedToItsGroup(const std::string& path, gid_t gid) {
  struct stat st {};
  for (int i = 0; i < 100; ++i) {
    if (::stat(path.c_str(), &st) == 0 && st.st_gid == gid && (st.st_mode & 07777) == 0660) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return st;
}

}  // namespace testenv
