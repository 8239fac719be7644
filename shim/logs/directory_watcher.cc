#include "shim/logs/directory_watcher.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace shim::logs {
namespace asio = boost::asio;

namespace {
constexpr uint32_t kChanges = IN_MODIFY | IN_CREATE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE | IN_CLOSE_WRITE;
}

DirectoryWatcher::DirectoryWatcher(asio::io_context& ioc) : pause_(ioc) {
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    LOG_WARN << "no inotify instance (" << std::strerror(errno)
             << "; fs.inotify.max_user_instances): json logs are looked at on a timer";
    return;
  }
  inotify_ = std::make_unique<asio::posix::stream_descriptor>(ioc, fd);
  AwaitEvents();
}

DirectoryWatcher::~DirectoryWatcher() = default;

absl::StatusOr<std::unique_ptr<DirectoryWatcher::Watch>> DirectoryWatcher::Add(const std::string& dir,
                                                                               std::function<void()> changed) {
  if (!inotify_) return absl::UnavailableError("no inotify instance");
  const int wd = ::inotify_add_watch(inotify_->native_handle(), dir.c_str(), kChanges);
  if (wd < 0) {
    const int error = errno;
    return absl::ErrnoToStatus(
        error, absl::StrCat("watch ", dir, error == ENOSPC ? " (fs.inotify.max_user_watches reached)" : ""));
  }
  Directory& directory = watchers_[wd];
  directory.removed = false;
  const uint64_t token = next_token_++;
  directory.callbacks.emplace(token, std::move(changed));
  return std::unique_ptr<Watch>(new Watch(*this, wd, token));
}

void DirectoryWatcher::Remove(int wd, uint64_t token) {
  auto it = watchers_.find(wd);
  if (it == watchers_.end()) return;
  it->second.callbacks.erase(token);
  if (!it->second.callbacks.empty()) return;
  if (!it->second.removed) ::inotify_rm_watch(inotify_->native_handle(), wd);
  watchers_.erase(it);
}

void DirectoryWatcher::AwaitEvents() {
  inotify_->async_wait(asio::posix::stream_descriptor::wait_read, [this](boost::system::error_code ec) {
    if (ec == asio::error::operation_aborted) return;
    if (ec) {
      LOG_WARN << "inotify: " << ec.message() << "; json logs are looked at on a timer from now on";
      return;
    }
    ReadEvents();
    pause_.expires_after(kCoalesce);
    pause_.async_wait([this](boost::system::error_code paused) {
      if (!paused) AwaitEvents();
    });
  });
}

void DirectoryWatcher::ReadEvents() {
  alignas(struct inotify_event) char events[64 << 10];
  std::set<int> changed;
  bool overflow = false;  // events were lost: every directory may have changed
  for (;;) {
    const ssize_t n = ::read(inotify_->native_handle(), events, sizeof events);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EAGAIN: all read
    for (ssize_t at = 0; at < n;) {
      const auto* event = reinterpret_cast<const struct inotify_event*>(events + at);
      at += static_cast<ssize_t>(sizeof(struct inotify_event) + event->len);
      if (event->mask & IN_Q_OVERFLOW) {
        overflow = true;
      } else if (event->mask & IN_IGNORED) {
        if (auto it = watchers_.find(event->wd); it != watchers_.end()) it->second.removed = true;
      } else {
        changed.insert(event->wd);
      }
    }
  }
  // A callback may add or drop watches: call copies.
  std::vector<std::function<void()>> calls;
  const auto add_calls = [&calls](const Directory& directory) {
    for (const auto& [token, callback] : directory.callbacks) calls.push_back(callback);
  };
  if (overflow) {
    for (const auto& [wd, directory] : watchers_) add_calls(directory);
  } else {
    for (int wd : changed) {
      if (auto it = watchers_.find(wd); it != watchers_.end()) add_calls(it->second);
    }
  }
  for (const auto& call : calls) call();
}

}  // namespace shim::logs
