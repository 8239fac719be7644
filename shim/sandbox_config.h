#pragma once
// Pure translation of a CRI PodSandboxConfig into the Docker Engine create
// request of the pod's infra (pause) container. No I/O: everything the
// translation needs from Docker or the node comes in SandboxCreateParams.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/cri.h"
#include "shim/capabilities.h"
#include "shim/network/network_plugin.h"

namespace shim {

struct SandboxCreateParams {
  std::string image;                 // the pod infra image reference
  std::string cgroup_driver;         // Docker's: "systemd" or "cgroupfs"
  std::string docker_runtime;        // Docker runtime for the handler; empty: Docker's default
  std::string network_mode;          // NetworkPlugin::DockerNetworkMode(): "none" or "bridge"
  int oom_score_adj = -998;          // already clamped to what the host permits
  std::string seccomp_profile_root;  // base for Localhost profile refs that are not absolute (may be empty)
  // As ContainerCreateParams: set, a privileged pod is spelled out without Docker's flag.
  const HostCapabilities* restricted_capabilities = nullptr;
  std::vector<std::string> host_devices;
};

// Returns the /containers/create body. INVALID_ARGUMENT with the field's name for
// bad input (missing metadata, bad cgroup parent, unreadable seccomp profile,
// unsupported namespace mode, port out of range...).
absl::StatusOr<nlohmann::json> MakeSandboxCreateBody(const runtime::v1::PodSandboxConfig& config,
                                                     const SandboxCreateParams& params);

// The cgroup parent in the form Docker's cgroup driver wants:
//  systemd:  "/kubepods/burstable/pod12" -> "kubepods-burstable-pod12.slice";
//            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12.slice" -> its last part
//  cgroupfs: a path as is; "kubepods-burstable-pod12.slice" -> "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12.slice"
absl::StatusOr<std::string> ConvertCgroupParent(const std::string& parent, const std::string& cgroup_driver);

// CRI port mappings as the network plugin takes them (protocol names lowercase).
absl::StatusOr<std::vector<network::PortMapping>> ToPortMappings(
    const google::protobuf::RepeatedPtrField<runtime::v1::PortMapping>& mappings);

// Pod bandwidth from the kubernetes.io/ingress-bandwidth and egress-bandwidth
// annotations ("10M", "1Gi", ...); nullopt when neither is set.
absl::StatusOr<std::optional<network::Bandwidth>> BandwidthFromAnnotations(
    const google::protobuf::Map<std::string, std::string>& annotations);

// resolv.conf content for the pod's DNS config (servers, searches, options).
std::string MakeResolvConf(const runtime::v1::DNSConfig& dns);

bool IsHostNetwork(const runtime::v1::PodSandboxConfig& config);

}  // namespace shim
