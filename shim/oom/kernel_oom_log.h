#pragma once
// Which containers the kernel's OOM killer hit, read from the kernel log (/dev/kmsg) as
// cAdvisor reads it for the kubelet's OOM events.
//
// Docker's State.OOMKilled comes from containerd, which reads the container cgroup's
// memory.events after the kernel signals it. On cgroup v2 with the systemd driver the
// container's scope is often removed before that read, and the flag stays false (4 of 10
// kills under a pod slice on Docker 20.10): the kubelet would then report "Error" for an
// OOM kill. The kernel's "oom-kill:" line names the killed task's cgroup every time.
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "common/unique_fd.h"

namespace shim::oom {

// The container ID in one kernel log record about an OOM kill: the last component of the
// killed task's memory cgroup, "docker-<id>.scope" (systemd driver) or "<id>" (cgroupfs),
// from "oom-kill:...,task_memcg=<path>,..." (Linux 4.19 and later) or "Task in <path>
// killed as a result of limit of ..." (earlier). None for any other record.
std::optional<std::string> OomKilledContainer(absl::string_view record);

// What CriService asks; a fake in unit tests.
class OomKills {
 public:
  virtual ~OomKills() = default;
  // Whether the kernel OOM-killed a task of container `id` (full ID).
  virtual bool Saw(const std::string& id) = 0;
};

class KernelOomLog : public OomKills {
 public:
  // Reads the records the log still holds (kills from before a restart count), then
  // follows new ones on a thread of its own. Without a readable log (no /dev/kmsg, no
  // CAP_SYSLOG) it logs that once and Saw answers false: Docker's flag alone decides.
  explicit KernelOomLog(std::string path = "/dev/kmsg");
  ~KernelOomLog() override { Stop(); }
  KernelOomLog(const KernelOomLog&) = delete;
  KernelOomLog& operator=(const KernelOomLog&) = delete;

  // Reads what the log has up to now first: a caller asks right after the container
  // exited, and the kernel wrote the line before the task died.
  bool Saw(const std::string& id) override;
  // Joins the thread. Idempotent.
  void Stop();

 private:
  void Run();
  void ReadAvailable();          // mu_ held
  void Remember(std::string id);  // mu_ held

  // Far more containers than a node keeps between the kubelet's garbage collections.
  static constexpr size_t kMaxRemembered = 4096;

  std::mutex mu_;
  common::UniqueFd log_fd_;               // non-blocking; reads guarded by mu_
  bool readable_ = true;                  // false after a read error; guarded by mu_
  common::UniqueFd wake_fd_;              // eventfd that ends Run
  std::deque<std::string> order_;         // oldest first; guarded by mu_
  absl::flat_hash_set<std::string> ids_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace shim::oom
