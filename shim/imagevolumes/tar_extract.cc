#include "shim/imagevolumes/tar_extract.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

extern char** environ;

namespace shim::imagevolumes {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

}  // namespace

absl::StatusOr<TarExtractor> TarExtractor::Start(const std::string& directory) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return absl::InternalError(absl::StrCat("socketpair for tar: ", ErrnoText(errno)));
  }
  common::UniqueFd ours(sv[0]), theirs(sv[1]);
  common::UniqueFd errors(::memfd_create("tar-stderr", MFD_CLOEXEC));
  if (!errors) return absl::InternalError(absl::StrCat("memfd for tar's errors: ", ErrnoText(errno)));

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, theirs.get(), 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, errors.get(), 2);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::string dir = directory;
  // --same-owner and --same-permissions (-p) are tar's defaults for root; spelled out
  // because an image tree with other owners or modes would be wrong.
  const char* argv[] = {"tar", "-x", "-f", "-", "--numeric-owner", "--same-owner", "-p", "-C", dir.c_str(), nullptr};
  pid_t pid;
  const int rc = ::posix_spawnp(&pid, "tar", &actions, &attr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return absl::FailedPreconditionError(absl::StrCat("cannot run tar: ", ErrnoText(rc)));
  return TarExtractor(pid, std::move(ours), std::move(errors));
}

TarExtractor::TarExtractor(pid_t pid, common::UniqueFd input, common::UniqueFd errors)
    : pid_(pid), input_(std::move(input)), errors_(std::move(errors)) {}

TarExtractor::TarExtractor(TarExtractor&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), input_(std::move(other.input_)), errors_(std::move(other.errors_)) {}

TarExtractor::~TarExtractor() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

absl::Status TarExtractor::Write(std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(input_.get(), data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(absl::StrCat("tar stopped reading the image's files: ", ErrnoText(errno)));
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status TarExtractor::Finish() {
  input_.Reset();
  return Wait();
}

absl::Status TarExtractor::Wait() {
  int status = 0;
  pid_t r;
  while ((r = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  if (r < 0) return absl::InternalError(absl::StrCat("waiting for tar: ", ErrnoText(errno)));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  std::string message;
  char buf[4096];
  ssize_t n;
  while ((n = ::pread(errors_.get(), buf, sizeof buf, static_cast<off_t>(message.size()))) > 0 &&
         message.size() < 16384) {
    message.append(buf, static_cast<size_t>(n));
  }
  const std::string how =
      WIFSIGNALED(status) ? absl::StrCat("killed by signal ", WTERMSIG(status)) : absl::StrCat("exit status ", WEXITSTATUS(status));
  return absl::InternalError(
      absl::StrCat("tar failed to unpack the image's files (", how, "): ", absl::StripAsciiWhitespace(message)));
}

}  // namespace shim::imagevolumes
