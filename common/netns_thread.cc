#include "common/netns_thread.h"

#include <fcntl.h>
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <future>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/no_wait.h"

namespace common {

NetnsThread::NetnsThread() : home_(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)) {}

NetnsThread::~NetnsThread() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    queue_.clear();
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void NetnsThread::Post(std::string netns_path, Work work) {
  {
    std::lock_guard lock(mu_);
    queue_.emplace_back(std::move(netns_path), std::move(work));
    if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  }
  wake_.notify_one();
}

absl::Status NetnsThread::Run(const std::string& netns_path, const std::function<void()>& work) {
  if (!MayWait()) return WouldWait("entering a network namespace");
  std::promise<absl::Status> done;
  std::future<absl::Status> entered = done.get_future();
  Post(netns_path, [&work, &done](const absl::Status& status) {
    if (status.ok()) work();
    done.set_value(status);
  });
  return entered.get();
}

void NetnsThread::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    auto [netns_path, work] = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    RunOne(netns_path, work);
    lock.lock();
  }
}

void NetnsThread::RunOne(const std::string& netns_path, const Work& work) {
  // Stuck in a pod's namespace, the thread cannot run anything "at home" either.
  if (broken_) return work(absl::InternalError("cannot switch network namespaces in this process"));
  if (netns_path.empty()) return work(absl::OkStatus());
  if (!home_) return work(absl::InternalError("cannot switch network namespaces in this process"));
  UniqueFd target(::open(netns_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!target) {
    const int err = errno;
    const std::string message = absl::StrCat("cannot open network namespace ", netns_path, ": ", std::strerror(err));
    return work(err == ENOENT || err == ESRCH ? absl::NotFoundError(message) : absl::UnavailableError(message));
  }
  if (::setns(target.get(), CLONE_NEWNET) != 0) {
    return work(absl::UnavailableError(
        absl::StrCat("cannot enter network namespace ", netns_path, ": ", std::strerror(errno))));
  }
  work(absl::OkStatus());
  if (::setns(home_.get(), CLONE_NEWNET) != 0) {
    LOG_ERROR << "cannot return to the host's network namespace: " << std::strerror(errno)
              << "; nothing enters pods' network namespaces from now on";
    broken_ = true;
  }
}

}  // namespace common
