#pragma once
// The dockershim binary as a child process, optionally in a network namespace of its
// own: the CNI plugins it runs inherit it, so their bridge and the veths' host ends
// live and die with the shim and never touch the host's network. A NetworkNamespace
// outlives the shims started in it: a shim killed and started again there finds its
// bridge and the pods' veths, as one restarted by systemd on a node does.
#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace testsupport {

struct ShimLaunch {
  std::string binary;
  std::vector<std::string> args;  // without argv[0]
  std::string socket_path;        // the --container-runtime-endpoint, waited for
  std::string output_dir;         // gets the child's stdout and stderr files
  bool private_netns = true;
  int netns_fd = -1;  // a NetworkNamespace's fd: the child joins it (instead of private_netns's new one)
  absl::Duration ready_timeout = absl::Seconds(15);
};

// A new network namespace with loopback up, held by an open fd (kept out of children):
// it lasts as long as this object, whatever processes come and go in it.
class NetworkNamespace {
 public:
  static absl::StatusOr<std::unique_ptr<NetworkNamespace>> Create();
  ~NetworkNamespace();
  NetworkNamespace(const NetworkNamespace&) = delete;
  NetworkNamespace& operator=(const NetworkNamespace&) = delete;

  int fd() const { return fd_; }

 private:
  explicit NetworkNamespace(int fd) : fd_(fd) {}
  int fd_;
};

class ShimProcess {
 public:
  // Starts the child and waits until its socket accepts connections; an exit before that is an
  // error that quotes the end of its stderr.
  static absl::StatusOr<std::unique_ptr<ShimProcess>> Start(const ShimLaunch& launch);
  ~ShimProcess();  // SIGKILL, if it still runs
  ShimProcess(const ShimProcess&) = delete;
  ShimProcess& operator=(const ShimProcess&) = delete;

  pid_t pid() const { return pid_; }
  // SIGTERM, then waits up to `grace`: the exit code (128 + signal when killed by one).
  absl::StatusOr<int> Stop(absl::Duration grace = absl::Seconds(20));
  // The exit code once the process ended (a crash: 128 + signal), nullopt while it runs.
  std::optional<int> Exited();
  std::string Stderr() const;

 private:
  ShimProcess(pid_t pid, std::string output_dir) : pid_(pid), output_dir_(std::move(output_dir)) {}
  absl::StatusOr<int> WaitExit(absl::Duration timeout);

  pid_t pid_;
  std::string output_dir_;
  std::optional<int> exit_code_;
};

}  // namespace testsupport
