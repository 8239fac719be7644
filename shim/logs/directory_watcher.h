#pragma once
// One inotify instance for every directory the log copier watches (each followed
// container's json log directory). An instance per container would run out at the
// kernel's default of 128 instances per user (fs.inotify.max_user_instances, shared
// with every other program of root's), far below a node's container count; watches
// are cheaper (fs.inotify.max_user_watches: 8192 and more).
// Runs on the copier's io_context; every call is made on its thread.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "absl/status/statusor.h"

namespace shim::logs {

class DirectoryWatcher {
 public:
  // No inotify instance left: available() is false and Add answers UNAVAILABLE.
  // Docker writes each log line with a write(2) of its own and inotify reports each:
  // after a batch of changes the watcher waits this long before it reads the next, so
  // that a container writing 100k lines/s costs 200 wakeups a second, not 100k.
  static constexpr std::chrono::milliseconds kCoalesce{5};

  explicit DirectoryWatcher(boost::asio::io_context& ioc);
  ~DirectoryWatcher();
  DirectoryWatcher(const DirectoryWatcher&) = delete;
  DirectoryWatcher& operator=(const DirectoryWatcher&) = delete;

  bool available() const { return inotify_ != nullptr; }

  // While the returned handle lives, `changed` runs (on the io_context's thread) after
  // files in `dir` were created, written, moved or deleted: once for all the changes
  // read at a time, and at most once per kCoalesce. An error when `dir` cannot be
  // watched (no instance, no watch left, no such directory): the caller polls instead.
  class Watch;
  absl::StatusOr<std::unique_ptr<Watch>> Add(const std::string& dir, std::function<void()> changed);

  std::size_t watched_directories() const { return watchers_.size(); }

 private:
  struct Directory {
    std::map<uint64_t, std::function<void()>> callbacks;  // by token
    bool removed = false;  // the kernel dropped the watch (the directory is gone)
  };
  void AwaitEvents();
  void ReadEvents();
  void Remove(int wd, uint64_t token);

  std::unique_ptr<boost::asio::posix::stream_descriptor> inotify_;
  boost::asio::steady_timer pause_;  // kCoalesce between batches
  std::map<int, Directory> watchers_;  // by watch descriptor
  uint64_t next_token_ = 0;
};

class DirectoryWatcher::Watch {
 public:
  ~Watch() { owner_.Remove(wd_, token_); }
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

 private:
  friend class DirectoryWatcher;
  Watch(DirectoryWatcher& owner, int wd, uint64_t token) : owner_(owner), wd_(wd), token_(token) {}
  DirectoryWatcher& owner_;
  const int wd_;
  const uint64_t token_;
};

}  // namespace shim::logs
