#pragma once
// A stateful in-memory DockerClient for unit tests: keeps images and
// containers, records every call by name, and fails chosen operations.
#include <map>
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
  // Images PullImage can "fetch", by reference; pulling anything else fails NOT_FOUND.
  void AddPullableImage(const std::string& reference, const std::string& user = "");
  // Every call of `op` (e.g. "PullImage", "CreateContainer") fails with `status` until cleared.
  void FailOperation(const std::string& op, absl::Status status);
  void ClearFailures();
  // While set, StartContainer "starts" containers whose process dies at once: they
  // end up exited (pid 0, exit code 1) with `error` as State.Error.
  void ExitOnStart(bool exit, const std::string& error = "");
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

 private:
  absl::Status Record(const std::string& op);  // call with mu_ held
  std::string FindImageId(const std::string& ref) const;
  std::string FindContainerId(const std::string& id_or_name) const;

  mutable std::mutex mu_;
  std::map<std::string, dockerclient::ImageInspect> images_;  // by ID
  std::map<std::string, std::string> pullable_;               // reference -> user
  std::map<std::string, FakeContainer> containers_;           // by ID
  std::map<std::string, absl::Status> failures_;
  std::vector<std::string> calls_;
  std::string last_registry_auth_;
  int next_id_ = 1;
  bool exit_on_start_ = false;
  std::string exit_on_start_error_;
};

// Docker's normalized form of a reference: "busybox" -> "docker.io/library/busybox:latest".
std::string FakeNormalize(const std::string& ref);

}  // namespace testing_fakes
