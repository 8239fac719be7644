#include "shim/exec_process.h"

#include <signal.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/log.h"

namespace shim {

namespace {

constexpr absl::Duration kInspectTimeout = absl::Seconds(5);
constexpr int kExitCodePolls = 50;
constexpr absl::Duration kExitCodePollInterval = absl::Milliseconds(20);

}  // namespace

absl::StatusOr<int> WaitForExecExit(dockerclient::DockerClient& docker, const common::Context& ctx,
                                    const std::string& exec_id) {
  for (int poll = 0;; ++poll) {
    absl::StatusOr<dockerclient::ExecInspect> exec = docker.InspectExec(ctx, exec_id);
    if (!exec.ok()) return exec.status();
    if (!exec->running && exec->exit_code.has_value()) return *exec->exit_code;
    if (poll >= kExitCodePolls || ctx.Cancelled() || absl::Now() >= ctx.deadline) {
      return absl::InternalError(absl::StrCat("exec ", exec_id, " ended its output but Docker reports no exit code"));
    }
    absl::SleepFor(kExitCodePollInterval);
  }
}

void KillExecProcess(dockerclient::DockerClient& docker, const SignalFn& signal, const std::string& container_id,
                     const std::string& exec_id, const std::string& command, const std::string& why) {
  const common::Context ctx = common::Context::WithTimeout(kInspectTimeout);
  absl::StatusOr<dockerclient::ExecInspect> exec = docker.InspectExec(ctx, exec_id);
  if (!exec.ok()) {
    LOG_WARN << "exec in " << container_id << ": cannot inspect \"" << command << "\" to kill it: " << exec.status();
    return;
  }
  if (!exec->running || exec->pid <= 0) return;
  const int sent = signal ? signal(exec->pid, SIGKILL) : ::kill(exec->pid, SIGKILL);
  if (sent != 0) {
    LOG_WARN << "exec in " << container_id << ": cannot kill \"" << command << "\" (pid " << exec->pid << ") " << why
             << ": " << std::strerror(errno);
    return;
  }
  LOG_INFO << "exec in " << container_id << ": killed \"" << command << "\" (pid " << exec->pid << ") " << why;
}

}  // namespace shim
