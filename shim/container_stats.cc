// ContainerStats and ListContainerStats (StreamContainerStats streams the list).
// Containers are listed as ListContainers lists them (one Docker list, same filters,
// same attributes); their figures come from cgroup files (stats_sampler.h). A stopped
// container is listed with its attributes and writable layer and no CPU or memory
// sample, as containerd's CRI lists containers without a running task.
#include "common/status.h"
#include "shim/cri_service.h"
#include "shim/stats_convert.h"

namespace shim {

absl::StatusOr<std::vector<ContainerFigures>> CriService::FiguresOfContainers(const common::Context& ctx,
                                                                              const v1::ContainerFilter& filter) {
  v1::ListContainersRequest list;
  *list.mutable_filter() = filter;
  ASSIGN_OR_RETURN(v1::ListContainersResponse listed, ListContainers(ctx, list));
  std::vector<ContainerFigures> figures;
  for (v1::Container& container : *listed.mutable_containers())
    figures.push_back(stats_->Container(ctx, std::move(container)));
  return figures;
}

absl::StatusOr<v1::ContainerStatsResponse> CriService::ContainerStats(const common::Context& ctx,
                                                                      const v1::ContainerStatsRequest& req) {
  if (req.container_id().empty()) return absl::InvalidArgumentError("ContainerStats: container_id is required");
  ASSIGN_OR_RETURN(std::shared_ptr<const dockerclient::SystemInfo> info, CachedInfo(ctx));
  v1::ListContainersRequest list;
  list.mutable_filter()->set_id(req.container_id());
  ASSIGN_OR_RETURN(v1::ListContainersResponse listed, ListContainers(ctx, list));
  ASSIGN_OR_RETURN(v1::Container container, FindById(listed.containers(), req.container_id(), "container"));
  v1::ContainerStatsResponse resp;
  *resp.mutable_stats() = ToContainerStats(stats_->Container(ctx, std::move(container)), ImageFsMountpoint(ctx, *info));
  return resp;
}

absl::StatusOr<v1::ListContainerStatsResponse> CriService::ListContainerStats(const common::Context& ctx,
                                                                              const v1::ListContainerStatsRequest& req) {
  ASSIGN_OR_RETURN(std::shared_ptr<const dockerclient::SystemInfo> info, CachedInfo(ctx));
  v1::ContainerFilter filter;
  filter.set_id(req.filter().id());
  filter.set_pod_sandbox_id(req.filter().pod_sandbox_id());
  *filter.mutable_label_selector() = req.filter().label_selector();
  ASSIGN_OR_RETURN(std::vector<ContainerFigures> figures, FiguresOfContainers(ctx, filter));
  const std::string image_fs = ImageFsMountpoint(ctx, *info);
  v1::ListContainerStatsResponse resp;
  for (const ContainerFigures& container : figures) *resp.add_stats() = ToContainerStats(container, image_fs);
  return resp;
}

}  // namespace shim
