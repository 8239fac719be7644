#pragma once
// How a pod sandbox gets its network. CniNetwork runs CNI plugins;
// DockerBridgeNetwork leaves the pod on Docker's own bridge network.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/context.h"

namespace network {

struct PortMapping {
  std::string protocol = "tcp";  // "tcp", "udp", "sctp"
  int container_port = 0;
  int host_port = 0;
  std::string host_ip;  // empty: all addresses

  bool operator==(const PortMapping&) const = default;
};

struct Bandwidth {
  int64_t ingress_bits_per_second = 0;  // 0: unlimited
  int64_t egress_bits_per_second = 0;

  bool operator==(const Bandwidth&) const = default;
};

struct PodNetworkRequest {
  std::string pod_name, pod_namespace, pod_uid;
  std::string sandbox_id;  // the infra container's ID (CNI ContainerID)
  std::string netns_path;  // /proc/<pid>/ns/net or Docker's SandboxKey
  std::vector<PortMapping> port_mappings;
  std::optional<Bandwidth> bandwidth;
  std::string cgroup_parent;
};

struct PodNetworkStatus {
  std::string ip;                           // primary, IPv4 first when both exist
  std::vector<std::string> additional_ips;  // the rest, in result order
  std::string network_name;                 // the CNI network (conflist "name") that was used
  std::string interface = "eth0";
};

// An attachment the plugin keeps a record of (what SetUp cached for TearDown).
struct RecordedAttachment {
  std::string network_name, sandbox_id;
};

// What the plugin's cache says of a pod's attachment, whoever made it (this shim, or
// cri-dockerd through libcni).
struct CachedAttachment {
  std::string file;          // where it was read
  PodNetworkStatus network;  // `ip` empty when the cached result names no address
};

class NetworkPlugin {
 public:
  virtual ~NetworkPlugin() = default;
  // "cni", "docker".
  virtual std::string Name() const = 0;
  // The Docker NetworkMode for non-host-network infra containers: "none" when the
  // plugin wires the namespace itself, "bridge" when Docker does (and publishes ports).
  virtual std::string DockerNetworkMode() const = 0;
  // OK when pods can be networked; otherwise the reason (e.g. no CNI config yet).
  virtual absl::Status Ready() = 0;
  // Attaches the pod; on failure nothing is left allocated.
  virtual absl::StatusOr<PodNetworkStatus> SetUp(const common::Context& ctx, const PodNetworkRequest& req) = 0;
  // Detaches the pod from `network_name` (as recorded at SetUp). Idempotent.
  virtual absl::Status TearDown(const common::Context& ctx, const PodNetworkRequest& req,
                                const std::string& network_name) = 0;
  virtual void SetPodCidr(const std::string& cidr) = 0;
  // The attachments this shim made and has not torn down, so that those of sandboxes
  // that vanished can be; none for a plugin that keeps no record.
  virtual std::vector<RecordedAttachment> RecordedAttachments() const { return {}; }
  // Deletes what writes of those records a crash interrupted left (only safe before
  // serving); returns the paths.
  virtual std::vector<std::string> RemoveInterruptedWrites() { return {}; }
  // The attachment of `sandbox_id` that the plugin's cache records, to whichever network:
  // NOT_FOUND when none is (always, for a plugin that keeps no record), INVALID_ARGUMENT
  // when the record is unusable (not JSON, malformed).
  virtual absl::StatusOr<CachedAttachment> CachedAttachmentOf(const std::string& sandbox_id) const {
    return absl::NotFoundError("the " + Name() + " network plugin keeps no record of pods' addresses");
  }
};

}  // namespace network
