#pragma once
// The DockerClient the CRI service uses when relists come from memory: container
// lists of CRI containers are answered by the ContainerView while it is live (else by
// Docker), and every lifecycle call (create, start, stop, update) re-reads its container
// into the view before returning, so a caller's next list or status shows what it just
// did. A removal, and an inspect that finds no such container, drop it from the view.
// Inspects go to Docker: the calls that act on a container need its state now; status
// calls read the view's held inspects through ContainerView::InspectForStatus.
// Everything else goes to Docker unchanged.
#include "dockerclient/forwarding_docker_client.h"
#include "shim/view/container_view.h"

namespace shim::view {

class ViewClient final : public dockerclient::ForwardingDockerClient {
 public:
  // Both must outlive the client; `view` reads `docker`.
  ViewClient(dockerclient::DockerClient& docker, ContainerView& view)
      : ForwardingDockerClient(docker), view_(view) {}

  absl::StatusOr<std::vector<dockerclient::ContainerSummary>> ListContainers(
      const common::Context& ctx, const dockerclient::ListContainersOptions& options) override;
  absl::StatusOr<dockerclient::ContainerInspect> InspectContainer(const common::Context& ctx,
                                                                  const std::string& id) override;
  absl::StatusOr<std::string> CreateContainer(const common::Context& ctx, const std::string& name,
                                              const nlohmann::json& body) override;
  absl::Status StartContainer(const common::Context& ctx, const std::string& id) override;
  absl::Status StopContainer(const common::Context& ctx, const std::string& id,
                             const dockerclient::StopOptions& options) override;
  absl::Status UpdateContainer(const common::Context& ctx, const std::string& id,
                               const nlohmann::json& resources) override;
  absl::Status RemoveContainer(const common::Context& ctx, const std::string& id, bool force) override;

 private:
  ContainerView& view_;
};

}  // namespace shim::view
