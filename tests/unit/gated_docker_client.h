#pragma once
// A FakeDockerClient whose chosen operations wait: behind a closed gate until it opens
// (a dockerd that accepts and does not answer), or for a set latency (a loaded
// dockerd). A waiting call ends DEADLINE_EXCEEDED at its deadline or CANCELLED once
// its caller left, as the real transport does, and holds none of the fake's locks.
#include <map>
#include <set>
#include <string>

#include "absl/synchronization/mutex.h"
#include "common/no_wait.h"
#include "common/status.h"
#include "dockerclient/errors.h"
#include "tests/unit/fake_docker_client.h"

namespace testing_fakes {

class GatedDockerClient : public FakeDockerClient {
 public:
  // Calls of `op` ("StopContainer", "RunExec"...) wait from now until it opens.
  void Close(const std::string& op) {
    absl::MutexLock lock(&mu_);
    closed_.insert(op);
  }
  void OpenAll() {
    absl::MutexLock lock(&mu_);
    closed_.clear();
    changed_.SignalAll();
  }
  // Every call of `op` takes `latency` (on top of any gate).
  void SetLatency(const std::string& op, absl::Duration latency) {
    absl::MutexLock lock(&mu_);
    latency_[op] = latency;
  }
  // Calls of `op` that reached Docker, whether they waited or not, and those waiting now.
  int Entered(const std::string& op) const {
    absl::MutexLock lock(&mu_);
    auto it = entered_.find(op);
    return it == entered_.end() ? 0 : it->second;
  }
  int Waiting(const std::string& op) const {
    absl::MutexLock lock(&mu_);
    auto it = waiting_.find(op);
    return it == waiting_.end() ? 0 : it->second;
  }
  // Blocks until `n` calls of `op` wait at its gate, or `timeout` passed: whether they do.
  bool AwaitWaiting(const std::string& op, int n, absl::Duration timeout) const {
    absl::MutexLock lock(&mu_);
    auto enough = [&] {
      mu_.AssertHeld();
      auto it = waiting_.find(op);
      return it != waiting_.end() && it->second >= n;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
  }

  absl::StatusOr<std::string> Ping(const common::Context& ctx) override {
    RETURN_IF_ERROR(Pass(ctx, "Ping"));
    return FakeDockerClient::Ping(ctx);
  }
  absl::StatusOr<dockerclient::VersionInfo> Version(const common::Context& ctx) override {
    RETURN_IF_ERROR(Pass(ctx, "Version"));
    return FakeDockerClient::Version(ctx);
  }
  absl::StatusOr<dockerclient::SystemInfo> Info(const common::Context& ctx) override {
    RETURN_IF_ERROR(Pass(ctx, "Info"));
    return FakeDockerClient::Info(ctx);
  }
  absl::StatusOr<std::vector<dockerclient::ContainerSummary>> ListContainers(
      const common::Context& ctx, const dockerclient::ListContainersOptions& options) override {
    RETURN_IF_ERROR(Pass(ctx, "ListContainers"));
    return FakeDockerClient::ListContainers(ctx, options);
  }
  absl::StatusOr<dockerclient::ContainerInspect> InspectContainer(const common::Context& ctx,
                                                                  const std::string& id) override {
    RETURN_IF_ERROR(Pass(ctx, "InspectContainer"));
    return FakeDockerClient::InspectContainer(ctx, id);
  }
  absl::StatusOr<std::vector<dockerclient::ImageSummary>> ListImages(const common::Context& ctx,
                                                                     const std::string& reference_filter) override {
    RETURN_IF_ERROR(Pass(ctx, "ListImages"));
    return FakeDockerClient::ListImages(ctx, reference_filter);
  }
  absl::StatusOr<dockerclient::ImageInspect> InspectImage(const common::Context& ctx, const std::string& ref) override {
    RETURN_IF_ERROR(Pass(ctx, "InspectImage"));
    return FakeDockerClient::InspectImage(ctx, ref);
  }
  absl::Status PullImage(const common::Context& ctx, const dockerclient::PullOptions& options) override {
    RETURN_IF_ERROR(Pass(ctx, "PullImage"));
    return FakeDockerClient::PullImage(ctx, options);
  }
  absl::StatusOr<std::string> CreateContainer(const common::Context& ctx, const std::string& name,
                                              const nlohmann::json& body) override {
    RETURN_IF_ERROR(Pass(ctx, "CreateContainer"));
    return FakeDockerClient::CreateContainer(ctx, name, body);
  }
  absl::Status StartContainer(const common::Context& ctx, const std::string& id) override {
    RETURN_IF_ERROR(Pass(ctx, "StartContainer"));
    return FakeDockerClient::StartContainer(ctx, id);
  }
  absl::Status StopContainer(const common::Context& ctx, const std::string& id,
                             const dockerclient::StopOptions& options) override {
    RETURN_IF_ERROR(Pass(ctx, "StopContainer"));
    return FakeDockerClient::StopContainer(ctx, id, options);
  }
  absl::Status RemoveContainer(const common::Context& ctx, const std::string& id, bool force) override {
    RETURN_IF_ERROR(Pass(ctx, "RemoveContainer"));
    return FakeDockerClient::RemoveContainer(ctx, id, force);
  }
  absl::Status RunExec(const common::Context& ctx, const std::string& exec_id, bool tty,
                       const dockerclient::ExecOutput& output) override {
    RETURN_IF_ERROR(Pass(ctx, "RunExec"));
    return FakeDockerClient::RunExec(ctx, exec_id, tty, output);
  }

 private:
  absl::Status Pass(const common::Context& ctx, const std::string& op) {
    if (!common::MayWait()) return common::WouldWait(op);  // as the real transport
    absl::MutexLock lock(&mu_);
    ++entered_[op];
    const auto latency = latency_.find(op);
    const absl::Time until = latency == latency_.end() ? absl::InfinitePast() : absl::Now() + latency->second;
    ++waiting_[op];
    absl::Status passed;
    // Cancellation has no wake-up: looked at every 10 ms, as the transport polls it.
    while (closed_.count(op) || absl::Now() < until) {
      if (ctx.Cancelled()) {
        passed = dockerclient::CancelledError(op);
        break;
      }
      if (absl::Now() >= ctx.deadline) {
        passed = dockerclient::DeadlineError(op);
        break;
      }
      const absl::Time wake = std::min({ctx.deadline, absl::Now() + absl::Milliseconds(10),
                                        closed_.count(op) ? absl::InfiniteFuture() : until});
      changed_.WaitWithDeadline(&mu_, wake);
    }
    --waiting_[op];
    return passed;
  }

  mutable absl::Mutex mu_;
  absl::CondVar changed_;
  std::set<std::string> closed_;
  std::map<std::string, absl::Duration> latency_;
  std::map<std::string, int> entered_, waiting_;
};

}  // namespace testing_fakes
