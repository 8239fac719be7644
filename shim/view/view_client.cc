#include "shim/view/view_client.h"

namespace shim::view {

absl::StatusOr<std::vector<dockerclient::ContainerSummary>> ViewClient::ListContainers(
    const common::Context& ctx, const dockerclient::ListContainersOptions& options) {
  if (auto listed = view_.List(options)) return *std::move(listed);
  return docker_.ListContainers(ctx, options);
}

absl::StatusOr<std::string> ViewClient::CreateContainer(const common::Context& ctx, const std::string& name,
                                                        const nlohmann::json& body) {
  absl::StatusOr<std::string> id = docker_.CreateContainer(ctx, name, body);
  if (id.ok()) view_.Refresh(ctx, *id);
  return id;
}

// A failed call may still have changed the container (a stop that timed out killed
// it; a remove that failed half-way): it is re-read either way.
absl::Status ViewClient::StartContainer(const common::Context& ctx, const std::string& id) {
  absl::Status s = docker_.StartContainer(ctx, id);
  view_.Refresh(ctx, id);
  return s;
}

absl::Status ViewClient::StopContainer(const common::Context& ctx, const std::string& id,
                                       const dockerclient::StopOptions& options) {
  absl::Status s = docker_.StopContainer(ctx, id, options);
  view_.Refresh(ctx, id);
  return s;
}

absl::Status ViewClient::RemoveContainer(const common::Context& ctx, const std::string& id, bool force) {
  absl::Status s = docker_.RemoveContainer(ctx, id, force);
  view_.Refresh(ctx, id);
  return s;
}

}  // namespace shim::view
