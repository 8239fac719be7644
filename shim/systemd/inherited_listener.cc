#include "shim/systemd/inherited_listener.h"

#include <grpcpp/server_posix.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace shim::systemd {

absl::StatusOr<std::unique_ptr<InheritedListener>> InheritedListener::Start(common::UniqueFd listen_fd,
                                                                            grpc::Server& server) {
  common::UniqueFd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake) return absl::ErrnoToStatus(errno, "eventfd");
  std::unique_ptr<InheritedListener> listener(new InheritedListener(std::move(listen_fd), std::move(wake), server));
  listener->thread_ = std::thread([l = listener.get()] { l->AcceptLoop(); });
  return listener;
}

void InheritedListener::AcceptLoop() {
  pollfd fds[2] = {{listen_fd_.get(), POLLIN, 0}, {wake_fd_.get(), POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      LOG_ERROR << "socket activation: poll: " << std::strerror(errno);
      return;
    }
    if (fds[1].revents != 0) return;
    const int conn = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (conn >= 0) {
      grpc::AddInsecureChannelFromFd(&server_, conn);  // takes ownership
      continue;
    }
    if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) continue;
    // Out of fds (EMFILE, ENFILE) or memory: the client stays queued; retry shortly
    // instead of spinning on a socket that stays readable.
    LOG_WARN << "socket activation: accept: " << std::strerror(errno);
    pollfd wake = fds[1];
    if (::poll(&wake, 1, 100) > 0) return;
  }
}

void InheritedListener::Stop() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  if (::write(wake_fd_.get(), &one, sizeof one) < 0) LOG_WARN << "socket activation: wake: " << std::strerror(errno);
  thread_.join();
}

}  // namespace shim::systemd
