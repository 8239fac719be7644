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
constexpr absl::Duration kInfoCacheTtl = absl::Seconds(10);
}  // namespace

// One /info at a time, so that a burst of pod starts asks dockerd once (about 20 ms of
// its time each): while it is asked, callers get the answer from before, or wait for
// this one when there is none yet. After a failed fetch the next caller asks again.
absl::StatusOr<std::shared_ptr<const dockerclient::SystemInfo>> CriService::CachedInfo(const common::Context& ctx) {
  const auto now = [this] { return options_.clock ? options_.clock() : absl::Now(); };
  absl::MutexLock lock(&info_mu_);
  while (info_fetching_ && !info_) {  // the first answer is being asked: wait for it
    if (info_fetched_.WaitWithDeadline(&info_mu_, ctx.deadline) && info_fetching_ && !info_) {
      return dockerclient::DeadlineError("GET /info");
    }
  }
  if (info_ && (info_fetching_ || now() - info_time_ < kInfoCacheTtl)) return info_;
  info_fetching_ = true;
  info_mu_.Unlock();
  absl::StatusOr<dockerclient::SystemInfo> fetched = docker_.Info(ctx);
  info_mu_.Lock();
  info_fetching_ = false;
  info_fetched_.SignalAll();
  if (!fetched.ok()) return fetched.status();
  info_ = std::make_shared<const dockerclient::SystemInfo>(*std::move(fetched));
  info_time_ = now();
  return info_;
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

absl::StatusOr<v1::VersionResponse> CriService::Version(const common::Context& ctx, const v1::VersionRequest&) {
  ASSIGN_OR_RETURN(dockerclient::VersionInfo version, docker_.Version(ctx));
  v1::VersionResponse resp;
  resp.set_version(kCriVersion);
  resp.set_runtime_name(kRuntimeName);
  resp.set_runtime_version(version.version);
  resp.set_runtime_api_version(kRuntimeApiVersion);
  return resp;
}

absl::StatusOr<v1::StatusResponse> CriService::Status(const common::Context& ctx, const v1::StatusRequest& req) {
  v1::StatusResponse resp;
  auto* runtime_cond = resp.mutable_status()->add_conditions();
  runtime_cond->set_type("RuntimeReady");
  absl::StatusOr<std::string> api = docker_.Ping(ctx);
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
  if (api.ok()) {
    auto info = CachedInfo(ctx);
    auto features = Features(ctx);
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
    if (api.ok()) {
      if (auto version = docker_.Version(ctx); version.ok()) {
        config["dockerVersion"] = version->version;
        config["dockerMinApiVersion"] = version->min_api_version;
      }
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
