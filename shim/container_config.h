#pragma once
// Pure translation of a CRI ContainerConfig into the Docker Engine create
// request of a workload container. The only I/O is reading a Localhost seccomp
// profile; everything else the translation needs comes in ContainerCreateParams.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/cri.h"
#include "shim/capabilities.h"
#include "shim/cgroup_files.h"
#include "shim/engine_features.h"

namespace shim {

// How one CRI image mount (Mount.image) reaches Docker.
struct ImageMountSource {
  std::string image_id;   // the image's Docker ID
  // Empty: a Docker "image" mount of image_id with the mount's image_sub_path (API 1.48+).
  // Otherwise a read-only bind of this host directory: the image's unpacked tree
  // (imagevolumes/), sub path included; the container's kImageVolumesLabel lists image_id.
  std::string host_path;
};

struct ContainerCreateParams {
  std::string sandbox_id;            // the pod's infra container ID; the container joins its namespaces
  std::string image;                 // Docker's "Image" (the caller resolves the CRI image, e.g. to its ID)
  std::string cgroup_driver;         // Docker's: "systemd" or "cgroupfs"
  std::string docker_runtime;        // the sandbox's HostConfig.Runtime; empty: Docker's default
  std::string log_path;              // absolute CRI log path (log_directory + log_path); empty: none
  int oom_score_adj_floor = -1000;   // lowest oom_score_adj the host permits
  std::string seccomp_profile_root;  // base for Localhost profile refs that are not absolute (may be empty)
  std::optional<std::string> pid_target_container_id;  // Docker ID of the pid namespace's TARGET container
  EngineFeatures features;            // what the engine can do (recursive read-only mounts, CDI)
  // Set on a host whose bounding set lacks capabilities that the engine would still ask
  // runc for (capabilities.h): add_capabilities are limited to what the host grants,
  // and privileged is spelled out (AddPrivilegedWithoutTheFlag) with `host_devices`.
  const HostCapabilities* restricted_capabilities = nullptr;
  std::vector<std::string> host_devices;
  std::map<int, ImageMountSource> image_mount_sources;  // by index in config.mounts, for each image mount
};

// Returns the /containers/create body, labels included. HostConfig.OomScoreAdj
// holds the requested value raised to params.oom_score_adj_floor: a caller that
// wants to log the clamp compares it with linux.resources.oom_score_adj.
// INVALID_ARGUMENT naming the CRI field for input Docker cannot honour as asked
// (missing metadata or image, relative paths, image sub paths leaving the image, ID-mapped
// mounts, recursive read-only mounts the engine cannot make, bad capability or CDI device
// names, TARGET pid mode without a target, Strict supplemental groups...);
// FAILED_PRECONDITION for CDI devices on an engine without CDI.
absl::StatusOr<nlohmann::json> MakeContainerCreateBody(const runtime::v1::ContainerConfig& config,
                                                       const runtime::v1::PodSandboxConfig& sandbox_config,
                                                       const ContainerCreateParams& params);

// The cgroup limits of linux.resources as Docker HostConfig fields (CpuPeriod,
// CpuQuota, CpuShares, CpusetCpus, CpusetMems, Memory, MemorySwap); zero values are
// left out. Shared by create and UpdateContainerResources (Docker cannot change
// oom_score_adj of a container). INVALID_ARGUMENT naming the field for bad values.
absl::StatusOr<nlohmann::json> MakeResourceLimits(const runtime::v1::LinuxContainerResources& resources);

// The cgroup v2 files linux.resources asks for that no Docker field carries, which the
// shim writes into the container's cgroup itself (cgroup_files.h): hugetlb.<size>.max of
// each hugepage limit, then every unified key (they win, as in runc) but pids.max
// (Docker's PidsLimit) and memory.swap.max beside a memory limit (Docker's MemorySwap).
// Without a memory limit memory.swap.max is written too: Docker cannot express it.
// INVALID_ARGUMENT naming the field for a key that is no controller's file name
// (CheckCgroupFileName) or a malformed page size.
absl::StatusOr<CgroupFileValues> ShimCgroupFiles(const runtime::v1::LinuxContainerResources& resources);

// What a container was created with of those files, kept in its kCgroupFilesLabel
// (naming.h) until StartContainer writes them: JSON {"<file>": "<value>"}.
std::string CgroupFilesLabel(const CgroupFileValues& files);
// The files a container's labels carry; none when it has no such label (created before
// the label existed) or the label is not such JSON.
CgroupFileValues CgroupFilesOfLabels(const std::map<std::string, std::string>& labels);

}  // namespace shim
