// ContainerStatus and ListContainers. Status costs one container inspect; image
// facts (labels to hide, the reported image reference) are cached by image ID.
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status.h"
#include "shim/container_convert.h"
#include "shim/cri_service.h"
#include "shim/logs/log_copier.h"
#include "shim/naming.h"
#include "shim/oom/kernel_oom_log.h"
#include "shim/view/container_view.h"

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
  ASSIGN_OR_RETURN(ListAnswer<v1::ListContainersResponse> answer, SharedListContainers(ctx, req));
  return *answer.message;
}

absl::StatusOr<ListAnswer<v1::ListContainersResponse>> CriService::SharedListContainers(
    const common::Context& ctx, const v1::ListContainersRequest& req) {
  const v1::ContainerFilter& filter = req.filter();
  if (filter.pod_sandbox_id().empty()) return ListContainersOf(ctx, filter, "");
  // crictl passes ID prefixes; the label holds the full ID.
  absl::StatusOr<dockerclient::ContainerInspect> sandbox = InspectSandbox(ctx, filter.pod_sandbox_id(), Reading::kForStatus);
  if (absl::IsNotFound(sandbox.status()))
    return ListAnswer<v1::ListContainersResponse>{std::make_shared<const v1::ListContainersResponse>(), nullptr};
  RETURN_IF_ERROR(sandbox.status());
  return ListContainersOf(ctx, filter, sandbox->id);
}

std::optional<uint64_t> CriService::ViewVersion() const {
  return options_.container_view ? options_.container_view->Version() : std::nullopt;
}

dockerclient::ListContainersOptions CriService::CriListOptions(
    const char* type, const std::string& id_prefix, const google::protobuf::Map<std::string, std::string>& selector) {
  dockerclient::ListContainersOptions options;
  options.all = true;
  if (FitsDockerLabelFilter(selector))
    for (const auto& [k, v] : selector) options.label_filter[k] = v;
  options.label_filter[kContainerTypeLabel] = type;
  if (!id_prefix.empty()) options.id = id_prefix;
  return options;
}

absl::StatusOr<std::shared_ptr<const CriService::ListedContainers>> CriService::ListCriContainers(
    const common::Context& ctx, const dockerclient::ListContainersOptions& narrowed) {
  auto make = [&](const dockerclient::ListContainersOptions& options) -> absl::StatusOr<view::Made<ListedContainers>> {
    ASSIGN_OR_RETURN(std::vector<dockerclient::ContainerSummary> containers, docker_.ListContainers(ctx, options));
    view::Made<ListedContainers> made;
    for (dockerclient::ContainerSummary& c : containers) {
      const ImageFacts image = FactsOfImage(ctx, c.image_id);
      made.complete = made.complete && image.answered;
      c.labels = WithoutLabelsOf(image, c.labels);
      absl::StatusOr<v1::Container> converted = ToCriContainer(c);
      if (!converted.ok()) {
        LOG_DEBUG << "skipping container " << c.id << ": " << converted.status().message();
        continue;
      }
      *made.value.all.add_containers() = *std::move(converted);
      made.value.own_labels.push_back(std::move(c.labels));
    }
    return made;
  };
  return listed_containers_.Get(
      ViewVersion(), absl::Now(), kImageFactsRefresh, [&] { return make(CriListOptions(kContainerTypeContainer)); },
      [&] { return make(narrowed); });
}

absl::StatusOr<ListAnswer<v1::ListContainersResponse>> CriService::ListContainersOf(
    const common::Context& ctx, const v1::ContainerFilter& filter, const std::string& sandbox_id) {
  dockerclient::ListContainersOptions narrowed =
      CriListOptions(kContainerTypeContainer, filter.id(), filter.label_selector());
  if (!sandbox_id.empty()) narrowed.label_filter[kSandboxIdLabel] = sandbox_id;
  ASSIGN_OR_RETURN(std::shared_ptr<const ListedContainers> listed, ListCriContainers(ctx, narrowed));

  // The kubelet's relist (every second) filters nothing: its items are not looked at.
  const bool filters = !filter.id().empty() || !sandbox_id.empty() || filter.has_state() || !filter.label_selector().empty();
  std::vector<int> kept;
  for (int i = 0; i < listed->all.containers_size(); ++i) {
    if (!filters) {
      kept.push_back(i);
      continue;
    }
    const v1::Container& c = listed->all.containers(i);
    // Docker's id filter is a prefix, and crictl passes prefixes.
    if (!absl::StartsWith(c.id(), filter.id())) continue;
    if (!sandbox_id.empty() && c.pod_sandbox_id() != sandbox_id) continue;
    if (filter.has_state() && c.state() != filter.state().state()) continue;
    // Docker's filter also matched image labels; the selector applies to the container's own.
    if (!MatchesLabelSelector(filter.label_selector(), listed->own_labels[i])) continue;
    kept.push_back(i);
  }
  if (std::cmp_equal(kept.size(), listed->all.containers_size()))
    return ListAnswer<v1::ListContainersResponse>{{listed, &listed->all}, listed->wire};
  auto resp = std::make_shared<v1::ListContainersResponse>();
  for (int i : kept) *resp->add_containers() = listed->all.containers(i);
  return ListAnswer<v1::ListContainersResponse>{std::move(resp), nullptr};
}

}  // namespace shim
