#pragma once
// DockerClient over the Engine API on dockerd's unix socket.
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dockerclient/docker_client.h"
#include "dockerclient/http_transport.h"

namespace dockerclient {

// The Engine API versions this client speaks: 1.41 is Docker 20.10, 1.51 Docker 28.5,
// 1.55 Docker 29.7. Checked against the API changelog up to 1.55 (docs/engine-api.md):
// what the client decodes (inspects, lists, /info, events, exec, pull progress) changed
// by additions and by dropping fields it does not read (image Config's container-only
// fields in 1.50; in 1.52 the events' status/id/from, NetworkSettings' top-level
// addresses, empty image Config fields, GraphDriver on the containerd store), and what
// it sends uses none of what 1.52-1.55 removed or changed (Config.MacAddress, empty
// PortBindings, KernelMemoryTCP, per-device blkio updates).
inline constexpr std::string_view kMinApiVersion = "1.41";
inline constexpr std::string_view kMaxApiVersion = "1.55";

// The version to use with a server that reports `server` ("1.43"): the lower of it and
// kMaxApiVersion. FAILED_PRECONDITION when the server is older than kMinApiVersion or
// reports something unparseable.
absl::StatusOr<std::string> NegotiateApiVersion(std::string_view server);

// Splits a pull reference into Docker's fromImage and tag parameters: "repo:tag" gives
// {"repo", "tag"}, "repo@sha256:..." gives {"repo", "sha256:..."} (a tag next to a
// digest is dropped, as Docker does), and no tag means "latest" (an empty tag would
// pull every tag).
std::pair<std::string, std::string> SplitPullReference(std::string_view reference);

class DockerClientImpl : public DockerClient {
 public:
  // `endpoint` is "unix:///var/run/docker.sock" or a bare socket path; other schemes
  // are INVALID_ARGUMENT. Does not contact dockerd.
  static absl::StatusOr<std::unique_ptr<DockerClientImpl>> Create(std::string_view endpoint);

  absl::StatusOr<std::string> Ping(const common::Context& ctx) override;
  absl::StatusOr<VersionInfo> Version(const common::Context& ctx) override;
  absl::StatusOr<SystemInfo> Info(const common::Context& ctx) override;

  absl::StatusOr<std::vector<ImageSummary>> ListImages(const common::Context& ctx,
                                                       const std::string& reference_filter) override;
  absl::StatusOr<ImageInspect> InspectImage(const common::Context& ctx, const std::string& ref) override;
  absl::Status PullImage(const common::Context& ctx, const PullOptions& options) override;
  absl::Status RemoveImage(const common::Context& ctx, const std::string& ref, bool force) override;

  absl::StatusOr<std::vector<ContainerSummary>> ListContainers(const common::Context& ctx,
                                                               const ListContainersOptions& options) override;
  absl::StatusOr<ContainerInspect> InspectContainer(const common::Context& ctx, const std::string& id) override;
  absl::StatusOr<std::string> CreateContainer(const common::Context& ctx, const std::string& name,
                                              const nlohmann::json& body) override;
  absl::Status StartContainer(const common::Context& ctx, const std::string& id) override;
  absl::Status StopContainer(const common::Context& ctx, const std::string& id, const StopOptions& options) override;
  absl::Status RemoveContainer(const common::Context& ctx, const std::string& id, bool force) override;
  absl::Status CreateCheckpoint(const common::Context& ctx, const std::string& id,
                                const CheckpointOptions& options) override;
  absl::Status UpdateContainer(const common::Context& ctx, const std::string& id,
                               const nlohmann::json& resources) override;
  absl::Status ExportContainer(const common::Context& ctx, const std::string& id,
                               const std::function<absl::Status(std::string_view)>& sink) override;

  absl::StatusOr<std::string> CreateExec(const common::Context& ctx, const std::string& container_id,
                                         const ExecConfig& config) override;
  absl::Status RunExec(const common::Context& ctx, const std::string& exec_id, bool tty,
                       const ExecOutput& output) override;
  absl::StatusOr<ExecInspect> InspectExec(const common::Context& ctx, const std::string& exec_id) override;
  absl::StatusOr<HijackedConnection> StartExecAttached(const common::Context& ctx, const std::string& exec_id,
                                                       bool tty) override;
  // dockerd holds a resize sent before the exec has started (up to 10 s) and applies it
  // once the process runs; past that wait, or after the process ended, it is
  // FAILED_PRECONDITION. Without a TTY a resize succeeds and does nothing.
  absl::Status ResizeExec(const common::Context& ctx, const std::string& exec_id, ConsoleSize size) override;
  // Inspects the container first: dockerd itself accepts an attach to a stopped
  // container and waits for it to be started.
  absl::StatusOr<HijackedConnection> AttachContainer(const common::Context& ctx, const std::string& id,
                                                     const AttachOptions& options) override;
  absl::Status ResizeContainer(const common::Context& ctx, const std::string& id, ConsoleSize size) override;

 private:
  explicit DockerClientImpl(std::unique_ptr<HttpTransport> transport);

  // GET /_ping; negotiates the API version on the first success. Errors are
  // prefixed with `operation`, as are those of the functions below.
  absl::StatusOr<std::string> PingAndNegotiate(const common::Context& ctx, std::string_view operation);
  // "1.41", negotiating first if needed.
  absl::StatusOr<std::string> ApiVersion(const common::Context& ctx, std::string_view operation);
  void AwaitListedStopped(const common::Context& ctx, const std::string& id);
  // "/v1.41", negotiating first if needed.
  absl::StatusOr<std::string> ApiPrefix(const common::Context& ctx, std::string_view operation);
  // A versioned request; any HTTP status is a success here.
  absl::StatusOr<HttpResponse> Call(const common::Context& ctx, std::string_view operation, std::string_view method,
                                    std::string_view path, std::string_view body = {});
  // A versioned GET answered with JSON, parsed (200 only; other statuses become errors).
  absl::StatusOr<nlohmann::json> GetJson(const common::Context& ctx, std::string_view operation, std::string_view path);
  // A versioned POST that asks dockerd to hand the connection over to a process's stdio.
  absl::StatusOr<HijackedConnection> Hijack(const common::Context& ctx, std::string_view operation,
                                            std::string_view path, std::string_view body);
  // POST `path`?h=&w= (exec or container resize).
  absl::Status Resize(const common::Context& ctx, std::string_view operation, std::string_view path, ConsoleSize size);

  std::unique_ptr<HttpTransport> transport_;
  std::mutex mu_;
  std::string api_version_;  // guarded by mu_; empty until negotiated
};

}  // namespace dockerclient
