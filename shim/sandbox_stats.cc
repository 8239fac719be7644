// PodSandboxStats and ListPodSandboxStats (StreamPodSandboxStats streams the list). Pods
// are listed as ListPodSandbox lists them and their containers as ListContainers does
// (two Docker lists per call). A pod's CPU, memory and process count come from its own
// cgroup (its cgroup parent), its network counters from its infra process's view of
// /proc/net/dev; its containers' stats are those of ListContainerStats.
#include <map>

#include "common/status.h"
#include "shim/cri_service.h"
#include "shim/stats_convert.h"

namespace shim {

absl::StatusOr<std::vector<PodFigures>> CriService::FiguresOfPods(const common::Context& ctx,
                                                                  std::vector<v1::PodSandbox> sandboxes) {
  ASSIGN_OR_RETURN(std::shared_ptr<const dockerclient::SystemInfo> info, CachedInfo(ctx));
  ASSIGN_OR_RETURN(v1::ListContainersResponse listed, ListContainers(ctx, v1::ListContainersRequest()));
  std::vector<PodFigures> pods;
  pods.reserve(sandboxes.size());
  std::map<std::string, PodFigures*> by_id;
  for (v1::PodSandbox& sandbox : sandboxes) {
    pods.push_back(stats_->Pod(ctx, std::move(sandbox), info->cgroup_driver == "systemd"));
    by_id[pods.back().sandbox.id()] = &pods.back();
  }
  for (v1::Container& container : *listed.mutable_containers()) {
    auto pod = by_id.find(container.pod_sandbox_id());
    if (pod != by_id.end()) pod->second->containers.push_back(stats_->Container(ctx, std::move(container)));
  }
  return pods;
}

absl::StatusOr<std::vector<PodFigures>> CriService::FiguresOfReadyPods(const common::Context& ctx,
                                                                       const v1::PodSandboxFilter& filter) {
  v1::ListPodSandboxRequest list;
  *list.mutable_filter() = filter;
  list.mutable_filter()->mutable_state()->set_state(v1::SANDBOX_READY);
  ASSIGN_OR_RETURN(v1::ListPodSandboxResponse listed, ListPodSandbox(ctx, list));
  return FiguresOfPods(ctx, {listed.items().begin(), listed.items().end()});
}

absl::StatusOr<v1::PodSandboxStatsResponse> CriService::PodSandboxStats(const common::Context& ctx,
                                                                        const v1::PodSandboxStatsRequest& req) {
  if (req.pod_sandbox_id().empty()) return absl::InvalidArgumentError("PodSandboxStats: pod_sandbox_id is required");
  ASSIGN_OR_RETURN(std::shared_ptr<const dockerclient::SystemInfo> info, CachedInfo(ctx));
  v1::ListPodSandboxRequest list;
  list.mutable_filter()->set_id(req.pod_sandbox_id());
  ASSIGN_OR_RETURN(v1::ListPodSandboxResponse listed, ListPodSandbox(ctx, list));
  ASSIGN_OR_RETURN(v1::PodSandbox sandbox, FindById(listed.items(), req.pod_sandbox_id(), "pod sandbox"));
  ASSIGN_OR_RETURN(std::vector<PodFigures> pods, FiguresOfPods(ctx, {std::move(sandbox)}));
  v1::PodSandboxStatsResponse resp;
  *resp.mutable_stats() = ToPodSandboxStats(pods.front(), ImageFsMountpoint(ctx, *info));
  return resp;
}

// Ready pods only, as containerd lists them: a stopped pod has no figures to give.
absl::StatusOr<v1::ListPodSandboxStatsResponse> CriService::ListPodSandboxStats(
    const common::Context& ctx, const v1::ListPodSandboxStatsRequest& req) {
  ASSIGN_OR_RETURN(std::shared_ptr<const dockerclient::SystemInfo> info, CachedInfo(ctx));
  v1::PodSandboxFilter filter;
  filter.set_id(req.filter().id());
  *filter.mutable_label_selector() = req.filter().label_selector();
  ASSIGN_OR_RETURN(std::vector<PodFigures> pods, FiguresOfReadyPods(ctx, filter));
  const std::string image_fs = ImageFsMountpoint(ctx, *info);
  v1::ListPodSandboxStatsResponse resp;
  for (const PodFigures& pod : pods) *resp.add_stats() = ToPodSandboxStats(pod, image_fs);
  return resp;
}

}  // namespace shim
