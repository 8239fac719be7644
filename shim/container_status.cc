// ContainerStatus and ListContainers. Status costs one container inspect; image
// facts (labels to hide, the reported image reference) are cached by image ID.
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status.h"
#include "shim/container_convert.h"
#include "shim/cri_service.h"
#include "shim/logs/log_copier.h"
#include "shim/naming.h"
#include "shim/oom/kernel_oom_log.h"

namespace shim {

namespace {
constexpr absl::Duration kLogDrainWait = absl::Seconds(2);
}  // namespace

absl::StatusOr<v1::ContainerStatusResponse> CriService::ContainerStatus(const common::Context& ctx,
                                                                        const v1::ContainerStatusRequest& req) {
  if (req.container_id().empty()) return absl::InvalidArgumentError("ContainerStatus: container_id is required");
  ASSIGN_OR_RETURN(dockerclient::ContainerInspect container, InspectCriContainer(ctx, req.container_id(), Reading::kForStatus));
  // As with containerd, an exited container's log is complete once its status says so
  // (critest and `kubectl logs` read it right after).
  if (options_.log_copier && container.state.status == "exited" &&
      !options_.log_copier->AwaitFinished(container.id, kLogDrainWait)) {
    LOG_WARN << "container " << container.id << ": its log copy has not caught up " << kLogDrainWait << " after it exited";
  }
  // Docker's flag misses OOM kills on cgroup v2 (oom/kernel_oom_log.h); the kernel does not.
  if (!container.state.running && !container.state.oom_killed && options_.oom_kills &&
      options_.oom_kills->Saw(container.id))
    container.state.oom_killed = true;
  const ImageFacts image = FactsOfImage(ctx, container.image);
  container.labels = WithoutLabelsOf(image, container.labels);
  v1::ContainerStatusResponse resp;
  ASSIGN_OR_RETURN(*resp.mutable_status(), ToContainerStatus(container, image.image_ref, image.image_tag));
  if (req.verbose()) *resp.mutable_info() = ContainerVerboseInfo(container);
  return resp;
}

absl::StatusOr<v1::ListContainersResponse> CriService::ListContainers(const common::Context& ctx,
                                                                      const v1::ListContainersRequest& req) {
  const v1::ContainerFilter& filter = req.filter();
  if (filter.pod_sandbox_id().empty()) return ListContainersOf(ctx, filter, "");
  // crictl passes ID prefixes; the label holds the full ID.
  absl::StatusOr<dockerclient::ContainerInspect> sandbox = InspectSandbox(ctx, filter.pod_sandbox_id(), Reading::kForStatus);
  if (absl::IsNotFound(sandbox.status())) return v1::ListContainersResponse();
  RETURN_IF_ERROR(sandbox.status());
  return ListContainersOf(ctx, filter, sandbox->id);
}

absl::StatusOr<v1::ListContainersResponse> CriService::ListContainersOf(const common::Context& ctx,
                                                                        const v1::ContainerFilter& filter,
                                                                        const std::string& sandbox_id) {
  dockerclient::ListContainersOptions list;
  list.all = true;
  if (FitsDockerLabelFilter(filter.label_selector()))
    for (const auto& [k, v] : filter.label_selector()) list.label_filter[k] = v;
  list.label_filter[kContainerTypeLabel] = kContainerTypeContainer;
  if (!sandbox_id.empty()) list.label_filter[kSandboxIdLabel] = sandbox_id;
  if (!filter.id().empty()) list.id = filter.id();
  ASSIGN_OR_RETURN(std::vector<dockerclient::ContainerSummary> containers, docker_.ListContainers(ctx, list));

  v1::ListContainersResponse resp;
  for (dockerclient::ContainerSummary& c : containers) {
    if (filter.has_state() && ToContainerState(c.state) != filter.state().state()) continue;
    // Docker's filter also matched image labels; the selector applies to the container's own.
    c.labels = WithoutLabelsOf(FactsOfImage(ctx, c.image_id), c.labels);
    if (!MatchesLabelSelector(filter.label_selector(), c.labels)) continue;
    absl::StatusOr<v1::Container> converted = ToCriContainer(c);
    if (!converted.ok()) {
      LOG_DEBUG << "skipping container " << c.id << ": " << converted.status().message();
      continue;
    }
    *resp.add_containers() = *std::move(converted);
  }
  return resp;
}

}  // namespace shim
