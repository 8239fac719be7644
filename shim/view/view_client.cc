#include "shim/view/view_client.h"

namespace shim::view {

absl::StatusOr<std::vector<dockerclient::ContainerSummary>> ViewClient::ListContainers(
    const common::Context& ctx, const dockerclient::ListContainersOptions& options) {
  if (auto listed = view_.List(options)) return *std::move(listed);
  return inner_.ListContainers(ctx, options);
}

absl::StatusOr<dockerclient::ContainerInspect> ViewClient::InspectContainer(const common::Context& ctx,
                                                                            const std::string& id) {
  absl::StatusOr<dockerclient::ContainerInspect> c = inner_.InspectContainer(ctx, id);
  // Removed behind the shim's back, and its destroy event not read yet: a call that
  // finds it gone takes it off the lists.
  if (absl::IsNotFound(c.status())) view_.Forget(id);
  return c;
}

absl::StatusOr<std::string> ViewClient::CreateContainer(const common::Context& ctx, const std::string& name,
                                                        const nlohmann::json& body) {
  absl::StatusOr<std::string> id = inner_.CreateContainer(ctx, name, body);
  if (id.ok()) view_.Refresh(ctx, *id);
  return id;
}

// A failed call may still have changed the container (a stop that timed out killed
// it; a remove that failed half-way): it is re-read either way.
absl::Status ViewClient::StartContainer(const common::Context& ctx, const std::string& id) {
  absl::Status s = inner_.StartContainer(ctx, id);
  view_.Refresh(ctx, id);
  return s;
}

absl::Status ViewClient::StopContainer(const common::Context& ctx, const std::string& id,
                                       const dockerclient::StopOptions& options) {
  absl::Status s = inner_.StopContainer(ctx, id, options);
  view_.Refresh(ctx, id);
  return s;
}

absl::Status ViewClient::UpdateContainer(const common::Context& ctx, const std::string& id,
                                         const nlohmann::json& resources) {
  absl::Status s = inner_.UpdateContainer(ctx, id, resources);
  view_.Refresh(ctx, id);
  return s;
}

absl::Status ViewClient::RemoveContainer(const common::Context& ctx, const std::string& id, bool force) {
  absl::Status s = inner_.RemoveContainer(ctx, id, force);
  // Gone: dropped without reading it again (a read that failed would leave it listed).
  if (s.ok() || absl::IsNotFound(s)) {
    view_.Forget(id);
  } else {
    view_.Refresh(ctx, id);
  }
  return s;
}

}  // namespace shim::view
