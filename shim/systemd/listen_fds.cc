#include "shim/systemd/listen_fds.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace shim::systemd {
namespace {

constexpr int kFirstFd = 3;  // SD_LISTEN_FDS_START

bool IsListeningStreamSocket(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  int type = 0, listening = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) return false;
  len = sizeof listening;
  return ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening != 0;
}

}  // namespace

absl::StatusOr<std::vector<common::UniqueFd>> TakeListenFds() {
  const char* pid_text = std::getenv("LISTEN_PID");
  const char* fds_text = std::getenv("LISTEN_FDS");
  int pid = 0, count = 0;
  const bool ours = pid_text && fds_text && absl::SimpleAtoi(pid_text, &pid) && pid == ::getpid() &&
                    absl::SimpleAtoi(fds_text, &count) && count > 0;
  ::unsetenv("LISTEN_PID");
  ::unsetenv("LISTEN_FDS");
  ::unsetenv("LISTEN_FDNAMES");
  std::vector<common::UniqueFd> fds;
  if (!ours) return fds;
  for (int fd = kFirstFd; fd < kFirstFd + count; ++fd) fds.emplace_back(fd);
  for (const common::UniqueFd& fd : fds) {
    if (!IsListeningStreamSocket(fd.get()))
      return absl::FailedPreconditionError(absl::StrCat("socket activation: fd ", fd.get(), " (LISTEN_FDS=", count,
                                                        ") is not a listening stream socket"));
    ::fcntl(fd.get(), F_SETFD, FD_CLOEXEC);
  }
  return fds;
}

}  // namespace shim::systemd
