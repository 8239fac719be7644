#pragma once
// Writes each container's output at its CRI log path in the CRI format (cri_log.h),
// copied from Docker's log stream. Docker keeps its own log (`docker logs` works, and
// so does any log driver with Docker's dual logging), so the copy can always resume:
// after a shim restart, a kill -9 or a dockerd restart, copying goes on after the last
// timestamp the file holds, and nothing is lost or written twice.
// One thread for all containers (an io_context; each container is one Docker
// connection, or one json log followed on disk); memory per container is one read
// chunk and one partial message.
// Two sources, one writer: for a container whose log driver is json-file, Docker's
// own log file is read directly (json_file_tailer.h, Docker's rotation included; one
// inotify instance for all, directory_watcher.h) and dockerd does no work for it;
// every other driver, and a json file that cannot be
// followed for sure (missing, unreadable, truncated, rotated faster than it is read),
// goes through Docker's logs API from the last line copied.
// ReopenContainerLog is what makes the kubelet's log rotation work: the kubelet
// renames the file, then the copier closes it and continues in a new one at the path.
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dockerclient/docker_client.h"
#include "shim/logs/directory_watcher.h"

namespace shim::logs {

struct CopierOptions {
  std::string docker_socket_path = "/var/run/docker.sock";
  // After the stream broke (dockerd restarting), wait this long before resuming.
  absl::Duration retry_delay = absl::Seconds(1);
  // Read json-file logs from Docker's files (false: always through the logs API).
  bool read_json_files = true;
  // Without inotify (no instance or watch left), how often a json file is looked at.
  absl::Duration json_poll_interval = absl::Milliseconds(20);
};

struct CopierStats {
  uint64_t bytes_written = 0;  // CRI log bytes, all containers, since start
  int containers = 0;          // being copied now
  int from_files = 0;          // of those, read from Docker's json files
  uint64_t fallbacks = 0;      // json files given up for the logs API, since start
};

class LogCopier {
 public:
  // `docker` answers the API version; it must outlive the copier.
  LogCopier(dockerclient::DockerClient& docker, CopierOptions options);
  ~LogCopier();  // Stop()
  LogCopier(const LogCopier&) = delete;
  LogCopier& operator=(const LogCopier&) = delete;

  // Copies `container_id`'s output to `path` from where the file ends (the whole log
  // for an empty file). `tty`: the container's output is a terminal's (one stream).
  // `json_log`: Docker's log file when its driver is json-file (its LogPath), read
  // directly when read_json_files; empty: the logs API.
  // Copying a container twice is a no-op.
  void Follow(const std::string& container_id, const std::string& path, bool tty, const std::string& json_log = "");
  // Where Docker keeps the json-file log of a container: its LogPath once it started;
  // before (StartContainer inspects before it starts) Docker's fixed layout,
  // <DockerRootDir>/containers/<id>/<id>-json.log, with the root asked once. "" when
  // Docker cannot tell its root.
  std::string DockerJsonLogPath(const std::string& container_id, const std::string& log_path);
  // Closes the file and goes on in a new one at the same path (the kubelet renamed
  // the old one). Blocks until done. NOT_FOUND when the container is not copied.
  absl::Status Reopen(const std::string& container_id);
  // Stops copying (the container is being removed).
  void Forget(const std::string& container_id);
  // Waits up to `timeout` for the copy of an exited container to take in the end of
  // Docker's stream. False if it did not in time; true if it did or is not copied.
  bool AwaitFinished(const std::string& container_id, absl::Duration timeout);
  CopierStats Stats();
  // Stops every copy and joins the thread. Idempotent.
  void Stop();

  class Follower;

 private:
  // Docker's API version, asked once (Follow runs on every container start).
  absl::StatusOr<std::string> ApiVersion();

  dockerclient::DockerClient& docker_;
  std::mutex api_mu_;
  std::string api_version_;  // guarded by api_mu_
  std::string docker_root_;  // guarded by api_mu_
  const CopierOptions options_;
  boost::asio::io_context ioc_{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  DirectoryWatcher watcher_{ioc_};  // the json logs' directories, on the thread
  std::map<std::string, std::shared_ptr<Follower>> followers_;  // only touched on the thread
  std::atomic<uint64_t> bytes_written_{0};
  std::atomic<int> following_{0};
  std::atomic<int> from_files_{0};
  std::atomic<uint64_t> fallbacks_{0};
  std::thread thread_;
  bool stopped_ = false;
};

}  // namespace shim::logs
