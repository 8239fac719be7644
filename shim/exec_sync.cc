// ExecSync: runs a command in a running container and returns its output and exit
// code (kubelet's exec probes, crictl exec -s). Output is read from dockerd's
// multiplexed exec stream; no process is forked here.
#include <signal.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/status.h"
#include "shim/cri_service.h"

namespace shim {

namespace {

// kubelet refuses gRPC messages over 16 MiB; more output than that is cut.
constexpr std::size_t kMaxExecOutputBytes = 16 << 20;
// After the output ends dockerd records the exit code a moment later.
constexpr int kExitCodePolls = 50;
constexpr absl::Duration kExitCodePollInterval = absl::Milliseconds(20);
constexpr absl::Duration kKillTimeout = absl::Seconds(5);

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

void CriService::KillTimedOutExec(const std::string& container_id, const std::string& exec_id,
                                  const std::string& command) {
  // Docker has no API to stop an exec; left alone, every timed-out probe would
  // leave a process behind in the container. Its host PID comes from the exec's inspect.
  const common::Context ctx = common::Context::WithTimeout(kKillTimeout);
  absl::StatusOr<dockerclient::ExecInspect> exec = docker_.InspectExec(ctx, exec_id);
  if (!exec.ok() || !exec->running || exec->pid <= 0) {
    if (!exec.ok()) LOG_WARN << "ExecSync in " << container_id << ": cannot inspect timed-out exec: " << exec.status();
    return;
  }
  const auto signal = options_.signal_process ? options_.signal_process : [](int pid, int sig) { return ::kill(pid, sig); };
  if (signal(exec->pid, SIGKILL) != 0) {
    LOG_WARN << "ExecSync in " << container_id << ": cannot kill \"" << command << "\" (pid " << exec->pid
             << ") after its timeout: " << std::strerror(errno);
    return;
  }
  LOG_INFO << "ExecSync in " << container_id << ": killed \"" << command << "\" (pid " << exec->pid
           << ") after its timeout";
}

absl::StatusOr<v1::ExecSyncResponse> CriService::ExecSync(const common::Context& ctx, const v1::ExecSyncRequest& req) {
  if (req.container_id().empty()) return absl::InvalidArgumentError("ExecSync: container_id is required");
  if (req.cmd().empty()) return absl::InvalidArgumentError("ExecSync: cmd is required");
  if (req.timeout() < 0) return absl::InvalidArgumentError("ExecSync: timeout must not be negative");
  const std::string command = absl::StrJoin(req.cmd(), " ");

  common::Context run_ctx = ctx;
  if (req.timeout() > 0) run_ctx.deadline = std::min(ctx.deadline, absl::Now() + absl::Seconds(req.timeout()));

  dockerclient::ExecConfig exec;
  exec.cmd.assign(req.cmd().begin(), req.cmd().end());
  absl::StatusOr<std::string> exec_id = docker_.CreateExec(ctx, req.container_id(), exec);
  RETURN_IF_ERROR(common::Annotate(exec_id.status(), "ExecSync"));

  CappedOutput output;
  dockerclient::ExecOutput sinks;
  sinks.on_stdout = [&output](std::string_view d) { output.Append(output.out, d); };
  sinks.on_stderr = [&output](std::string_view d) { output.Append(output.err, d); };
  absl::Status ran = docker_.RunExec(run_ctx, *exec_id, /*tty=*/false, sinks);
  if (absl::IsDeadlineExceeded(ran) && req.timeout() > 0 && !ctx.Cancelled()) {
    KillTimedOutExec(req.container_id(), *exec_id, command);
    return absl::DeadlineExceededError(
        absl::StrCat("command \"", command, "\" timed out after ", req.timeout(), "s"));
  }
  RETURN_IF_ERROR(common::Annotate(ran, absl::StrCat("exec in container ", req.container_id())));
  if (output.truncated) {
    LOG_WARN << "ExecSync in " << req.container_id() << ": output of \"" << command << "\" cut at "
             << kMaxExecOutputBytes << " bytes";
  }

  for (int poll = 0;; ++poll) {
    ASSIGN_OR_RETURN(dockerclient::ExecInspect done, docker_.InspectExec(ctx, *exec_id));
    if (!done.running && done.exit_code.has_value()) {
      v1::ExecSyncResponse resp;
      resp.set_stdout(std::move(output.out));
      resp.set_stderr(std::move(output.err));
      resp.set_exit_code(*done.exit_code);
      return resp;
    }
    if (poll >= kExitCodePolls || ctx.Cancelled() || absl::Now() >= ctx.deadline) {
      return absl::InternalError(absl::StrCat("exec in container ", req.container_id(), ": \"", command,
                                              "\" ended its output but Docker reports no exit code"));
    }
    absl::SleepFor(kExitCodePollInterval);
  }
}

}  // namespace shim
