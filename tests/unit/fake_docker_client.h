#pragma once
// A stateful in-memory DockerClient for unit tests: keeps images and
// containers, records every call by name, and fails chosen operations.
#include <functional>
#include <map>
#include <optional>
#include <mutex>
#include <string>
#include <vector>

#include "dockerclient/docker_client.h"

namespace testing_fakes {

class FakeDockerClient : public dockerclient::DockerClient {
 public:
  struct FakeContainer {
    dockerclient::ContainerInspect inspect;
    nlohmann::json create_body;
  };

  FakeDockerClient();

  // --- Test controls ---
  // Adds an image with the given ID (sha256 hex is generated from the tags when empty).
  std::string AddImage(const std::vector<std::string>& tags, const std::string& user = "",
                       int64_t size = 1000, const std::vector<std::string>& digests = {});
  // The files ExportContainer gives for containers of image `image_id`, by relative path
  // (a path ending in '/' is a directory); each becomes a ustar entry, mode 0755.
  void SetImageFiles(const std::string& image_id, std::map<std::string, std::string> files);
  // The image's own labels, which its containers get under theirs, as Docker merges them.
  void SetImageLabels(const std::string& image_id, dockerclient::Labels labels);
  // Images PullImage can "fetch", by reference; pulling anything else fails NOT_FOUND.
  void AddPullableImage(const std::string& reference, const std::string& user = "");
  // Every call of `op` (e.g. "PullImage", "CreateContainer") fails with `status` until cleared.
  void FailOperation(const std::string& op, absl::Status status);
  void ClearFailures();
  // While set, StartContainer "starts" containers whose process dies at once: they
  // end up exited (pid 0, exit code 1) with `error` as State.Error.
  void ExitOnStart(bool exit, const std::string& error = "");
  // What a scripted exec does: its output, exit code, or that it runs until the deadline.
  struct ExecScript {
    std::string stdout_data, stderr_data;
    int exit_code = 0;
    bool hang = false;
  };
  // Decides each exec's behaviour from the container ID and command (default: exit 0, no output).
  void OnExec(std::function<ExecScript(const std::string& container_id, const std::vector<std::string>& cmd)> fn);
  // dockerd's end of a stream that StartExecAttached or AttachContainer handed the shim
  // (one socketpair(AF_UNIX, SOCK_STREAM); the shim got the other end).
  struct StreamPeer {
    std::string id;  // the exec ID, or the container ID for an attach
    std::string container_id;
    // The exec's config; for an attach, the container's tty and the attached streams.
    dockerclient::ExecConfig config;
    common::UniqueFd fd;
  };
  // Plays dockerd on each new stream: `fn` gets the peer and may keep it or hand it to a
  // thread. Called without the fake's lock. Without it, peers are closed at once (the
  // shim reads EOF).
  void OnStream(std::function<void(StreamPeer)> fn);
  // Ends an exec started by StartExecAttached: InspectExec reports it running until then.
  void FinishExec(const std::string& exec_id, int exit_code);
  struct ResizeCall {
    std::string id;  // exec or container ID
    dockerclient::ConsoleSize size;
  };
  // Successful ResizeExec and ResizeContainer calls, in order.
  std::vector<ResizeCall> Resizes() const;
  struct StopCall {
    std::string id;
    int64_t timeout_seconds = 0;
  };
  // StopContainer calls of existing containers, in order.
  std::vector<StopCall> Stops() const;
  // Changes what Docker knows of a container (its pid, upper dir...); it must exist.
  void EditContainer(const std::string& id, const std::function<void(dockerclient::ContainerInspect&)>& edit);
  // Runs when InspectContainer (`op`, with the `id` asked) or ListContainers (`id`
  // empty) has taken its answer, before returning it, without the fake's lock: what it
  // does to Docker happens while the answer is on its way to the caller.
  std::function<void(const std::string& op, const std::string& id)> after_read;

  std::vector<std::string> Calls() const;
  int CallCount(const std::string& op) const;
  std::string LastRegistryAuth() const;
  std::map<std::string, FakeContainer> Containers() const;
  bool HasImage(const std::string& ref) const;

  dockerclient::SystemInfo info;
  dockerclient::VersionInfo version;

  // --- DockerClient ---
  absl::StatusOr<std::string> Ping(const common::Context& ctx) override;
  absl::StatusOr<dockerclient::VersionInfo> Version(const common::Context& ctx) override;
  absl::StatusOr<dockerclient::SystemInfo> Info(const common::Context& ctx) override;
  absl::StatusOr<std::vector<dockerclient::ImageSummary>> ListImages(const common::Context& ctx,
                                                                     const std::string& reference_filter) override;
  absl::StatusOr<dockerclient::ImageInspect> InspectImage(const common::Context& ctx,
                                                          const std::string& ref) override;
  absl::Status PullImage(const common::Context& ctx, const dockerclient::PullOptions& options) override;
  absl::Status RemoveImage(const common::Context& ctx, const std::string& ref, bool force) override;
  absl::StatusOr<std::vector<dockerclient::ContainerSummary>> ListContainers(
      const common::Context& ctx, const dockerclient::ListContainersOptions& options) override;
  absl::StatusOr<dockerclient::ContainerInspect> InspectContainer(const common::Context& ctx,
                                                                  const std::string& id) override;
  absl::StatusOr<std::string> CreateContainer(const common::Context& ctx, const std::string& name,
                                              const nlohmann::json& body) override;
  absl::Status StartContainer(const common::Context& ctx, const std::string& id) override;
  absl::Status StopContainer(const common::Context& ctx, const std::string& id,
                             const dockerclient::StopOptions& options) override;
  absl::Status RemoveContainer(const common::Context& ctx, const std::string& id, bool force) override;
  // Merges `resources` into the container's create body's HostConfig and its inspect.
  absl::Status UpdateContainer(const common::Context& ctx, const std::string& id,
                               const nlohmann::json& resources) override;
  // A ustar archive of the container's image's files (SetImageFiles); nothing but the
  // end-of-archive blocks when none were set.
  absl::Status ExportContainer(const common::Context& ctx, const std::string& id,
                               const std::function<absl::Status(std::string_view)>& sink) override;
  // Plays CRIU: writes <dir>/<checkpoint_id>/{inventory.img,pages-1.img} for a running
  // container and remembers the options and the caller's deadline.
  absl::Status CreateCheckpoint(const common::Context& ctx, const std::string& id,
                                const dockerclient::CheckpointOptions& options) override;
  dockerclient::CheckpointOptions last_checkpoint;
  absl::Time last_checkpoint_deadline;
  // Runs at each Ping, before anything else and without the fake's lock (e.g. to block
  // as a dockerd that accepts but does not answer).
  std::function<void(const common::Context&)> on_ping;
  // The same at each Info.
  std::function<void(const common::Context&)> on_info;
  absl::StatusOr<std::string> CreateExec(const common::Context& ctx, const std::string& container_id,
                                         const dockerclient::ExecConfig& config) override;
  absl::Status RunExec(const common::Context& ctx, const std::string& exec_id, bool tty,
                       const dockerclient::ExecOutput& output) override;
  absl::StatusOr<dockerclient::ExecInspect> InspectExec(const common::Context& ctx,
                                                        const std::string& exec_id) override;
  // FAILED_PRECONDITION when the exec's container is not running.
  absl::StatusOr<dockerclient::HijackedConnection> StartExecAttached(const common::Context& ctx,
                                                                     const std::string& exec_id, bool tty) override;
  // FAILED_PRECONDITION once the exec has finished, as dockerd.
  absl::Status ResizeExec(const common::Context& ctx, const std::string& exec_id,
                          dockerclient::ConsoleSize size) override;
  absl::StatusOr<dockerclient::HijackedConnection> AttachContainer(const common::Context& ctx, const std::string& id,
                                                                   const dockerclient::AttachOptions& options) override;
  absl::Status ResizeContainer(const common::Context& ctx, const std::string& id,
                               dockerclient::ConsoleSize size) override;

 private:
  absl::Status Record(const std::string& op);  // call with mu_ held
  // The answers, before after_read.
  absl::StatusOr<std::vector<dockerclient::ContainerSummary>> ListNow(
      const dockerclient::ListContainersOptions& options);
  absl::StatusOr<dockerclient::ContainerInspect> InspectNow(const std::string& id);
  // A socketpair: the shim's end is returned, the peer goes to the OnStream callback.
  absl::StatusOr<dockerclient::HijackedConnection> HandOver(StreamPeer peer);
  std::string FindImageId(const std::string& ref) const;
  std::string FindContainerId(const std::string& id_or_name) const;

  mutable std::mutex mu_;
  std::map<std::string, dockerclient::ImageInspect> images_;  // by ID
  std::map<std::string, std::string> pullable_;               // reference -> user
  std::map<std::string, std::map<std::string, std::string>> image_files_;  // by image ID
  std::map<std::string, FakeContainer> containers_;           // by ID
  std::map<std::string, absl::Status> failures_;
  std::vector<std::string> calls_;
  std::string last_registry_auth_;
  struct FakeExec {
    std::string container_id;
    dockerclient::ExecConfig config;
    std::optional<int> exit_code;  // set once run or finished
    int pid = 0;                   // "host PID" of the exec process
  };
  std::map<std::string, FakeExec> execs_;
  std::function<ExecScript(const std::string&, const std::vector<std::string>&)> on_exec_;
  std::function<void(StreamPeer)> on_stream_;
  std::vector<ResizeCall> resizes_;
  std::vector<StopCall> stops_;
  int next_id_ = 1;
  bool exit_on_start_ = false;
  std::string exit_on_start_error_;
};

// Docker's normalized form of a reference: "busybox" -> "docker.io/library/busybox:latest".
std::string FakeNormalize(const std::string& ref);

}  // namespace testing_fakes
