#include "shim/cri_service.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/status.h"
#include "shim/imagevolumes/image_volumes.h"
#include "shim/naming.h"
#include "shim/stats_sampler.h"
#include "shim/storage/engine_storage.h"
#include "shim/view/container_view.h"

namespace shim {

CriService::CriService(Options options, dockerclient::DockerClient& docker, network::NetworkPlugin& network)
    : options_(std::move(options)),
      docker_(docker),
      network_(network),
      checkpoints_(options_.root_directory, options_.cri_dockerd_root_directory),
      oom_(options_.oom_score_adj_floor),
      host_capabilities_(ReadHostCapabilities(options_.proc_root)),
      storage_(std::make_unique<storage::EngineStorage>(
          options_.connect_containerd ? options_.connect_containerd : containerdclient::Connect, options_.clock)),
      stats_(std::make_unique<StatsSampler>(
          docker, SamplerOptions{options_.proc_root, options_.cgroup_prefix, options_.clock, options_.writable_layers,
                                 [this](const common::Context& ctx, const dockerclient::ContainerInspect& c)
                                     -> absl::StatusOr<std::string> {
                                   ASSIGN_OR_RETURN(std::shared_ptr<const dockerclient::SystemInfo> info,
                                                    CachedInfo(ctx));
                                   return storage_->WritableLayerDir(ctx, *info, c);
                                 }})),
      image_volumes_(std::make_unique<imagevolumes::ImageVolumes>(docker, options_.root_directory + "/image-volumes")),
      info_("GET /info", kInfoCacheTtl, options_.clock),
      docker_version_("GET /version", kDockerVersionCacheTtl, options_.clock),
      own_netns_addresses_(options_.netns_addresses ? nullptr : std::make_unique<network::NetlinkAddressReader>()),
      netns_addresses_(options_.netns_addresses ? *options_.netns_addresses : *own_netns_addresses_) {
  absl::StatusOr<stats::CgroupLayout> layout = stats::CgroupLayout::Discover(options_.proc_root, options_.cgroup_prefix);
  if (layout.ok()) {
    cgroup_layout_ = std::move(*layout);
  } else {
    LOG_WARN << "no cgroup layout: unified keys and hugepage limits are not applied: " << layout.status().message();
  }
}

absl::Status CriService::Init() {
  RETURN_IF_ERROR(checkpoints_.Init());
  CleanUpAfterCrash(common::Context::WithTimeout(absl::Seconds(60)));
  ResumeLogCopies(common::Context::WithTimeout(absl::Seconds(30)));
  if (absl::Status s = image_volumes_->Sweep(common::Context::WithTimeout(absl::Seconds(30))); !s.ok()) {
    LOG_WARN << "cannot sweep unused image volumes: " << s;
  }
  return absl::OkStatus();
}

CriService::~CriService() = default;

absl::StatusOr<dockerclient::ContainerInspect> CriService::Inspect(const common::Context& ctx,
                                                                   const std::string& id, Reading reading) {
  if (reading == Reading::kForStatus && options_.container_view) return options_.container_view->InspectForStatus(ctx, id);
  return docker_.InspectContainer(ctx, id);
}

void CriService::RemoveUnusedImageVolumes(const common::Context& ctx, const dockerclient::Labels& labels) {
  const std::string ids = LabelValue(labels, kImageVolumesLabel);
  if (!ids.empty()) image_volumes_->RemoveUnused(ctx, imagevolumes::ImageIdsOfLabel(ids));
}

const HostCapabilities* CriService::RestrictedCapabilities(const dockerclient::SystemInfo& info, bool asked) {
  if (!host_capabilities_ || host_capabilities_->missing.empty() ||
      EngineGrantsAllCapabilitiesItself(info.server_version)) {
    return nullptr;
  }
  if (asked && !capability_clamp_logged_.exchange(true)) {
    LOG_WARN << "this host's capability bounding set lacks " << absl::StrJoin(host_capabilities_->missing, ", ")
             << ", which Docker " << info.server_version << " would ask runc for; privileged containers and those "
             << "that add ALL get every other capability instead";
  }
  return &*host_capabilities_;
}

bool CriService::AddsMissingCapabilities(const v1::LinuxContainerSecurityContext& sc) const {
  if (!host_capabilities_) return false;
  const auto& asked = sc.capabilities().add_capabilities();
  return std::any_of(asked.begin(), asked.end(),
                     [&](const std::string& cap) { return AsksBeyond(cap, *host_capabilities_); });
}

}  // namespace shim
