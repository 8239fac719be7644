#pragma once
// Runs work inside a pod's network namespace without forking (cri-dockerd runs nsenter
// for that). A network namespace is a property of the thread, so one dedicated thread,
// started at the first call, does setns(pod), the work, setns(back); no other thread of
// the process ever changes namespace. What the work creates there (a socket, a netlink
// socket) keeps belonging to that namespace after the thread went back.
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "common/unique_fd.h"

namespace common {

class NetnsThread {
 public:
  // `entered`: OK when the work runs in the namespace asked for; otherwise why not (the
  // namespace cannot be opened or entered: NOT_FOUND when it is gone, UNAVAILABLE, or
  // INTERNAL once the thread could not return home), and the work must not touch it.
  using Work = std::function<void(const absl::Status& entered)>;

  // Remembers the calling thread's namespace as the one to return to.
  NetnsThread();
  // Joins the thread; work still queued is dropped without running.
  ~NetnsThread();
  NetnsThread(const NetnsThread&) = delete;
  NetnsThread& operator=(const NetnsThread&) = delete;

  // Queues `work` to run in the namespace at `netns_path` (a /proc/<pid>/ns/net or
  // bind-mounted path; empty: the home namespace). Returns at once.
  void Post(std::string netns_path, Work work);
  // Runs `work` there and waits for it; returns `entered` (the work did not run unless OK).
  absl::Status Run(const std::string& netns_path, const std::function<void()>& work);

 private:
  void Loop();
  // On the thread: enters, runs, returns home.
  void RunOne(const std::string& netns_path, const Work& work);

  const UniqueFd home_;
  bool broken_ = false;  // could not return home once: every later work is refused (thread only)

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::pair<std::string, Work>> queue_;  // guarded by mu_
  bool stopping_ = false;                           // guarded by mu_
  std::thread thread_;                              // started by the first Post, under mu_
};

}  // namespace common
