// StopPodSandbox and RemovePodSandbox: idempotent, and able to tear down the
// network of pods created before a shim restart (from their checkpoints).
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status.h"
#include "shim/creation_markers.h"
#include "shim/cri_service.h"
#include "shim/docker_removal.h"
#include "shim/naming.h"

namespace shim {

namespace {
// No grace period: the kubelet has already stopped the app containers with their own
// grace periods, and CRI has the sandbox's remaining processes force-terminated (as
// containerd does). Docker's stop with t=0 sends SIGKILL right after the stop signal
// and returns once the process is gone: well inside crictl's 10 s, which a 10 s grace
// for each container that ignores SIGTERM was not.
constexpr int64_t kSandboxStopTimeoutSeconds = 0;

absl::Status RequireId(const std::string& id, const char* rpc) {
  if (id.empty()) return absl::InvalidArgumentError(absl::StrCat(rpc, ": pod_sandbox_id is required"));
  return absl::OkStatus();
}
}  // namespace

absl::StatusOr<dockerclient::ContainerInspect> CriService::InspectSandbox(const common::Context& ctx,
                                                                          const std::string& id, Reading reading) {
  ASSIGN_OR_RETURN(dockerclient::ContainerInspect inspect, Inspect(ctx, id, reading));
  if (LabelValue(inspect.labels, kContainerTypeLabel) != kContainerTypeSandbox)
    return absl::NotFoundError(absl::StrCat("pod sandbox ", id, " not found (container ", inspect.id,
                                            " is not a pod infra container)"));
  return inspect;
}

absl::Status CriService::TearDownNetwork(const common::Context& ctx, const std::string& sandbox_id,
                                         const std::string& netns, const dockerclient::Labels& labels) {
  absl::StatusOr<SandboxCheckpoint> checkpoint = checkpoints_.Read(sandbox_id);
  if (!checkpoint.ok()) {
    // No record (lost, corrupt, or a pod from a runtime that kept none): detach
    // from the current network anyway so no address leaks.
    LOG_WARN << "pod sandbox " << sandbox_id << " has no checkpoint; tearing down with the current network config";
    SandboxCheckpoint rebuilt;
    rebuilt.sandbox_id = sandbox_id;
    rebuilt.name = LabelValue(labels, kPodNameLabel);
    rebuilt.namespace_ = LabelValue(labels, kPodNamespaceLabel);
    rebuilt.uid = LabelValue(labels, kPodUidLabel);
    rebuilt.network_plugin = network_.Name();
    checkpoint = rebuilt;
  }
  if (checkpoint->host_network || checkpoint->network_torn_down) return absl::OkStatus();
  if (checkpoint->network_plugin != network_.Name()) {
    LOG_WARN << "pod sandbox " << sandbox_id << " was networked by \"" << checkpoint->network_plugin
             << "\" but this shim runs \"" << network_.Name() << "\"; skipping network teardown";
    return absl::OkStatus();
  }
  network::PodNetworkRequest req;
  req.pod_name = checkpoint->name;
  req.pod_namespace = checkpoint->namespace_;
  req.pod_uid = checkpoint->uid;
  req.sandbox_id = sandbox_id;
  req.netns_path = netns;
  req.port_mappings = checkpoint->port_mappings;
  req.bandwidth = checkpoint->bandwidth;
  RETURN_IF_ERROR(common::Annotate(network_.TearDown(ctx, req, checkpoint->network_name),
                                   absl::StrCat("tear down network of pod sandbox ", sandbox_id)));
  checkpoint->network_torn_down = true;
  checkpoint->ip.clear();
  checkpoint->additional_ips.clear();
  // Without a file there is nothing to update: the teardown itself is what mattered.
  if (checkpoints_.Read(sandbox_id).ok()) RETURN_IF_ERROR(checkpoints_.Write(*checkpoint));
  return absl::OkStatus();
}

absl::Status CriService::StopSandbox(const common::Context& ctx, const dockerclient::ContainerInspect& sandbox) {
  dockerclient::ListContainersOptions list;
  list.all = false;  // running only
  list.label_filter = {{kSandboxIdLabel, sandbox.id}};
  ASSIGN_OR_RETURN(auto containers, docker_.ListContainers(ctx, list));
  for (const auto& c : containers) {
    absl::Status s = docker_.StopContainer(ctx, c.id, {kSandboxStopTimeoutSeconds});
    if (!s.ok() && !absl::IsNotFound(s)) return common::Annotate(s, "stop container of the pod");
  }
  // The network goes before the infra container, while its namespace still exists.
  const std::string netns =
      sandbox.state.running && sandbox.state.pid > 0 ? absl::StrCat("/proc/", sandbox.state.pid, "/ns/net") : "";
  if (sandbox.network_mode != "host") RETURN_IF_ERROR(TearDownNetwork(ctx, sandbox.id, netns, sandbox.labels));
  absl::Status stopped = docker_.StopContainer(ctx, sandbox.id, {kSandboxStopTimeoutSeconds});
  if (!stopped.ok() && !absl::IsNotFound(stopped)) return common::Annotate(stopped, "stop pod infra container");
  return absl::OkStatus();
}

absl::StatusOr<v1::StopPodSandboxResponse> CriService::StopPodSandbox(const common::Context& ctx,
                                                                      const v1::StopPodSandboxRequest& req) {
  RETURN_IF_ERROR(RequireId(req.pod_sandbox_id(), "StopPodSandbox"));
  auto sandbox = InspectSandbox(ctx, req.pod_sandbox_id());
  if (absl::IsNotFound(sandbox.status())) {
    // The container is gone; its network may not be.
    if (checkpoints_.Read(req.pod_sandbox_id()).ok())
      RETURN_IF_ERROR(TearDownNetwork(ctx, req.pod_sandbox_id(), "", {}));
    return v1::StopPodSandboxResponse();
  }
  if (!sandbox.ok()) return sandbox.status();
  RETURN_IF_ERROR(StopSandbox(ctx, *sandbox));
  LOG_INFO << "stopped pod sandbox " << sandbox->id;
  return v1::StopPodSandboxResponse();
}

absl::StatusOr<v1::RemovePodSandboxResponse> CriService::RemovePodSandbox(const common::Context& ctx,
                                                                          const v1::RemovePodSandboxRequest& req) {
  RETURN_IF_ERROR(RequireId(req.pod_sandbox_id(), "RemovePodSandbox"));
  auto sandbox = InspectSandbox(ctx, req.pod_sandbox_id());
  if (absl::IsNotFound(sandbox.status())) {
    if (checkpoints_.Read(req.pod_sandbox_id()).ok()) {
      RETURN_IF_ERROR(TearDownNetwork(ctx, req.pod_sandbox_id(), "", {}));
      RETURN_IF_ERROR(checkpoints_.Remove(req.pod_sandbox_id()));
    }
    return v1::RemovePodSandboxResponse();
  }
  if (!sandbox.ok()) return sandbox.status();
  RETURN_IF_ERROR(StopSandbox(ctx, *sandbox));

  dockerclient::ListContainersOptions list;
  list.label_filter = {{kSandboxIdLabel, sandbox->id}};
  ASSIGN_OR_RETURN(auto containers, docker_.ListContainers(ctx, list));
  for (const auto& c : containers) {
    absl::Status s = RemoveDockerContainer(docker_, ctx, c.id);
    if (!s.ok() && !absl::IsNotFound(s)) return common::Annotate(s, "remove container of the pod");
    RemoveUnusedImageVolumes(ctx, c.labels);
  }
  absl::Status removed = RemoveDockerContainer(docker_, ctx, sandbox->id);
  if (!removed.ok() && !absl::IsNotFound(removed)) return common::Annotate(removed, "remove pod infra container");
  RETURN_IF_ERROR(checkpoints_.Remove(sandbox->id));
  // A creation marker a failed rollback kept for this container is done with, unless a
  // RunPodSandbox of the same name is under way and needs its own.
  if (const std::string name = sandbox->name.substr(sandbox->name.empty() ? 0 : 1); !name.empty()) {
    std::lock_guard lock(mu_);
    if (!sandboxes_in_flight_.count(name)) CreationMarkers(options_.root_directory).Unmark(name);
  }
  LOG_INFO << "removed pod sandbox " << sandbox->id;
  return v1::RemovePodSandboxResponse();
}

}  // namespace shim
