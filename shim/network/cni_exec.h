#pragma once
// Runs CNI plugin binaries by the CNI exec protocol: parameters in CNI_* environment
// variables, the network config on stdin, the result (or an error JSON) on stdout.
// PluginExecutor is the seam that lets CniNetwork be tested without plugins.
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/context.h"

namespace network {

struct PluginRequest {
  std::string command;  // "ADD", "DEL", "CHECK", "VERSION"
  std::string container_id;
  std::string netns;
  std::string ifname;
  std::string cni_args;  // "K=V;K=V"
};

class PluginExecutor {
 public:
  virtual ~PluginExecutor() = default;
  // Runs the plugin named `type` with `stdin_config` and returns its stdout when it
  // exits 0. Errors name the plugin and the command: FAILED_PRECONDITION when it is
  // not installed, DEADLINE_EXCEEDED or CANCELLED when `ctx` ends first (the plugin
  // and anything it started are killed), else PluginFailure()'s status.
  virtual absl::StatusOr<std::string> Exec(const common::Context& ctx, const std::string& type,
                                           const PluginRequest& req, const std::string& stdin_config) = 0;
};

// Runs plugins as child processes (posix_spawn, no shell). The child gets the
// daemon's environment (plugins such as portmap run iptables from PATH) plus the
// CNI_* variables, a fresh process group, default signal dispositions, and no fds
// but its stdin/stdout/stderr. Children are reaped with waitpid(pid): nothing else
// in the daemon may reap with waitpid(-1).
class ProcessPluginExecutor : public PluginExecutor {
 public:
  // `bin_dirs` are searched in order and become CNI_PATH, which plugins use to find
  // the plugins they delegate to (IPAM).
  explicit ProcessPluginExecutor(std::vector<std::string> bin_dirs) : bin_dirs_(std::move(bin_dirs)) {}

  absl::StatusOr<std::string> Exec(const common::Context& ctx, const std::string& type, const PluginRequest& req,
                                   const std::string& stdin_config) override;

  // The plugin's executable, or FAILED_PRECONDITION
  // "CNI plugin portmap not found in /opt/cni/bin:/usr/lib/cni".
  absl::StatusOr<std::string> FindPlugin(const std::string& type) const;

 private:
  std::vector<std::string> bin_dirs_;
};

}  // namespace network
