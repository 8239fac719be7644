// Version, Status, RuntimeConfig, UpdateRuntimeConfig.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/log.h"
#include "common/status.h"
#include "dockerclient/errors.h"
#include "shim/cri_service.h"

namespace shim {

namespace {
constexpr char kRuntimeName[] = "docker";
constexpr char kCriVersion[] = "0.1.0";  // the kubelet-facing API version string of Version()
constexpr char kRuntimeApiVersion[] = "v1";
// Version and Status answer whether or not Docker does: what they ask of it gets at
// most this long, and half the time the caller has left (crictl waits 2 s in all).
constexpr absl::Duration kDockerProbeTimeout = absl::Seconds(2);

common::Context ProbeContext(const common::Context& ctx) {
  return ctx.Bounded(std::min(kDockerProbeTimeout, (ctx.deadline - absl::Now()) / 2));
}
}  // namespace

// One /info at a time, so that a burst of pod starts asks dockerd once (about 20 ms of
// its time each).
absl::StatusOr<std::shared_ptr<const dockerclient::SystemInfo>> CriService::CachedInfo(const common::Context& ctx) {
  return info_.Get(ctx, [this](const common::Context& c) { return docker_.Info(c); });
}

absl::StatusOr<std::shared_ptr<const dockerclient::VersionInfo>> CriService::DockerVersion(const common::Context& ctx) {
  auto version = docker_version_.Get(ProbeContext(ctx), [this](const common::Context& c) { return docker_.Version(c); });
  if (version.ok()) return version;
  if (auto last = docker_version_.Last()) return last;
  return version.status();
}

absl::StatusOr<EngineFeatures> CriService::Features(const common::Context& ctx) {
  ASSIGN_OR_RETURN(std::shared_ptr<const dockerclient::SystemInfo> info, CachedInfo(ctx));
  {
    std::lock_guard lock(mu_);
    if (features_ && features_info_ == info) return *features_;
  }
  ASSIGN_OR_RETURN(std::string api_version, docker_.Ping(ctx));
  EngineFeatures features = FeaturesFor(api_version, *info);
  std::lock_guard lock(mu_);
  features_ = features;
  features_info_ = std::move(info);
  return features;
}

// Answers while Docker is away, as containerd does while it cannot reach a shim: the
// kubelet does not start on a runtime whose Version fails, and crictl asks Version
// before every command (`crictl info` would not show why the node is down). Docker's
// version is the last known one, or empty before Docker ever answered.
absl::StatusOr<v1::VersionResponse> CriService::Version(const common::Context& ctx, const v1::VersionRequest&) {
  v1::VersionResponse resp;
  resp.set_version(kCriVersion);
  resp.set_runtime_name(kRuntimeName);
  resp.set_runtime_api_version(kRuntimeApiVersion);
  if (auto version = DockerVersion(ctx); version.ok()) {
    resp.set_runtime_version((*version)->version);
  } else {
    LOG_DEBUG << "Version without Docker's version: " << version.status().message();
  }
  return resp;
}

absl::StatusOr<v1::StatusResponse> CriService::Status(const common::Context& ctx, const v1::StatusRequest& req) {
  v1::StatusResponse resp;
  auto* runtime_cond = resp.mutable_status()->add_conditions();
  runtime_cond->set_type("RuntimeReady");
  absl::StatusOr<std::string> api = docker_.Ping(ProbeContext(ctx));
  runtime_cond->set_status(api.ok());
  if (!api.ok()) {
    runtime_cond->set_reason("DockerDaemonNotReady");
    runtime_cond->set_message(std::string(api.status().message()));
  }

  auto* network_cond = resp.mutable_status()->add_conditions();
  network_cond->set_type("NetworkReady");
  absl::Status net = network_.Ready();
  network_cond->set_status(net.ok());
  if (!net.ok()) {
    network_cond->set_reason("NetworkPluginNotReady");
    network_cond->set_message(std::string(net.message()));
  }

  // Runtime handlers: the default ("") and every runtime Docker knows, with rro where
  // the engine and that runtime make it (the kubelet refuses rro mounts elsewhere).
  // Docker has no per-pod user namespaces. StatusResponse.features stays unset: Docker
  // cannot do Strict supplemental groups, nor user namespaces with the host network.
  // Left out when /info does not come in time (dockerd answers pings while a stuck
  // containerd holds /info).
  if (api.ok()) {
    auto features = Features(ProbeContext(ctx));
    auto info = features.ok() ? CachedInfo(ProbeContext(ctx)) : features.status();  // cached by Features
    if (info.ok() && features.ok()) {
      std::vector<std::string> names = {""};
      names.insert(names.end(), (*info)->runtimes.begin(), (*info)->runtimes.end());
      for (const auto& name : names) {
        v1::RuntimeHandler* handler = resp.add_runtime_handlers();
        handler->set_name(name);
        handler->mutable_features()->set_recursive_read_only_mounts(features->recursive_read_only &&
                                                                    RuntimeSupportsRro(**info, name));
        handler->mutable_features()->set_user_namespaces(false);
      }
    }
  }

  // kubeadm's preflight reads "sandboxImage" (containerd's name) and warns when it is not
  // the pause image of its release; "podInfraContainerImage" is cri-dockerd's name.
  if (req.verbose()) {
    nlohmann::json config = {{"dockerEndpoint", options_.docker_endpoint},
                             {"sandboxImage", options_.pod_infra_image},
                             {"podInfraContainerImage", options_.pod_infra_image},
                             {"rootDirectory", options_.root_directory},
                             {"networkPlugin", network_.Name()},
                             {"dockerApiVersion", api.ok() ? *api : ""}};
    if (auto version = api.ok() ? DockerVersion(ctx) : docker_version_.Last(); version.ok() && *version) {
      config["dockerVersion"] = (*version)->version;
      config["dockerMinApiVersion"] = (*version)->min_api_version;
    }
    (*resp.mutable_info())["config"] = config.dump();
  }
  return resp;
}

absl::StatusOr<v1::RuntimeConfigResponse> CriService::RuntimeConfig(const common::Context& ctx,
                                                                    const v1::RuntimeConfigRequest&) {
  ASSIGN_OR_RETURN(std::shared_ptr<const dockerclient::SystemInfo> info, CachedInfo(ctx));
  v1::RuntimeConfigResponse resp;
  resp.mutable_linux()->set_cgroup_driver(info->cgroup_driver == "systemd" ? v1::SYSTEMD : v1::CGROUPFS);
  return resp;
}

absl::StatusOr<v1::UpdateRuntimeConfigResponse> CriService::UpdateRuntimeConfig(
    const common::Context&, const v1::UpdateRuntimeConfigRequest& req) {
  const std::string& cidr = req.runtime_config().network_config().pod_cidr();
  if (!cidr.empty()) {
    LOG_INFO << "pod CIDR set to " << cidr;
    network_.SetPodCidr(cidr);
  }
  return v1::UpdateRuntimeConfigResponse();
}

}  // namespace shim
