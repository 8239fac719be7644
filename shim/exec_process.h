#pragma once
// What ExecSync and streaming exec share about an exec's process once its output
// has ended or nobody waits for it any more.
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "dockerclient/docker_client.h"

namespace shim {

// The exit code of an exec whose output has ended: dockerd records it a moment after.
// INTERNAL when it still runs after about a second.
absl::StatusOr<int> WaitForExecExit(dockerclient::DockerClient& docker, const common::Context& ctx,
                                    const std::string& exec_id);

// Sends a signal to a host process; kill(2) in production.
using SignalFn = std::function<int(int pid, int signal)>;

// Docker has no API to stop an exec, so the shim kills the process itself, by the host
// PID Docker reports: an ExecSync past its timeout, a streaming exec whose client went
// away (as containerd does).
// SIGKILLs exec `exec_id` of `container_id` if it still runs; logs what happened,
// naming `command` and `why` ("after its timeout").
void KillExecProcess(dockerclient::DockerClient& docker, const SignalFn& signal, const std::string& container_id,
                     const std::string& exec_id, const std::string& command, const std::string& why);

}  // namespace shim
