// Exec, Attach and PortForward: validated here as the kubelet's streaming library
// validates them, then handed to the streaming server, whose URL the client opens.
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "shim/cri_service.h"

namespace shim {

namespace {

absl::Status ValidateStreams(const char* rpc, bool tty, bool in, bool out, bool err) {
  if (tty && err) return absl::InvalidArgumentError(absl::StrCat(rpc, ": tty and stderr cannot both be true"));
  if (!in && !out && !err) {
    return absl::InvalidArgumentError(absl::StrCat(rpc, ": one of stdin, stdout, or stderr must be set"));
  }
  return absl::OkStatus();
}

absl::Status RequireRunning(const char* rpc, const dockerclient::ContainerInspect& container, const std::string& id) {
  if (container.state.running && !container.state.paused) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(rpc, ": container ", id, " is not running (", container.state.status, ")"));
}

}  // namespace

absl::StatusOr<std::string> CriService::IssueStreamingUrl(streaming::Request request) {
  if (!options_.streaming) return absl::FailedPreconditionError("the streaming server is disabled");
  return options_.streaming->IssueUrl(std::move(request));
}

absl::StatusOr<v1::ExecResponse> CriService::Exec(const common::Context& ctx, const v1::ExecRequest& req) {
  if (req.container_id().empty()) return absl::InvalidArgumentError("Exec: container_id is required");
  if (req.cmd().empty()) return absl::InvalidArgumentError("Exec: cmd is required");
  RETURN_IF_ERROR(ValidateStreams("Exec", req.tty(), req.stdin(), req.stdout(), req.stderr()));
  ASSIGN_OR_RETURN(dockerclient::ContainerInspect container, InspectCriContainer(ctx, req.container_id()));
  RETURN_IF_ERROR(RequireRunning("Exec", container, req.container_id()));
  streaming::ExecRequest exec;
  exec.container_id = container.id;
  exec.cmd.assign(req.cmd().begin(), req.cmd().end());
  exec.tty = req.tty();
  exec.stdin = req.stdin();
  exec.stdout = req.stdout();
  exec.stderr = req.stderr();
  ASSIGN_OR_RETURN(std::string url, IssueStreamingUrl(std::move(exec)));
  v1::ExecResponse resp;
  resp.set_url(std::move(url));
  return resp;
}

absl::StatusOr<v1::AttachResponse> CriService::Attach(const common::Context& ctx, const v1::AttachRequest& req) {
  if (req.container_id().empty()) return absl::InvalidArgumentError("Attach: container_id is required");
  RETURN_IF_ERROR(ValidateStreams("Attach", req.tty(), req.stdin(), req.stdout(), req.stderr()));
  ASSIGN_OR_RETURN(dockerclient::ContainerInspect container, InspectCriContainer(ctx, req.container_id()));
  RETURN_IF_ERROR(RequireRunning("Attach", container, req.container_id()));
  streaming::AttachRequest attach;
  attach.container_id = container.id;
  attach.tty = req.tty();
  attach.stdin = req.stdin();
  attach.stdout = req.stdout();
  attach.stderr = req.stderr();
  ASSIGN_OR_RETURN(std::string url, IssueStreamingUrl(std::move(attach)));
  v1::AttachResponse resp;
  resp.set_url(std::move(url));
  return resp;
}

absl::StatusOr<v1::PortForwardResponse> CriService::PortForward(const common::Context& ctx,
                                                                const v1::PortForwardRequest& req) {
  if (req.pod_sandbox_id().empty()) return absl::InvalidArgumentError("PortForward: pod_sandbox_id is required");
  streaming::PortForwardRequest forward;
  for (int32_t port : req.port()) {
    if (port <= 0 || port > 65535) {
      return absl::InvalidArgumentError(absl::StrCat("PortForward: port ", port, " is not in 1-65535"));
    }
    forward.ports.push_back(static_cast<uint16_t>(port));
  }
  ASSIGN_OR_RETURN(dockerclient::ContainerInspect sandbox, InspectSandbox(ctx, req.pod_sandbox_id()));
  if (!sandbox.state.running) {
    return absl::FailedPreconditionError(
        absl::StrCat("PortForward: pod sandbox ", req.pod_sandbox_id(), " is not ready (", sandbox.state.status, ")"));
  }
  forward.pod_sandbox_id = sandbox.id;
  ASSIGN_OR_RETURN(std::string url, IssueStreamingUrl(std::move(forward)));
  v1::PortForwardResponse resp;
  resp.set_url(std::move(url));
  return resp;
}

}  // namespace shim
