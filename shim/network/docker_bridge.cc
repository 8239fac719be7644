#include "shim/network/docker_bridge.h"

#include "common/status.h"

namespace network {

absl::StatusOr<PodNetworkStatus> DockerBridgeNetwork::SetUp(const common::Context& ctx,
                                                            const PodNetworkRequest& req) {
  ASSIGN_OR_RETURN(dockerclient::ContainerInspect inspect, docker_.InspectContainer(ctx, req.sandbox_id));
  PodNetworkStatus status;
  status.network_name = "bridge";
  status.ip = inspect.ip_address;
  if (!inspect.ipv6_address.empty()) {
    if (status.ip.empty()) status.ip = inspect.ipv6_address;
    else status.additional_ips.push_back(inspect.ipv6_address);
  }
  if (status.ip.empty())
    return absl::InternalError("Docker assigned no address on its bridge network to the pod's infra container");
  return status;
}

}  // namespace network
