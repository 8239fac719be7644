#pragma once
// The shim's side of the streaming server: exec and attach run on Docker's hijacked
// connections (exec create + start with Upgrade: tcp; attach; a TTY exec with stdin
// through a relay that keeps Docker from seeing stdin's end), terminal sizes go to
// Docker's resize endpoints, and port-forward targets live in the network namespace
// of the sandbox's infra container.
#include "dockerclient/docker_client.h"
#include "shim/exec_process.h"
#include "streaming/runtime.h"

namespace shim {

class DockerStreamingRuntime final : public streaming::Runtime {
 public:
  // `docker` must outlive the runtime; `signal` kills abandoned execs (kill(2) if empty).
  DockerStreamingRuntime(dockerclient::DockerClient& docker, SignalFn signal)
      : docker_(docker), signal_(std::move(signal)) {}

  absl::StatusOr<streaming::StartedProcess> Exec(const streaming::ExecRequest& req,
                                                 std::optional<streaming::TerminalSize> size) override;
  absl::StatusOr<streaming::StartedProcess> Attach(const streaming::AttachRequest& req,
                                                   std::optional<streaming::TerminalSize> size) override;
  absl::StatusOr<std::string> PortForwardNetns(const std::string& pod_sandbox_id) override;

 private:
  dockerclient::DockerClient& docker_;
  const SignalFn signal_;
};

}  // namespace shim
