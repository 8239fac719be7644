#include "shim/systemd/notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "common/log.h"
#include "common/unique_fd.h"

namespace shim::systemd {

Notifier Notifier::FromEnvironment() {
  const char* path = std::getenv("NOTIFY_SOCKET");
  return Notifier(path ? path : "");
}

void Notifier::Notify(std::string_view state) const {
  if (!enabled()) return;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path_.size() >= sizeof addr.sun_path) {
    LOG_WARN << "NOTIFY_SOCKET is too long for a unix socket address";
    return;
  }
  std::memcpy(addr.sun_path, socket_path_.data(), socket_path_.size());
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';  // abstract namespace
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket_path_.size());
  common::UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd || ::sendto(fd.get(), state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&addr), len) < 0)
    LOG_WARN << "cannot notify systemd (" << state << ") at " << socket_path_ << ": " << std::strerror(errno);
}

std::optional<std::chrono::microseconds> WatchdogInterval() {
  const char* usec = std::getenv("WATCHDOG_USEC");
  if (usec == nullptr) return std::nullopt;
  if (const char* pid = std::getenv("WATCHDOG_PID")) {
    int watched = 0;
    if (!absl::SimpleAtoi(pid, &watched) || watched != ::getpid()) return std::nullopt;  // meant for another process
  }
  uint64_t value = 0;
  if (!absl::SimpleAtoi(usec, &value) || value == 0) {
    LOG_WARN << "ignoring malformed WATCHDOG_USEC=" << usec;
    return std::nullopt;
  }
  return std::chrono::microseconds(value);
}

Watchdog::Watchdog(const Notifier& notifier, std::chrono::microseconds interval) : notifier_(notifier) {
  thread_ = std::thread([this, period = interval / 2] { Run(period); });
}

void Watchdog::Run(std::chrono::microseconds period) {
  std::unique_lock lock(mu_);
  do {
    notifier_.Notify("WATCHDOG=1");
  } while (!cv_.wait_for(lock, period, [this] { return stopping_; }));
}

void Watchdog::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace shim::systemd
