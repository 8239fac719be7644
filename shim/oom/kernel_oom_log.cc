#include "shim/oom/kernel_oom_log.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/log.h"
#include "shim/image_ref.h"

namespace shim::oom {

namespace {

// The innermost component of a cgroup path that names a Docker container (a container
// may make cgroups of its own below its scope).
std::optional<std::string> ContainerOfCgroup(absl::string_view path) {
  std::vector<absl::string_view> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    absl::string_view part = *it;
    if (absl::ConsumePrefix(&part, "docker-") && !absl::ConsumeSuffix(&part, ".scope")) continue;
    if (IsDockerId(part)) return std::string(part);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> OomKilledContainer(absl::string_view record) {
  // "<priority>,<seq>,<usec>,<flags>;<message>" then continuation lines (" KEY=value").
  const size_t semicolon = record.find(';');
  if (semicolon == absl::string_view::npos) return std::nullopt;
  absl::string_view message = record.substr(semicolon + 1);
  message = message.substr(0, message.find('\n'));

  if (absl::ConsumePrefix(&message, "oom-kill:")) {
    for (absl::string_view field : absl::StrSplit(message, ',')) {
      if (absl::ConsumePrefix(&field, "task_memcg=")) return ContainerOfCgroup(field);
    }
    return std::nullopt;
  }
  if (absl::ConsumePrefix(&message, "Task in ")) {
    const size_t end = message.find(" killed as a result of limit of ");
    if (end != absl::string_view::npos) return ContainerOfCgroup(message.substr(0, end));
  }
  return std::nullopt;
}

KernelOomLog::KernelOomLog(std::string path) : log_fd_(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)) {
  if (!log_fd_) {
    LOG_WARN << "cannot read the kernel log " << path << " (" << std::strerror(errno)
             << "): an OOM kill is reported as OOMKilled only when Docker says so, which on cgroup v2 it "
                "may not";
    return;
  }
  // The records already there are read by the thread (the log polls readable) or by the
  // first Saw, whichever comes first: not on the shim's start-up path.
  wake_fd_.Reset(::eventfd(0, EFD_CLOEXEC));
  if (wake_fd_) thread_ = std::thread([this] { Run(); });
}

void KernelOomLog::Stop() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  if (::write(wake_fd_.get(), &one, sizeof one) < 0) LOG_WARN << "kernel log: cannot wake its reader: " << std::strerror(errno);
  thread_.join();
}

bool KernelOomLog::Saw(const std::string& id) {
  std::lock_guard lock(mu_);
  ReadAvailable();
  return ids_.contains(id);
}

void KernelOomLog::Run() {
  pollfd fds[2] = {{wake_fd_.get(), POLLIN, 0}, {log_fd_.get(), POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      LOG_WARN << "kernel log: poll: " << std::strerror(errno);
      return;
    }
    if (fds[0].revents != 0) return;
    std::lock_guard lock(mu_);
    ReadAvailable();
    if (!readable_) return;
  }
}

void KernelOomLog::ReadAvailable() {
  if (!log_fd_ || !readable_) return;
  char record[8192];  // one record per read; the kernel's are at most 1 KiB of text plus keys
  for (;;) {
    const ssize_t n = ::read(log_fd_.get(), record, sizeof record);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE) continue;  // records overwritten before we read them: go on after them
      if (errno == EAGAIN) return;
      LOG_WARN << "kernel log: read: " << std::strerror(errno) << "; OOM kills are now only as Docker reports them";
      readable_ = false;  // the fd stays open until the destructor: Run may be polling it
      return;
    }
    if (n == 0) return;
    // /dev/kmsg gives one record per read; a file or pipe (tests) may give several.
    for (absl::string_view line : absl::StrSplit(absl::string_view(record, static_cast<size_t>(n)), '\n')) {
      if (absl::StartsWith(line, " ")) continue;  // a record's continuation (" KEY=value")
      if (std::optional<std::string> id = OomKilledContainer(line)) Remember(*std::move(id));
    }
  }
}

void KernelOomLog::Remember(std::string id) {
  if (ids_.contains(id)) return;
  LOG_INFO << "the kernel OOM-killed a process of container " << id;
  ids_.insert(id);
  order_.push_back(std::move(id));
  if (order_.size() > kMaxRemembered) {
    ids_.erase(order_.front());
    order_.pop_front();
  }
}

}  // namespace shim::oom
