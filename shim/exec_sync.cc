// ExecSync: runs a command in a running container and returns its output and exit
// code (kubelet's exec probes, crictl exec -s). Output is read from dockerd's
// multiplexed exec stream; no process is forked here.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/status.h"
#include "shim/cri_service.h"
#include "shim/exec_process.h"

namespace shim {

namespace {

// kubelet refuses gRPC messages over 16 MiB; more output than that is cut.
constexpr std::size_t kMaxExecOutputBytes = 16 << 20;

// Appends up to the shared output budget; records that something was cut.
struct CappedOutput {
  std::string out, err;
  bool truncated = false;
  void Append(std::string& to, std::string_view data) {
    const std::size_t room = kMaxExecOutputBytes - std::min(kMaxExecOutputBytes, out.size() + err.size());
    if (data.size() > room) truncated = true;
    to.append(data.substr(0, room));
  }
};

}  // namespace

absl::StatusOr<v1::ExecSyncResponse> CriService::ExecSync(const common::Context& ctx, const v1::ExecSyncRequest& req) {
  if (req.container_id().empty()) return absl::InvalidArgumentError("ExecSync: container_id is required");
  if (req.cmd().empty()) return absl::InvalidArgumentError("ExecSync: cmd is required");
  if (req.timeout() < 0) return absl::InvalidArgumentError("ExecSync: timeout must not be negative");
  const std::string command = absl::StrJoin(req.cmd(), " ");

  common::Context run_ctx = ctx;
  if (req.timeout() > 0) run_ctx.deadline = std::min(ctx.deadline, absl::Now() + absl::Seconds(req.timeout()));

  // Only in the kubelet's containers: not in a pod's infra container, nor in any other
  // container of the host that happens to have the ID. What a status shows is enough
  // (the view's last read, no Docker call: exec probes run every few seconds per pod):
  // Docker refuses an exec in a container that is no longer running.
  ASSIGN_OR_RETURN(dockerclient::ContainerInspect container,
                   InspectCriContainer(ctx, req.container_id(), Reading::kForStatus));
  dockerclient::ExecConfig exec;
  exec.cmd.assign(req.cmd().begin(), req.cmd().end());
  absl::StatusOr<std::string> exec_id = docker_.CreateExec(ctx, container.id, exec);
  RETURN_IF_ERROR(common::Annotate(exec_id.status(), "ExecSync"));

  CappedOutput output;
  dockerclient::ExecOutput sinks;
  sinks.on_stdout = [&output](std::string_view d) { output.Append(output.out, d); };
  sinks.on_stderr = [&output](std::string_view d) { output.Append(output.err, d); };
  absl::Status ran = docker_.RunExec(run_ctx, *exec_id, /*tty=*/false, sinks);
  if (absl::IsDeadlineExceeded(ran) && req.timeout() > 0 && !ctx.Cancelled()) {
    KillExecProcess(docker_, options_.signal_process, req.container_id(), *exec_id, command, "after its timeout");
    return absl::DeadlineExceededError(
        absl::StrCat("command \"", command, "\" timed out after ", req.timeout(), "s"));
  }
  RETURN_IF_ERROR(common::Annotate(ran, absl::StrCat("exec in container ", req.container_id())));
  if (output.truncated) {
    LOG_WARN << "ExecSync in " << req.container_id() << ": output of \"" << command << "\" cut at "
             << kMaxExecOutputBytes << " bytes";
  }

  absl::StatusOr<int> exit_code = WaitForExecExit(docker_, ctx, *exec_id);
  if (!exit_code.ok()) {
    return common::Annotate(exit_code.status(),
                            absl::StrCat("exec in container ", req.container_id(), ": \"", command, "\""));
  }
  v1::ExecSyncResponse resp;
  resp.set_stdout(std::move(output.out));
  resp.set_stderr(std::move(output.err));
  resp.set_exit_code(*exit_code);
  return resp;
}

}  // namespace shim
