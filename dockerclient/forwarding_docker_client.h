#pragma once
// A DockerClient that hands every call to another one: the base of a decorator that
// changes a few calls (shim/view's ViewClient; tests that hold or fail some calls of
// a real engine's client).
#include "dockerclient/docker_client.h"

namespace dockerclient {

class ForwardingDockerClient : public DockerClient {
 public:
  // `inner` must outlive this client.
  explicit ForwardingDockerClient(DockerClient& inner) : inner_(inner) {}

  absl::StatusOr<std::string> Ping(const common::Context& ctx) override { return inner_.Ping(ctx); }
  absl::StatusOr<VersionInfo> Version(const common::Context& ctx) override { return inner_.Version(ctx); }
  absl::StatusOr<SystemInfo> Info(const common::Context& ctx) override { return inner_.Info(ctx); }
  absl::StatusOr<std::vector<ImageSummary>> ListImages(const common::Context& ctx,
                                                       const std::string& reference_filter) override {
    return inner_.ListImages(ctx, reference_filter);
  }
  absl::StatusOr<ImageInspect> InspectImage(const common::Context& ctx, const std::string& ref) override {
    return inner_.InspectImage(ctx, ref);
  }
  absl::Status PullImage(const common::Context& ctx, const PullOptions& options) override {
    return inner_.PullImage(ctx, options);
  }
  absl::Status RemoveImage(const common::Context& ctx, const std::string& ref, bool force) override {
    return inner_.RemoveImage(ctx, ref, force);
  }
  absl::StatusOr<std::vector<ContainerSummary>> ListContainers(const common::Context& ctx,
                                                               const ListContainersOptions& options) override {
    return inner_.ListContainers(ctx, options);
  }
  absl::StatusOr<ContainerInspect> InspectContainer(const common::Context& ctx, const std::string& id) override {
    return inner_.InspectContainer(ctx, id);
  }
  absl::StatusOr<std::string> CreateContainer(const common::Context& ctx, const std::string& name,
                                              const nlohmann::json& body) override {
    return inner_.CreateContainer(ctx, name, body);
  }
  absl::Status StartContainer(const common::Context& ctx, const std::string& id) override {
    return inner_.StartContainer(ctx, id);
  }
  absl::Status StopContainer(const common::Context& ctx, const std::string& id, const StopOptions& options) override {
    return inner_.StopContainer(ctx, id, options);
  }
  absl::Status RemoveContainer(const common::Context& ctx, const std::string& id, bool force) override {
    return inner_.RemoveContainer(ctx, id, force);
  }
  absl::Status UpdateContainer(const common::Context& ctx, const std::string& id,
                               const nlohmann::json& resources) override {
    return inner_.UpdateContainer(ctx, id, resources);
  }
  absl::Status ExportContainer(const common::Context& ctx, const std::string& id,
                               const std::function<absl::Status(std::string_view)>& sink) override {
    return inner_.ExportContainer(ctx, id, sink);
  }
  absl::Status CreateCheckpoint(const common::Context& ctx, const std::string& id,
                                const CheckpointOptions& options) override {
    return inner_.CreateCheckpoint(ctx, id, options);
  }
  absl::StatusOr<std::string> CreateExec(const common::Context& ctx, const std::string& container_id,
                                         const ExecConfig& config) override {
    return inner_.CreateExec(ctx, container_id, config);
  }
  absl::Status RunExec(const common::Context& ctx, const std::string& exec_id, bool tty,
                       const ExecOutput& output) override {
    return inner_.RunExec(ctx, exec_id, tty, output);
  }
  absl::StatusOr<ExecInspect> InspectExec(const common::Context& ctx, const std::string& exec_id) override {
    return inner_.InspectExec(ctx, exec_id);
  }
  absl::StatusOr<HijackedConnection> StartExecAttached(const common::Context& ctx, const std::string& exec_id,
                                                       bool tty) override {
    return inner_.StartExecAttached(ctx, exec_id, tty);
  }
  absl::Status ResizeExec(const common::Context& ctx, const std::string& exec_id, ConsoleSize size) override {
    return inner_.ResizeExec(ctx, exec_id, size);
  }
  absl::StatusOr<HijackedConnection> AttachContainer(const common::Context& ctx, const std::string& id,
                                                     const AttachOptions& options) override {
    return inner_.AttachContainer(ctx, id, options);
  }
  absl::Status ResizeContainer(const common::Context& ctx, const std::string& id, ConsoleSize size) override {
    return inner_.ResizeContainer(ctx, id, size);
  }

 protected:
  DockerClient& inner_;
};

}  // namespace dockerclient
