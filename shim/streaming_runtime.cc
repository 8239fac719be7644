#include "shim/streaming_runtime.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/status.h"
#include "shim/naming.h"

namespace shim {

namespace {

// Bounds each Docker call a session makes (not the session itself).
constexpr absl::Duration kCallTimeout = absl::Seconds(30);

common::Context CallContext() { return common::Context::WithTimeout(kCallTimeout); }

dockerclient::ConsoleSize ToConsole(streaming::TerminalSize size) { return {size.height, size.width}; }

// The first size goes in an exec's create body, but engines before API 1.42 ignore it
// there: they get it right after the start (dockerd holds a resize until the process
// runs), which a process that reads its size at once (`stty size`) may still miss.
// A failure only leaves the current size, so it is logged.
void ApplyFirstSize(const std::string& what, std::optional<streaming::TerminalSize> size, streaming::Process& process) {
  if (!size) return;
  if (absl::Status resized = process.Resize(*size); !resized.ok()) {
    LOG_DEBUG << what << ": cannot apply the first terminal size: " << resized.message();
  }
}

class DockerExec final : public streaming::Process {
 public:
  DockerExec(dockerclient::DockerClient& docker, const SignalFn& signal, std::string container_id, std::string exec_id,
             std::string command)
      : docker_(docker),
        signal_(signal),
        container_id_(std::move(container_id)),
        exec_id_(std::move(exec_id)),
        command_(std::move(command)) {}

  absl::Status Resize(streaming::TerminalSize size) override {
    return docker_.ResizeExec(CallContext(), exec_id_, ToConsole(size));
  }
  absl::StatusOr<std::optional<int>> Wait() override {
    ASSIGN_OR_RETURN(const int code, WaitForExecExit(docker_, CallContext(), exec_id_));
    return std::optional<int>(code);
  }
  void Abandon() override {
    KillExecProcess(docker_, signal_, container_id_, exec_id_, command_, "because its session ended before it");
  }

 private:
  dockerclient::DockerClient& docker_;
  const SignalFn& signal_;
  const std::string container_id_, exec_id_, command_;
};

class DockerAttach final : public streaming::Process {
 public:
  DockerAttach(dockerclient::DockerClient& docker, std::string container_id)
      : docker_(docker), container_id_(std::move(container_id)) {}

  absl::Status Resize(streaming::TerminalSize size) override {
    return docker_.ResizeContainer(CallContext(), container_id_, ToConsole(size));
  }
  // Attach reports no exit code: the container's own status does.
  absl::StatusOr<std::optional<int>> Wait() override { return std::optional<int>(); }
  void Abandon() override {}

 private:
  dockerclient::DockerClient& docker_;
  const std::string container_id_;
};

// The process on Docker's hijacked connection: multiplexed output without a TTY, one
// raw stream with one. Docker ends a TTY's output at its stdin's EOF, so the client's
// stdin EOF reaches only a process without one.
streaming::StartedProcess OnConnection(std::unique_ptr<streaming::Process> process,
                                       dockerclient::HijackedConnection conn, bool tty) {
  streaming::StartedProcess started;
  started.process = std::move(process);
  started.io.fd = std::move(conn.fd);
  started.io.buffered = std::move(conn.buffered);
  started.io.multiplexed = !tty;
  started.io.half_close_stdin = !tty;
  return started;
}

}  // namespace

absl::StatusOr<streaming::StartedProcess> DockerStreamingRuntime::Exec(const streaming::ExecRequest& req,
                                                                       std::optional<streaming::TerminalSize> size) {
  dockerclient::ExecConfig config;
  config.cmd = req.cmd;
  config.attach_stdin = req.stdin;
  config.attach_stdout = req.stdout;
  config.attach_stderr = req.stderr;
  config.tty = req.tty;
  if (req.tty && size) config.console_size = ToConsole(*size);
  ASSIGN_OR_RETURN(std::string exec_id, docker_.CreateExec(CallContext(), req.container_id, config));
  ASSIGN_OR_RETURN(dockerclient::HijackedConnection conn, docker_.StartExecAttached(CallContext(), exec_id, req.tty));
  auto process = std::make_unique<DockerExec>(docker_, signal_, req.container_id, exec_id, absl::StrJoin(req.cmd, " "));
  if (req.tty) ApplyFirstSize(absl::StrCat("exec in ", req.container_id), size, *process);
  return OnConnection(std::move(process), std::move(conn), req.tty);
}

absl::StatusOr<streaming::StartedProcess> DockerStreamingRuntime::Attach(const streaming::AttachRequest& req,
                                                                         std::optional<streaming::TerminalSize> size) {
  // The output's framing follows the container's own TTY setting, whatever the request says.
  ASSIGN_OR_RETURN(dockerclient::ContainerInspect container, docker_.InspectContainer(CallContext(), req.container_id));
  dockerclient::AttachOptions options;
  options.stdin = req.stdin;
  options.stdout = req.stdout;
  options.stderr = req.stderr;
  ASSIGN_OR_RETURN(dockerclient::HijackedConnection conn,
                   docker_.AttachContainer(CallContext(), container.id, options));
  auto process = std::make_unique<DockerAttach>(docker_, container.id);
  if (container.tty) ApplyFirstSize(absl::StrCat("attach to ", req.container_id), size, *process);
  return OnConnection(std::move(process), std::move(conn), container.tty);
}

absl::StatusOr<std::string> DockerStreamingRuntime::PortForwardNetns(const std::string& pod_sandbox_id) {
  ASSIGN_OR_RETURN(dockerclient::ContainerInspect sandbox, docker_.InspectContainer(CallContext(), pod_sandbox_id));
  if (LabelValue(sandbox.labels, kContainerTypeLabel) != kContainerTypeSandbox) {
    return absl::NotFoundError(absl::StrCat("pod sandbox ", pod_sandbox_id, " not found"));
  }
  if (!sandbox.state.running || sandbox.state.pid <= 0) {
    return absl::FailedPreconditionError(absl::StrCat("pod sandbox ", pod_sandbox_id, " is not running"));
  }
  if (sandbox.network_mode == "host") return std::string();
  return absl::StrCat("/proc/", sandbox.state.pid, "/ns/net");
}

}  // namespace shim
