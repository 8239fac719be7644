// RunPodSandbox: the pod's infra container, its network, its checkpoint.
// Every step that fails undoes the steps before it.
#include <mutex>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/status.h"
#include "shim/creation_markers.h"
#include "shim/cri_service.h"
#include "shim/naming.h"
#include "shim/sandbox_config.h"

namespace shim {

namespace {

// kubelet's OOM score for pod infra containers (qos.PodInfraOOMAdj).
constexpr int kPodInfraOomScoreAdj = -998;
// Rollback runs on its own clock: the caller's deadline may be what failed.
constexpr absl::Duration kRollbackTimeout = absl::Seconds(30);

}  // namespace

absl::StatusOr<std::string> CriService::DockerRuntimeFor(const common::Context& ctx, const std::string& handler) {
  if (handler.empty()) return std::string();
  ASSIGN_OR_RETURN(std::shared_ptr<const dockerclient::SystemInfo> info, CachedInfo(ctx));
  for (const auto& name : info->runtimes)
    if (name == handler) return handler;
  return absl::InvalidArgumentError(absl::StrCat(
      "runtime handler \"", handler, "\" is not a Docker runtime on this node (Docker knows: ",
      absl::StrJoin(info->runtimes, ", "), "); add it under \"runtimes\" in /etc/docker/daemon.json"));
}

absl::Status CriService::EnsurePauseImage(const common::Context& ctx) {
  auto image = docker_.InspectImage(ctx, options_.pod_infra_image);
  if (image.ok()) return absl::OkStatus();
  if (!absl::IsNotFound(image.status())) return image.status();
  LOG_INFO << "pulling pod infra image " << options_.pod_infra_image;
  v1::PullImageRequest pull;
  pull.mutable_image()->set_image(options_.pod_infra_image);
  return common::Annotate(PullImage(ctx, pull).status(),
                          absl::StrCat("pull pod infra image ", options_.pod_infra_image));
}

bool CriService::RollBackSandbox(const std::string& id, bool network_attached,
                                 const network::PodNetworkRequest& net_req, const std::string& network_name) {
  common::Context ctx = common::Context::WithTimeout(kRollbackTimeout);
  if (network_attached) {
    if (absl::Status s = network_.TearDown(ctx, net_req, network_name); !s.ok())
      LOG_ERROR << "rollback of pod " << net_req.pod_namespace << "/" << net_req.pod_name
                << ": network teardown failed: " << s.message();
  }
  bool removed = true;
  if (absl::Status s = docker_.RemoveContainer(ctx, id, /*force=*/true); !s.ok() && !absl::IsNotFound(s)) {
    LOG_ERROR << "rollback: cannot remove infra container " << id << " (the next start will): " << s.message();
    removed = false;
  }
  if (absl::Status s = checkpoints_.Remove(id); !s.ok())
    LOG_ERROR << "rollback: cannot remove checkpoint of " << id << ": " << s.message();
  return removed;
}

absl::StatusOr<v1::RunPodSandboxResponse> CriService::RunPodSandbox(const common::Context& ctx,
                                                                    const v1::RunPodSandboxRequest& req) {
  if (!req.has_config()) return absl::InvalidArgumentError("RunPodSandbox: config is required");
  const v1::PodSandboxConfig& config = req.config();
  RETURN_IF_ERROR(common::Annotate(CheckNameParts(config.metadata(), nullptr), "RunPodSandbox"));
  RETURN_IF_ERROR(common::Annotate(CheckLabelsSize(config.labels(), config.annotations()), "RunPodSandbox"));
  const bool host_network = IsHostNetwork(config);
  // The containers' CRI logs go under it (CriLogPath); a relative one would land
  // wherever the shim runs.
  if (!config.log_directory().empty() && config.log_directory().front() != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("RunPodSandbox: log_directory \"", config.log_directory(), "\" must be an absolute path"));
  }

  // Phases for the pod start-up bench (Options::phase_sink; none in production).
  common::PhaseSink* const phases = options_.phase_sink;
  common::ScopedPhase checks_phase(phases, "RunPodSandbox: checks and create body");

  // Everything that can be checked without side effects comes first.
  ASSIGN_OR_RETURN(std::string docker_runtime, DockerRuntimeFor(ctx, req.runtime_handler()));
  ASSIGN_OR_RETURN(std::shared_ptr<const dockerclient::SystemInfo> info, CachedInfo(ctx));
  SandboxCreateParams params;
  params.image = options_.pod_infra_image;
  params.cgroup_driver = info->cgroup_driver;
  params.docker_runtime = docker_runtime;
  params.network_mode = network_.DockerNetworkMode();
  params.oom_score_adj = oom_.Clamp(kPodInfraOomScoreAdj);
  params.seccomp_profile_root = options_.seccomp_profile_root;
  if (config.linux().security_context().privileged()) {
    params.restricted_capabilities = RestrictedCapabilities(*info, /*asked=*/true);
    if (params.restricted_capabilities) params.host_devices = HostDeviceNodes();
  }
  ASSIGN_OR_RETURN(nlohmann::json body, MakeSandboxCreateBody(config, params));
  body["Labels"] = MakeLabels(config.labels(), config.annotations(),
                              {{kContainerTypeLabel, kContainerTypeSandbox}, {kContainerNameLabel, kSandboxContainerName}});
  ASSIGN_OR_RETURN(std::vector<network::PortMapping> ports, ToPortMappings(config.port_mappings()));
  ASSIGN_OR_RETURN(std::optional<network::Bandwidth> bandwidth, BandwidthFromAnnotations(config.annotations()));
  if (!host_network) {
    if (absl::Status ready = network_.Ready(); !ready.ok())
      return absl::FailedPreconditionError(absl::StrCat("pod network is not ready: ", ready.message()));
  }

  checks_phase.Stop();
  common::ScopedPhase image_phase(phases, "RunPodSandbox: pause image check");
  RETURN_IF_ERROR(EnsurePauseImage(ctx));
  image_phase.Stop();

  // Create. A container left with the same name by an earlier failed attempt is replaced.
  const std::string name = MakeSandboxName(config.metadata());
  CreationMarkers markers(options_.root_directory);
  common::ScopedPhase marker_phase(phases, "RunPodSandbox: creation marker");
  RETURN_IF_ERROR(common::Annotate(markers.Mark(name), "RunPodSandbox"));
  marker_phase.Stop();
  {
    std::lock_guard lock(mu_);
    sandboxes_in_flight_.insert(name);
  }
  // Kept when the rollback could not remove the container (dockerd going away): the
  // next start's clean-up then knows it is ours and removes it.
  bool keep_marker = false;
  absl::Cleanup unmark = [&] {
    if (!keep_marker) markers.Unmark(name);
    std::lock_guard lock(mu_);
    sandboxes_in_flight_.erase(sandboxes_in_flight_.find(name));
  };
  common::ScopedPhase create_phase(phases, "RunPodSandbox: infra create");
  absl::StatusOr<std::string> created = docker_.CreateContainer(ctx, name, body);
  create_phase.Stop();
  if (absl::IsAlreadyExists(created.status())) {
    // Only a container known to be stopped is replaced; its network and
    // checkpoint go with it so no address leaks.
    ASSIGN_OR_RETURN(dockerclient::ContainerInspect stale, docker_.InspectContainer(ctx, name));
    if (stale.state.running)
      return absl::AlreadyExistsError(absl::StrCat("pod sandbox ", name, " already runs as ", stale.id));
    LOG_WARN << "replacing stale pod infra container " << name << " (" << stale.id << ") left by an earlier attempt";
    RETURN_IF_ERROR(common::Annotate(StopSandbox(ctx, stale), "stop stale pod infra container"));
    RETURN_IF_ERROR(common::Annotate(docker_.RemoveContainer(ctx, stale.id, /*force=*/true),
                                     "remove stale pod infra container"));
    RETURN_IF_ERROR(checkpoints_.Remove(stale.id));
    created = docker_.CreateContainer(ctx, name, body);
  }
  if (!created.ok()) return common::Annotate(created.status(), "create pod infra container");
  const std::string id = *created;

  // The checkpoint comes before start, so a crash after start still leaves what teardown
  // needs; it stays `pending` until the sandbox is complete, so the next start can tell.
  SandboxCheckpoint checkpoint;
  checkpoint.pending = true;
  checkpoint.sandbox_id = id;
  checkpoint.name = config.metadata().name();
  checkpoint.namespace_ = config.metadata().namespace_();
  checkpoint.uid = config.metadata().uid();
  checkpoint.host_network = host_network;
  checkpoint.port_mappings = ports;
  checkpoint.bandwidth = bandwidth;
  checkpoint.network_plugin = network_.Name();
  network::PodNetworkRequest net_req;
  net_req.pod_name = checkpoint.name;
  net_req.pod_namespace = checkpoint.namespace_;
  net_req.pod_uid = checkpoint.uid;
  net_req.sandbox_id = id;
  net_req.port_mappings = ports;
  net_req.bandwidth = bandwidth;
  if (config.has_linux()) net_req.cgroup_parent = config.linux().cgroup_parent();
  auto roll_back = [&](bool network_attached, const std::string& network_name) {
    keep_marker = !RollBackSandbox(id, network_attached, net_req, network_name);
  };

  common::ScopedPhase pending_phase(phases, "RunPodSandbox: checkpoint write (pending)");
  if (absl::Status s = checkpoints_.Write(checkpoint); !s.ok()) {
    roll_back(false, "");
    return common::Annotate(s, "write pod sandbox checkpoint");
  }
  pending_phase.Stop();
  common::ScopedPhase start_phase(phases, "RunPodSandbox: infra start");
  if (absl::Status s = docker_.StartContainer(ctx, id); !s.ok()) {
    roll_back(false, "");
    return common::Annotate(s, "start pod infra container");
  }
  start_phase.Stop();

  std::string attached_network;  // set once the plugin attached the pod
  if (!host_network) {
    common::ScopedPhase netns_phase(phases, "RunPodSandbox: netns lookup (inspect)");
    auto inspect = docker_.InspectContainer(ctx, id);
    netns_phase.Stop();
    if (!inspect.ok() || !inspect->state.running || inspect->state.pid <= 0) {
      roll_back(false, "");
      return inspect.ok() ? absl::InternalError(absl::StrCat("pod infra container exited right after start: ",
                                                            inspect->state.error))
                          : common::Annotate(inspect.status(), "inspect pod infra container");
    }
    net_req.netns_path = absl::StrCat("/proc/", inspect->state.pid, "/ns/net");
    common::ScopedPhase network_phase(phases, "RunPodSandbox: network SetUp (CNI ADD chain + cache)");
    absl::StatusOr<network::PodNetworkStatus> attached = network_.SetUp(ctx, net_req);
    network_phase.Stop();
    if (!attached.ok()) {
      roll_back(false, "");  // the plugin released what it had allocated
      return common::Annotate(attached.status(), absl::StrCat("set up pod network (", network_.Name(), ")"));
    }
    attached_network = attached->network_name;
    checkpoint.network_name = attached->network_name;
    checkpoint.netns_path = net_req.netns_path;
    checkpoint.ip = attached->ip;
    checkpoint.additional_ips = attached->additional_ips;
  }
  checkpoint.pending = false;
  common::ScopedPhase final_phase(phases, "RunPodSandbox: checkpoint write (final)");
  if (absl::Status s = checkpoints_.Write(checkpoint); !s.ok()) {
    roll_back(!host_network, attached_network);
    return common::Annotate(s, "write pod sandbox checkpoint");
  }
  final_phase.Stop();
  LOG_INFO << "pod sandbox " << checkpoint.namespace_ << "/" << checkpoint.name << " running as " << id
           << (host_network ? " (host network)" : absl::StrCat(" with IP ", checkpoint.ip));
  v1::RunPodSandboxResponse resp;
  resp.set_pod_sandbox_id(id);
  return resp;
}

}  // namespace shim
