#pragma once
// Plugin-less mode: pods stay on Docker's default bridge network and Docker
// publishes their host ports, for nodes without CNI.
#include "dockerclient/docker_client.h"
#include "shim/network/network_plugin.h"

namespace network {

class DockerBridgeNetwork : public NetworkPlugin {
 public:
  explicit DockerBridgeNetwork(dockerclient::DockerClient& docker) : docker_(docker) {}
  std::string Name() const override { return "docker"; }
  std::string DockerNetworkMode() const override { return "bridge"; }
  absl::Status Ready() override { return absl::OkStatus(); }
  absl::StatusOr<PodNetworkStatus> SetUp(const common::Context& ctx, const PodNetworkRequest& req) override;
  absl::Status TearDown(const common::Context&, const PodNetworkRequest&, const std::string&) override {
    return absl::OkStatus();  // Docker releases the address with the container
  }
  void SetPodCidr(const std::string&) override {}

 private:
  dockerclient::DockerClient& docker_;
};

}  // namespace network
