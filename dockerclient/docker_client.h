#pragma once
// The seam between the shim and Docker Engine. DockerClientImpl talks HTTP to
// dockerd; tests use FakeDockerClient. Every call takes the caller's Context.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/context.h"
#include "common/unique_fd.h"
#include "dockerclient/types.h"

namespace dockerclient {

struct ListContainersOptions {
  bool all = true;
  Labels label_filter;             // every label must match
  std::vector<std::string> label_keys;  // every label must be present, whatever its value
  std::optional<std::string> id;   // ID or ID prefix
  std::optional<std::string> status;
};

struct PullOptions {
  std::string reference;       // normalized, with tag or digest
  std::string registry_auth;   // X-Registry-Auth value (base64url JSON); empty for none
  absl::Duration progress_deadline = absl::Minutes(1);  // abort when no progress for this long
  // Called for each progress message (already parsed status lines).
  std::function<void(const nlohmann::json&)> on_progress;
};

struct StopOptions {
  int64_t timeout_seconds = 10;
};

// POST /containers/{id}/checkpoints: CRIU dumps the container's processes into
// <checkpoint_dir>/<checkpoint_id>/ on the daemon's host.
struct CheckpointOptions {
  std::string checkpoint_id;
  std::string checkpoint_dir;
  bool exit = false;  // stop the container once dumped
};

// A terminal size as Docker takes it (rows, columns).
struct ConsoleSize {
  uint16_t height = 0, width = 0;
};

struct ExecConfig {
  std::vector<std::string> cmd;
  bool attach_stdin = false, attach_stdout = true, attach_stderr = true;
  bool tty = false;
  // The terminal's first size. Engines before API 1.42 do not take it (it is left out
  // of the request there); resize after the start instead.
  std::optional<ConsoleSize> console_size;
};

// A connection dockerd handed over to a process's stdio ("101 UPGRADED" after an
// attach or an exec start with `Upgrade: tcp`). Writing sends stdin, shutdown(SHUT_WR)
// closes it, and reading yields the output until the process ends: multiplexed per
// stdcopy.h without a TTY, raw with one.
struct HijackedConnection {
  common::UniqueFd fd;
  std::string buffered;  // output bytes read together with the response header
};

struct AttachOptions {
  bool stdin = false, stdout = false, stderr = false;
};

struct ExecInspect {
  bool running = false;
  std::optional<int> exit_code;  // unset while running
  int pid = 0;
};

// Receives an exec's output as it arrives. Without a TTY both streams are separate;
// with one everything comes as stdout.
struct ExecOutput {
  std::function<void(std::string_view)> on_stdout, on_stderr;
};

class DockerClient {
 public:
  virtual ~DockerClient() = default;

  // The Engine API version in use ("1.41"), negotiated on first contact.
  virtual absl::StatusOr<std::string> Ping(const common::Context& ctx) = 0;
  virtual absl::StatusOr<VersionInfo> Version(const common::Context& ctx) = 0;
  virtual absl::StatusOr<SystemInfo> Info(const common::Context& ctx) = 0;

  // Images.
  virtual absl::StatusOr<std::vector<ImageSummary>> ListImages(const common::Context& ctx,
                                                               const std::string& reference_filter) = 0;
  virtual absl::StatusOr<ImageInspect> InspectImage(const common::Context& ctx, const std::string& ref) = 0;
  virtual absl::Status PullImage(const common::Context& ctx, const PullOptions& options) = 0;
  // Removes one tag or, given an ID, the image. `force` untags an ID with several tags.
  virtual absl::Status RemoveImage(const common::Context& ctx, const std::string& ref, bool force) = 0;

  // Containers.
  virtual absl::StatusOr<std::vector<ContainerSummary>> ListContainers(const common::Context& ctx,
                                                                       const ListContainersOptions& options) = 0;
  virtual absl::StatusOr<ContainerInspect> InspectContainer(const common::Context& ctx, const std::string& id) = 0;
  // `body` is the Engine API create request; returns the new container's ID.
  virtual absl::StatusOr<std::string> CreateContainer(const common::Context& ctx, const std::string& name,
                                                      const nlohmann::json& body) = 0;
  virtual absl::Status StartContainer(const common::Context& ctx, const std::string& id) = 0;
  virtual absl::Status StopContainer(const common::Context& ctx, const std::string& id,
                                     const StopOptions& options) = 0;
  virtual absl::Status RemoveContainer(const common::Context& ctx, const std::string& id, bool force) = 0;
  // POST /containers/{id}/update: `resources` holds HostConfig resource fields.
  virtual absl::Status UpdateContainer(const common::Context& ctx, const std::string& id,
                                       const nlohmann::json& resources) = 0;
  // GET /containers/{id}/export: the container's filesystem as a tar stream, handed to
  // `sink` piece by piece. An error from `sink` ends the export and is returned.
  virtual absl::Status ExportContainer(const common::Context& ctx, const std::string& id,
                                       const std::function<absl::Status(std::string_view)>& sink) = 0;

  // Needs a daemon with experimental features and CRIU.
  virtual absl::Status CreateCheckpoint(const common::Context& ctx, const std::string& id,
                                        const CheckpointOptions& options) = 0;

  // Exec. CreateExec fails with FAILED_PRECONDITION when the container is not running.
  virtual absl::StatusOr<std::string> CreateExec(const common::Context& ctx, const std::string& container_id,
                                                 const ExecConfig& config) = 0;
  // Starts the exec without stdin and delivers its output until the process ends
  // (`tty` must match the exec's config). The context's deadline bounds the whole run.
  virtual absl::Status RunExec(const common::Context& ctx, const std::string& exec_id, bool tty,
                               const ExecOutput& output) = 0;
  virtual absl::StatusOr<ExecInspect> InspectExec(const common::Context& ctx, const std::string& exec_id) = 0;
  // Starts the exec and hands over its stdio (`tty` must match the exec's config).
  // The context bounds only the handshake, not the life of the connection.
  virtual absl::StatusOr<HijackedConnection> StartExecAttached(const common::Context& ctx, const std::string& exec_id,
                                                               bool tty) = 0;
  virtual absl::Status ResizeExec(const common::Context& ctx, const std::string& exec_id, ConsoleSize size) = 0;

  // Attaches to a running container's stdio (POST /containers/{id}/attach?stream=1);
  // the context bounds only the handshake. FAILED_PRECONDITION when it is not running.
  virtual absl::StatusOr<HijackedConnection> AttachContainer(const common::Context& ctx, const std::string& id,
                                                             const AttachOptions& options) = 0;
  virtual absl::Status ResizeContainer(const common::Context& ctx, const std::string& id, ConsoleSize size) = 0;
};

}  // namespace dockerclient
