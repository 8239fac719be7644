#pragma once
// The seam between the shim and Docker Engine. DockerClientImpl talks HTTP to
// dockerd; tests use FakeDockerClient. Every call takes the caller's Context.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/context.h"
#include "dockerclient/types.h"

namespace dockerclient {

struct ListContainersOptions {
  bool all = true;
  Labels label_filter;             // every label must match
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
};

}  // namespace dockerclient
