#pragma once
// The DockerClient the CRI service uses when relists come from memory: container
// lists of CRI containers are answered by the ContainerView while it is live (else by
// Docker), and every lifecycle call (create, start, stop, remove) re-reads its
// container into the view before returning, so a caller's next list shows what it
// just did. Everything else goes to Docker unchanged.
#include "dockerclient/docker_client.h"
#include "shim/view/container_view.h"

namespace shim::view {

class ViewClient final : public dockerclient::DockerClient {
 public:
  // Both must outlive the client; `view` reads `docker`.
  ViewClient(dockerclient::DockerClient& docker, ContainerView& view) : docker_(docker), view_(view) {}

  absl::StatusOr<std::vector<dockerclient::ContainerSummary>> ListContainers(
      const common::Context& ctx, const dockerclient::ListContainersOptions& options) override;
  absl::StatusOr<std::string> CreateContainer(const common::Context& ctx, const std::string& name,
                                              const nlohmann::json& body) override;
  absl::Status StartContainer(const common::Context& ctx, const std::string& id) override;
  absl::Status StopContainer(const common::Context& ctx, const std::string& id,
                             const dockerclient::StopOptions& options) override;
  absl::Status RemoveContainer(const common::Context& ctx, const std::string& id, bool force) override;

  // Unchanged.
  absl::StatusOr<std::string> Ping(const common::Context& ctx) override { return docker_.Ping(ctx); }
  absl::StatusOr<dockerclient::VersionInfo> Version(const common::Context& ctx) override {
    return docker_.Version(ctx);
  }
  absl::StatusOr<dockerclient::SystemInfo> Info(const common::Context& ctx) override { return docker_.Info(ctx); }
  absl::StatusOr<std::vector<dockerclient::ImageSummary>> ListImages(const common::Context& ctx,
                                                                     const std::string& reference_filter) override {
    return docker_.ListImages(ctx, reference_filter);
  }
  absl::StatusOr<dockerclient::ImageInspect> InspectImage(const common::Context& ctx,
                                                          const std::string& ref) override {
    return docker_.InspectImage(ctx, ref);
  }
  absl::Status PullImage(const common::Context& ctx, const dockerclient::PullOptions& options) override {
    return docker_.PullImage(ctx, options);
  }
  absl::Status RemoveImage(const common::Context& ctx, const std::string& ref, bool force) override {
    return docker_.RemoveImage(ctx, ref, force);
  }
  absl::StatusOr<dockerclient::ContainerInspect> InspectContainer(const common::Context& ctx,
                                                                  const std::string& id) override {
    return docker_.InspectContainer(ctx, id);
  }
  absl::Status UpdateContainer(const common::Context& ctx, const std::string& id,
                               const nlohmann::json& resources) override {
    return docker_.UpdateContainer(ctx, id, resources);
  }
  absl::Status ExportContainer(const common::Context& ctx, const std::string& id,
                               const std::function<absl::Status(std::string_view)>& sink) override {
    return docker_.ExportContainer(ctx, id, sink);
  }
  absl::Status CreateCheckpoint(const common::Context& ctx, const std::string& id,
                                const dockerclient::CheckpointOptions& options) override {
    return docker_.CreateCheckpoint(ctx, id, options);
  }
  absl::StatusOr<std::string> CreateExec(const common::Context& ctx, const std::string& container_id,
                                         const dockerclient::ExecConfig& config) override {
    return docker_.CreateExec(ctx, container_id, config);
  }
  absl::Status RunExec(const common::Context& ctx, const std::string& exec_id, bool tty,
                       const dockerclient::ExecOutput& output) override {
    return docker_.RunExec(ctx, exec_id, tty, output);
  }
  absl::StatusOr<dockerclient::ExecInspect> InspectExec(const common::Context& ctx,
                                                        const std::string& exec_id) override {
    return docker_.InspectExec(ctx, exec_id);
  }
  absl::StatusOr<dockerclient::HijackedConnection> StartExecAttached(const common::Context& ctx,
                                                                     const std::string& exec_id, bool tty) override {
    return docker_.StartExecAttached(ctx, exec_id, tty);
  }
  absl::Status ResizeExec(const common::Context& ctx, const std::string& exec_id,
                          dockerclient::ConsoleSize size) override {
    return docker_.ResizeExec(ctx, exec_id, size);
  }
  absl::StatusOr<dockerclient::HijackedConnection> AttachContainer(
      const common::Context& ctx, const std::string& id, const dockerclient::AttachOptions& options) override {
    return docker_.AttachContainer(ctx, id, options);
  }
  absl::Status ResizeContainer(const common::Context& ctx, const std::string& id,
                               dockerclient::ConsoleSize size) override {
    return docker_.ResizeContainer(ctx, id, size);
  }

 private:
  dockerclient::DockerClient& docker_;
  ContainerView& view_;
};

}  // namespace shim::view
