// CreateContainer, StartContainer, StopContainer, RemoveContainer. Containers join
// their pod's infra container namespaces; their CRI log file is made at create and
// filled by the log copier from start on (container_logs.cc).
#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <vector>
#include <system_error>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status.h"
#include "shim/cgroup_files.h"
#include "shim/container_config.h"
#include "shim/imagevolumes/image_volumes.h"
#include "shim/logs/log_copier.h"
#include "shim/cri_service.h"
#include "shim/docker_removal.h"
#include "shim/naming.h"

namespace shim {

namespace {

namespace fs = std::filesystem;

absl::Status RequireContainerId(const std::string& id, const char* rpc) {
  if (id.empty()) return absl::InvalidArgumentError(absl::StrCat(rpc, ": container_id is required"));
  return absl::OkStatus();
}

// Stop and Remove act only on the kubelet's containers: not on a pod's infra container
// (its sandbox RPC does that, network included), nor on one Kubernetes does not own.
absl::Status RequireKubernetesContainer(const dockerclient::ContainerInspect& container, const std::string& id,
                                        const char* verb, const char* sandbox_rpc) {
  const std::string type = LabelValue(container.labels, kContainerTypeLabel);
  if (type == kContainerTypeSandbox) {
    return absl::InvalidArgumentError(
        absl::StrCat("container ", id, " is a pod infra container; ", verb, " it with ", sandbox_rpc));
  }
  if (type != kContainerTypeContainer)
    return absl::NotFoundError(absl::StrCat("container ", id, " not found (it is not a Kubernetes container)"));
  return absl::OkStatus();
}

// Kubernetes expects a missing hostPath source to appear as a directory (Docker's
// Binds did that; Mounts, which the body uses, do not before API 1.44), as
// containerd and CRI-O do.
absl::Status CreateMissingMountSources(const v1::ContainerConfig& config) {
  for (const v1::Mount& mount : config.mounts()) {
    std::error_code ec;
    if (mount.host_path().empty() || fs::exists(fs::symlink_status(mount.host_path(), ec))) continue;
    fs::create_directories(mount.host_path(), ec);
    if (ec) {
      return absl::FailedPreconditionError(absl::StrCat("mount source ", mount.host_path(),
                                                        " does not exist and cannot be created: ", ec.message()));
    }
    LOG_INFO << "created missing mount source directory " << mount.host_path();
  }
  return absl::OkStatus();
}

// What a Docker update sets back to systemd's defaults with the systemd driver, though
// Docker has no field of them: runc sets the scope's properties, and systemd applies all
// its memory settings again (seen for memory.high, memory.min and memory.oom.group with
// Docker 20.10, runc 1.1.5, systemd 252; memory.low and memory.swap.max are its too).
constexpr std::array<const char*, 5> kSetBackByDockerUpdate = {"memory.high", "memory.low", "memory.min",
                                                                "memory.oom.group", "memory.swap.max"};

// The cgroup v2 files that a Docker update with `limits` (MakeResourceLimits) sets itself.
std::set<std::string> FilesDockerSets(const nlohmann::json& limits) {
  static const std::map<std::string, std::string> kFileOfField = {
      {"Memory", "memory.max"},    {"MemorySwap", "memory.swap.max"}, {"PidsLimit", "pids.max"},
      {"CpuShares", "cpu.weight"}, {"CpuQuota", "cpu.max"},           {"CpuPeriod", "cpu.max"},
      {"CpusetCpus", "cpuset.cpus"}, {"CpusetMems", "cpuset.mems"}};
  std::set<std::string> files;
  for (const auto& [field, file] : kFileOfField)
    if (limits.contains(field)) files.insert(file);
  return files;
}

}  // namespace

absl::StatusOr<std::string> CriService::CgroupV2DirOf(const dockerclient::ContainerInspect& c) const {
  if (c.state.running && c.state.pid > 0) {
    absl::StatusOr<stats::CgroupDirs> dirs = cgroup_layout_->DirsOfProcess(c.state.pid);
    // Both driver's names carry the ID ("<id>", "docker-<id>.scope"); another name means
    // the pid is no longer the container's.
    if (dirs.ok() && absl::StrContains(dirs->memory, c.id)) return dirs->memory;
  }
  return absl::FailedPreconditionError(absl::StrCat("container ", c.id, " does not run, so it has no cgroup"));
}

absl::Status CriService::WriteCreatedCgroupFiles(const common::Context& ctx,
                                                 const dockerclient::ContainerInspect& created) {
  const CgroupFileValues files = CgroupFilesOfLabels(created.labels);
  if (files.empty() || !CgroupV2()) return absl::OkStatus();
  ASSIGN_OR_RETURN(dockerclient::ContainerInspect started, docker_.InspectContainer(ctx, created.id));
  absl::StatusOr<std::string> dir = CgroupV2DirOf(started);
  absl::Status written = dir.ok() ? WriteCgroupFiles(*dir, files) : dir.status();
  if (written.ok()) return absl::OkStatus();
  // One that ended already is reported as it ended; it had no time to need them.
  absl::StatusOr<dockerclient::ContainerInspect> now = docker_.InspectContainer(ctx, created.id);
  if (absl::IsFailedPrecondition(written) && now.ok() && !now->state.running) {
    LOG_INFO << "container " << created.id << " ended before its cgroup files were written: " << written.message();
    return absl::OkStatus();
  }
  // It must not run without the limits it was created with.
  dockerclient::StopOptions stop;
  stop.timeout_seconds = 0;
  if (absl::Status stopped = docker_.StopContainer(ctx, created.id, stop); !stopped.ok())
    LOG_WARN << "cannot stop container " << created.id << " after its cgroup files failed: " << stopped.message();
  return common::Annotate(written, absl::StrCat("StartContainer: container ", created.id,
                                                " is stopped: its cgroup v2 settings cannot be applied"));
}

absl::StatusOr<dockerclient::ContainerInspect> CriService::InspectCriContainer(const common::Context& ctx,
                                                                               const std::string& id,
                                                                               Reading reading) {
  ASSIGN_OR_RETURN(dockerclient::ContainerInspect inspect, Inspect(ctx, id, reading));
  if (LabelValue(inspect.labels, kContainerTypeLabel) != kContainerTypeContainer) {
    return absl::NotFoundError(absl::StrCat("container ", id, " not found (Docker container ", inspect.id,
                                            " is not a Kubernetes container)"));
  }
  return inspect;
}

absl::StatusOr<v1::CreateContainerResponse> CriService::CreateContainer(const common::Context& ctx,
                                                                        const v1::CreateContainerRequest& req) {
  if (req.pod_sandbox_id().empty()) return absl::InvalidArgumentError("CreateContainer: pod_sandbox_id is required");
  if (!req.has_config()) return absl::InvalidArgumentError("CreateContainer: config is required");
  const v1::ContainerConfig& config = req.config();
  if (!config.has_metadata() || config.metadata().name().empty()) {
    return absl::InvalidArgumentError("CreateContainer: config.metadata.name is required");
  }
  if (config.image().image().empty()) return absl::InvalidArgumentError("CreateContainer: config.image.image is required");
  RETURN_IF_ERROR(common::Annotate(CheckLabelsSize(config.labels(), config.annotations()), "CreateContainer"));

  // Phases for the pod start-up bench (Options::phase_sink; none in production).
  common::PhaseSink* const phases = options_.phase_sink;
  common::ScopedPhase sandbox_phase(phases, "CreateContainer: sandbox inspect");
  ASSIGN_OR_RETURN(dockerclient::ContainerInspect sandbox, InspectSandbox(ctx, req.pod_sandbox_id()));
  sandbox_phase.Stop();
  common::ScopedPhase body_phase(phases, "CreateContainer: create body (info, features, mounts)");
  v1::PodSandboxConfig sandbox_config = req.sandbox_config();
  // The pod's identity comes from its infra container when the caller sends no config.
  if (!sandbox_config.has_metadata() || sandbox_config.metadata().name().empty()) {
    ASSIGN_OR_RETURN(*sandbox_config.mutable_metadata(), ParseSandboxName(sandbox.name));
  }
  RETURN_IF_ERROR(common::Annotate(CheckNameParts(sandbox_config.metadata(), &config.metadata()), "CreateContainer"));

  ASSIGN_OR_RETURN(std::shared_ptr<const dockerclient::SystemInfo> info, CachedInfo(ctx));
  ContainerCreateParams params;
  params.sandbox_id = sandbox.id;
  params.image = config.image().image();
  params.cgroup_driver = info->cgroup_driver;
  params.docker_runtime = sandbox.runtime;
  ASSIGN_OR_RETURN(params.log_path, CriLogPath(sandbox_config.log_directory(), config.log_path()));
  params.oom_score_adj_floor = oom_.lowest_permitted();
  // The files the shim writes at start must be writable there: a pod's cgroup has the
  // files its containers' cgroups will have (runc enables every controller down the path).
  if (CgroupV2() && !sandbox.cgroup_parent.empty()) {
    ASSIGN_OR_RETURN(CgroupFileValues files, ShimCgroupFiles(config.linux().resources()));
    const std::string pod_dir =
        cgroup_layout_->DirsOfParent(sandbox.cgroup_parent, info->cgroup_driver == "systemd").memory;
    if (absl::Status s = CheckCgroupFiles(pod_dir, files); !s.ok() && !absl::IsFailedPrecondition(s))
      return common::Annotate(s, "CreateContainer: linux.resources");
  }
  params.seccomp_profile_root = options_.seccomp_profile_root;
  ASSIGN_OR_RETURN(params.features, Features(ctx));
  const auto& ns = config.linux().security_context().namespace_options();
  if (ns.pid() == v1::TARGET) {
    if (ns.target_id().empty()) {
      return absl::InvalidArgumentError("CreateContainer: pid namespace mode TARGET needs target_id");
    }
    ASSIGN_OR_RETURN(dockerclient::ContainerInspect target, InspectCriContainer(ctx, ns.target_id()));
    params.pid_target_container_id = target.id;
  }
  if (config.linux().resources().oom_score_adj() < params.oom_score_adj_floor) {
    oom_.Clamp(static_cast<int>(config.linux().resources().oom_score_adj()));  // logs the clamp once
  }
  const auto& sc = config.linux().security_context();
  params.restricted_capabilities = RestrictedCapabilities(*info, sc.privileged() || AddsMissingCapabilities(sc));
  if (sc.privileged() && params.restricted_capabilities) params.host_devices = HostDeviceNodes();

  // Image volumes: Docker's own image mounts from API 1.48, elsewhere binds of unpacked
  // trees, held until the container exists and removed again if the create fails.
  // Docker 28 refuses a second image mount of one image in a container ("mount already
  // exists with name"), so further mounts of it (other sub paths) bind its tree too.
  imagevolumes::ImageVolumes::Hold image_volumes_hold;
  std::vector<std::string> unpacked_images;
  std::set<std::string> docker_mounted_images;
  absl::Cleanup undo_image_volumes = [&] {
    image_volumes_hold.Release();
    image_volumes_->RemoveUnused(ctx, unpacked_images);
  };
  for (int i = 0; i < config.mounts_size(); ++i) {
    const v1::Mount& m = config.mounts(i);
    if (m.image().image().empty()) continue;
    absl::StatusOr<dockerclient::ImageInspect> image = docker_.InspectImage(ctx, m.image().image());
    if (absl::IsNotFound(image.status())) {
      return absl::NotFoundError(absl::StrCat("image \"", m.image().image(), "\" of the image volume at ",
                                              m.container_path(), " is not present on this node; pull it first"));
    }
    RETURN_IF_ERROR(image.status());
    ImageMountSource& source = params.image_mount_sources[i];
    source.image_id = image->id;
    if (params.features.image_mounts && docker_mounted_images.insert(image->id).second) continue;
    unpacked_images.push_back(image->id);
    absl::StatusOr<std::string> path = image_volumes_->Prepare(ctx, image->id, m.image_sub_path(), image_volumes_hold);
    if (!path.ok()) return common::Annotate(path.status(), absl::StrCat("image volume at ", m.container_path()));
    source.host_path = *std::move(path);
  }
  ASSIGN_OR_RETURN(nlohmann::json body, MakeContainerCreateBody(config, sandbox_config, params));
  body_phase.Stop();

  // Docker answers a create with an unknown image by pulling nothing and failing; say it plainly.
  common::ScopedPhase image_phase(phases, "CreateContainer: image check");
  if (auto image = docker_.InspectImage(ctx, params.image); !image.ok()) {
    if (absl::IsNotFound(image.status())) {
      return absl::NotFoundError(
          absl::StrCat("image \"", params.image, "\" is not present on this node; pull it before creating the container"));
    }
    return image.status();
  }

  image_phase.Stop();

  RETURN_IF_ERROR(CreateMissingMountSources(config));
  const std::string name = MakeContainerName(sandbox_config.metadata(), config.metadata());
  common::ScopedPhase create_phase(phases, "CreateContainer: create");
  absl::StatusOr<std::string> created = docker_.CreateContainer(ctx, name, body);
  create_phase.Stop();
  if (absl::IsAlreadyExists(created.status())) {
    return absl::AlreadyExistsError(absl::StrCat("a container named ", name,
                                                 " already exists; remove it or create with another attempt number"));
  }
  if (!created.ok()) return common::Annotate(created.status(), "create container");
  // The kubelet may read the log from the start; a container without one is undone.
  if (!params.log_path.empty()) {
    common::ScopedPhase log_phase(phases, "CreateContainer: log file");
    if (absl::Status log = CreateCriLogFile(params.log_path); !log.ok()) {
      if (absl::Status removed = docker_.RemoveContainer(ctx, *created, /*force=*/true); !removed.ok()) {
        LOG_WARN << "cannot remove container " << *created << " after a failed create: " << removed.message();
      }
      return log;
    }
  }
  std::move(undo_image_volumes).Cancel();
  LOG_INFO << "created container " << name << " as " << *created;
  v1::CreateContainerResponse resp;
  resp.set_container_id(*created);
  return resp;
}

absl::StatusOr<v1::StartContainerResponse> CriService::StartContainer(const common::Context& ctx,
                                                                      const v1::StartContainerRequest& req) {
  RETURN_IF_ERROR(RequireContainerId(req.container_id(), "StartContainer"));
  // Phases for the pod start-up bench (Options::phase_sink; none in production).
  common::PhaseSink* const phases = options_.phase_sink;
  common::ScopedPhase inspect_phase(phases, "StartContainer: inspect");
  ASSIGN_OR_RETURN(dockerclient::ContainerInspect container, InspectCriContainer(ctx, req.container_id()));
  inspect_phase.Stop();
  common::ScopedPhase start_phase(phases, "StartContainer: start");
  RETURN_IF_ERROR(common::Annotate(docker_.StartContainer(ctx, container.id), "start container"));
  start_phase.Stop();
  common::ScopedPhase log_phase(phases, "StartContainer: log copy follow");
  CopyContainerLog(container);
  log_phase.Stop();
  common::ScopedPhase cgroup_phase(phases, "StartContainer: cgroup files");
  RETURN_IF_ERROR(WriteCreatedCgroupFiles(ctx, container));
  cgroup_phase.Stop();
  return v1::StartContainerResponse();
}

absl::StatusOr<v1::UpdateContainerResourcesResponse> CriService::UpdateContainerResources(
    const common::Context& ctx, const v1::UpdateContainerResourcesRequest& req) {
  RETURN_IF_ERROR(RequireContainerId(req.container_id(), "UpdateContainerResources"));
  // Windows resources do not apply on a Linux node; nothing asked, nothing to do.
  if (!req.has_linux()) return v1::UpdateContainerResourcesResponse();
  ASSIGN_OR_RETURN(nlohmann::json limits, MakeResourceLimits(req.linux()));
  ASSIGN_OR_RETURN(CgroupFileValues files, ShimCgroupFiles(req.linux()));
  ASSIGN_OR_RETURN(dockerclient::ContainerInspect container, InspectCriContainer(ctx, req.container_id()));

  // cgroup v2: the files Docker has no field for are checked before anything changes,
  // and those the shim manages are read, to be put back after Docker's update.
  std::optional<std::string> dir;
  CgroupFileValues before;
  if (const CgroupFileValues created = CgroupFilesOfLabels(container.labels);
      CgroupV2() && (!files.empty() || !created.empty())) {
    absl::StatusOr<std::string> found = CgroupV2DirOf(container);
    if (!found.ok() && !files.empty()) {
      return common::Annotate(found.status(), absl::StrCat("UpdateContainerResources: ", files.begin()->first,
                                                           " is written into the container's cgroup"));
    }
    if (found.ok()) {
      RETURN_IF_ERROR(common::Annotate(CheckCgroupFiles(*found, files), "UpdateContainerResources"));
      std::set<std::string> managed(kSetBackByDockerUpdate.begin(), kSetBackByDockerUpdate.end());
      for (const auto& [name, value] : created) managed.insert(name);
      for (const std::string& name : FilesDockerSets(limits)) managed.erase(name);
      std::vector<std::string> names;
      for (const std::string& name : managed)
        if (!files.contains(name)) names.push_back(name);
      before = ReadCgroupFiles(*found, names);
      dir = *std::move(found);
    }
  }

  if (!limits.empty()) {
    const int64_t wanted_oom = std::max<int64_t>(req.linux().oom_score_adj(), oom_.lowest_permitted());
    if (wanted_oom != container.resources.oom_score_adj) {
      LOG_WARN << "UpdateContainerResources " << container.id << ": Docker cannot change oom_score_adj of a "
               << "created container; keeping " << container.resources.oom_score_adj;
    }
    RETURN_IF_ERROR(common::Annotate(docker_.UpdateContainer(ctx, container.id, limits), "update container resources"));
  }
  if (dir) {
    std::vector<std::string> names;
    for (const auto& [name, value] : before) names.push_back(name);
    for (const auto& [name, value] : ReadCgroupFiles(*dir, names))
      if (value != before[name]) files[name] = before[name];
    RETURN_IF_ERROR(common::Annotate(WriteCgroupFiles(*dir, files), "UpdateContainerResources"));
  }
  return v1::UpdateContainerResourcesResponse();
}

absl::StatusOr<v1::StopContainerResponse> CriService::StopContainer(const common::Context& ctx,
                                                                    const v1::StopContainerRequest& req) {
  RETURN_IF_ERROR(RequireContainerId(req.container_id(), "StopContainer"));
  absl::StatusOr<dockerclient::ContainerInspect> container = docker_.InspectContainer(ctx, req.container_id());
  if (absl::IsNotFound(container.status())) return v1::StopContainerResponse();
  RETURN_IF_ERROR(container.status());
  RETURN_IF_ERROR(RequireKubernetesContainer(*container, req.container_id(), "stop", "StopPodSandbox"));
  dockerclient::StopOptions stop;
  stop.timeout_seconds = req.timeout();
  absl::Status s = docker_.StopContainer(ctx, container->id, stop);
  if (absl::IsNotFound(s)) {
    LOG_DEBUG << "StopContainer: " << req.container_id() << " is already gone";
    return v1::StopContainerResponse();
  }
  RETURN_IF_ERROR(common::Annotate(s, "stop container"));
  return v1::StopContainerResponse();
}

absl::StatusOr<v1::RemoveContainerResponse> CriService::RemoveContainer(const common::Context& ctx,
                                                                        const v1::RemoveContainerRequest& req) {
  RETURN_IF_ERROR(RequireContainerId(req.container_id(), "RemoveContainer"));
  absl::StatusOr<dockerclient::ContainerInspect> container = docker_.InspectContainer(ctx, req.container_id());
  if (absl::IsNotFound(container.status())) return v1::RemoveContainerResponse();
  RETURN_IF_ERROR(container.status());
  RETURN_IF_ERROR(RequireKubernetesContainer(*container, req.container_id(), "remove", "RemovePodSandbox"));
  absl::Status s = RemoveDockerContainer(docker_, ctx, container->id);
  if (!s.ok() && !absl::IsNotFound(s)) return common::Annotate(s, "remove container");
  RemoveUnusedImageVolumes(ctx, container->labels);
  // The kubelet removes the log file itself.
  if (options_.log_copier) options_.log_copier->Forget(container->id);
  return v1::RemoveContainerResponse();
}

}  // namespace shim
