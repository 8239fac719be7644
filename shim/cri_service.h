#pragma once
// CriService holds the logic of every implemented CRI call. Each method takes the
// request proto and returns the response or an absl::Status; the gRPC adapter
// (grpc_services.cc) converts statuses in one place. Methods live in one file per
// RPC family: runtime_info.cc, images.cc, image_pull.cc, image_fs_info.cc,
// sandbox_run.cc, sandbox_stop_remove.cc, sandbox_status.cc, container_lifecycle.cc,
// container_status.cc, exec_sync.cc, streaming_rpcs.cc, container_stats.cc,
// sandbox_stats.cc, metrics.cc, sandbox_resources.cc, container_events.cc; helpers in
// sandbox_recovery.cc (start-up clean-up) and sandbox_adoption.cc (pods of cri-dockerd).
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/context.h"
#include "common/phase_timer.h"
#include "containerdclient/containerd_client.h"
#include "dockerclient/docker_client.h"
#include "api/cri.h"
#include "shim/cached_fetch.h"
#include "shim/capabilities.h"
#include "shim/checkpoint_store.h"
#include "shim/engine_features.h"
#include "shim/network/netns_addresses.h"
#include "shim/network/network_plugin.h"
#include "shim/oom_score.h"
#include "shim/stats/cgroup.h"
#include "shim/view/derived.h"
#include "streaming/runtime.h"

namespace shim::logs {
class LogCopier;
}

namespace shim::stats {
class WritableLayerCollector;
}

namespace shim::imagevolumes {
class ImageVolumes;
}  // namespace shim::imagevolumes
namespace shim::storage {
class EngineStorage;
}  // namespace shim::storage

namespace shim::oom {
class OomKills;
}  // namespace shim::oom

namespace shim::events {
struct CriEvent;
}

namespace shim::view {
class ContainerView;
}

namespace shim {

namespace v1 = ::runtime::v1;

class StatsSampler;
struct ContainerFigures;
struct PodFigures;

struct Options {
  std::string docker_endpoint = "unix:///var/run/docker.sock";
  std::string pod_infra_image = "registry.k8s.io/pause:3.10";
  std::string root_directory = "/var/lib/dockershim";
  // cri-dockerd's state directory, read only: its checkpoints of pods it started are
  // imported (checkpoint_store.h). Empty: none (main.cc passes /var/lib/cri-dockerd).
  std::string cri_dockerd_root_directory;
  std::string network_plugin = "cni";
  absl::Duration image_pull_progress_deadline = absl::Minutes(1);
  // Base directory for seccomp "localhost/" profiles given as relative paths.
  std::string seccomp_profile_root = "/var/lib/kubelet/seccomp";
  // The lowest oom_score_adj the host permits; probed when unset.
  std::optional<int> oom_score_adj_floor;
  // Sends a signal to a host process (ExecSync kills what outlives its timeout); kill(2) when unset.
  std::function<int(int pid, int signal)> signal_process;
  // Issues the URLs of Exec, Attach and PortForward; those fail while it is unset.
  streaming::UrlIssuer* streaming = nullptr;
  // Writes containers' CRI logs; without it the log files stay empty.
  logs::LogCopier* log_copier = nullptr;
  // The kernel's record of OOM kills; without it only Docker's OOMKilled flag counts.
  oom::OomKills* oom_kills = nullptr;
  // Measures containers' writable layers in the background; without it container stats
  // carry no writable-layer figures.
  stats::WritableLayerCollector* writable_layers = nullptr;
  // Connects to the containerd of Docker's containerd image store (its socket path), which
  // says where images and writable layers are; containerdclient::Connect when unset.
  std::function<std::unique_ptr<containerdclient::ContainerdClient>(const std::string& address)> connect_containerd;
  // Relists from memory: status calls read the view's held inspects while it is live
  // (lists go through the ViewClient the service is given). Null: status calls ask Docker.
  view::ContainerView* container_view = nullptr;
  // Reads a pod's addresses from its network namespace, for pods adopted from another
  // runtime (sandbox_adoption.cc); null: a network::NetlinkAddressReader of the service's own.
  network::NetnsAddressReader* netns_addresses = nullptr;
  // Where stats read /proc, and a prefix of the cgroup mount points it lists (a fake
  // tree in tests).
  std::string proc_root = "/proc";
  std::string cgroup_prefix;
  // The time stats samples are taken at, the /info cache's, and adoption's retry
  // timer's; absl::Now when unset.
  std::function<absl::Time()> clock;
  // Receives the duration of each step of RunPodSandbox, CreateContainer and
  // StartContainer (common/phase_timer.h); null in production (the pod start-up
  // bench sets it).
  common::PhaseSink* phase_sink = nullptr;
};

// The CRI log path of a container: `log_directory` (absolute) joined with `log_path`
// (relative, not leaving it); "" when either is unset. INVALID_ARGUMENT otherwise.
absl::StatusOr<std::string> CriLogPath(const std::string& log_directory, const std::string& log_path);
// Creates the file (and its directories) if missing, replacing a symlink to Docker's
// json log that an older shim or cri-dockerd left.
absl::Status CreateCriLogFile(const std::string& path);

// The wire form of a list answer that calls share, made by the first call that sends
// it (the gRPC layer): the kubelet relists every second, mostly with nothing changed.
struct WireForm {
  std::once_flag made;
  std::string bytes;
};
template <typename Resp>
struct ListAnswer {
  std::shared_ptr<const Resp> message;
  std::shared_ptr<WireForm> wire;  // set when every call gets this `message` until the view changes
};

class CriService {
 public:
  // `docker` and `network` must outlive the service.
  CriService(Options options, dockerclient::DockerClient& docker, network::NetworkPlugin& network);
  ~CriService();
  // Prepares the state directory and resumes container log copies; call once before serving.
  absl::Status Init();

  const Options& options() const { return options_; }

  // What the engine can express (engine_features.h), from the negotiated API version and
  // /info; recomputed when the cached /info is refreshed (runtime_info.cc).
  absl::StatusOr<EngineFeatures> Features(const common::Context& ctx);

  // runtime_info.cc
  absl::StatusOr<v1::VersionResponse> Version(const common::Context& ctx, const v1::VersionRequest& req);
  absl::StatusOr<v1::StatusResponse> Status(const common::Context& ctx, const v1::StatusRequest& req);
  absl::StatusOr<v1::RuntimeConfigResponse> RuntimeConfig(const common::Context& ctx,
                                                          const v1::RuntimeConfigRequest& req);
  absl::StatusOr<v1::UpdateRuntimeConfigResponse> UpdateRuntimeConfig(const common::Context& ctx,
                                                                      const v1::UpdateRuntimeConfigRequest& req);

  // images.cc
  absl::StatusOr<v1::ListImagesResponse> ListImages(const common::Context& ctx, const v1::ListImagesRequest& req);
  absl::StatusOr<v1::ImageStatusResponse> ImageStatus(const common::Context& ctx, const v1::ImageStatusRequest& req);
  absl::StatusOr<v1::RemoveImageResponse> RemoveImage(const common::Context& ctx, const v1::RemoveImageRequest& req);
  // image_pull.cc
  absl::StatusOr<v1::PullImageResponse> PullImage(const common::Context& ctx, const v1::PullImageRequest& req);
  // image_fs_info.cc
  absl::StatusOr<v1::ImageFsInfoResponse> ImageFsInfo(const common::Context& ctx, const v1::ImageFsInfoRequest& req);

  // sandbox_run.cc
  absl::StatusOr<v1::RunPodSandboxResponse> RunPodSandbox(const common::Context& ctx,
                                                          const v1::RunPodSandboxRequest& req);
  // sandbox_stop_remove.cc
  absl::StatusOr<v1::StopPodSandboxResponse> StopPodSandbox(const common::Context& ctx,
                                                            const v1::StopPodSandboxRequest& req);
  absl::StatusOr<v1::RemovePodSandboxResponse> RemovePodSandbox(const common::Context& ctx,
                                                                const v1::RemovePodSandboxRequest& req);
  // sandbox_status.cc
  absl::StatusOr<v1::PodSandboxStatusResponse> PodSandboxStatus(const common::Context& ctx,
                                                                const v1::PodSandboxStatusRequest& req);
  absl::StatusOr<v1::ListPodSandboxResponse> ListPodSandbox(const common::Context& ctx,
                                                            const v1::ListPodSandboxRequest& req);
  // The same answer, shared: while the container view does not change, every call that
  // lists it all gets the very same message and wire form (ListAnswer).
  absl::StatusOr<ListAnswer<v1::ListPodSandboxResponse>> SharedListPodSandbox(const common::Context& ctx,
                                                                             const v1::ListPodSandboxRequest& req);

  // container_lifecycle.cc
  absl::StatusOr<v1::CreateContainerResponse> CreateContainer(const common::Context& ctx,
                                                              const v1::CreateContainerRequest& req);
  absl::StatusOr<v1::StartContainerResponse> StartContainer(const common::Context& ctx,
                                                            const v1::StartContainerRequest& req);
  absl::StatusOr<v1::StopContainerResponse> StopContainer(const common::Context& ctx,
                                                          const v1::StopContainerRequest& req);
  absl::StatusOr<v1::RemoveContainerResponse> RemoveContainer(const common::Context& ctx,
                                                              const v1::RemoveContainerRequest& req);
  absl::StatusOr<v1::UpdateContainerResourcesResponse> UpdateContainerResources(
      const common::Context& ctx, const v1::UpdateContainerResourcesRequest& req);
  // container_status.cc
  absl::StatusOr<v1::ContainerStatusResponse> ContainerStatus(const common::Context& ctx,
                                                              const v1::ContainerStatusRequest& req);
  absl::StatusOr<v1::ListContainersResponse> ListContainers(const common::Context& ctx,
                                                            const v1::ListContainersRequest& req);
  // As SharedListPodSandbox.
  absl::StatusOr<ListAnswer<v1::ListContainersResponse>> SharedListContainers(const common::Context& ctx,
                                                                            const v1::ListContainersRequest& req);
  // exec_sync.cc
  absl::StatusOr<v1::ExecSyncResponse> ExecSync(const common::Context& ctx, const v1::ExecSyncRequest& req);
  // container_checkpoint.cc
  absl::StatusOr<v1::CheckpointContainerResponse> CheckpointContainer(const common::Context& ctx,
                                                                      const v1::CheckpointContainerRequest& req);
  // container_logs.cc
  absl::StatusOr<v1::ReopenContainerLogResponse> ReopenContainerLog(const common::Context& ctx,
                                                                    const v1::ReopenContainerLogRequest& req);
  // streaming_rpcs.cc
  absl::StatusOr<v1::ExecResponse> Exec(const common::Context& ctx, const v1::ExecRequest& req);
  absl::StatusOr<v1::AttachResponse> Attach(const common::Context& ctx, const v1::AttachRequest& req);
  absl::StatusOr<v1::PortForwardResponse> PortForward(const common::Context& ctx, const v1::PortForwardRequest& req);

  // container_stats.cc
  absl::StatusOr<v1::ContainerStatsResponse> ContainerStats(const common::Context& ctx,
                                                            const v1::ContainerStatsRequest& req);
  absl::StatusOr<v1::ListContainerStatsResponse> ListContainerStats(const common::Context& ctx,
                                                                    const v1::ListContainerStatsRequest& req);
  // sandbox_stats.cc
  absl::StatusOr<v1::PodSandboxStatsResponse> PodSandboxStats(const common::Context& ctx,
                                                              const v1::PodSandboxStatsRequest& req);
  absl::StatusOr<v1::ListPodSandboxStatsResponse> ListPodSandboxStats(const common::Context& ctx,
                                                                      const v1::ListPodSandboxStatsRequest& req);
  // metrics.cc
  absl::StatusOr<v1::ListMetricDescriptorsResponse> ListMetricDescriptors(const common::Context& ctx,
                                                                          const v1::ListMetricDescriptorsRequest& req);
  absl::StatusOr<v1::ListPodSandboxMetricsResponse> ListPodSandboxMetrics(const common::Context& ctx,
                                                                          const v1::ListPodSandboxMetricsRequest& req);
  // sandbox_resources.cc
  absl::StatusOr<v1::UpdatePodSandboxResourcesResponse> UpdatePodSandboxResources(
      const common::Context& ctx, const v1::UpdatePodSandboxResourcesRequest& req);
  // container_events.cc: a GetContainerEvents message. What cannot be read (the pod or
  // a container is gone) is left out; for a deleted pod, its ID and metadata remain.
  v1::ContainerEventResponse BuildContainerEvent(const common::Context& ctx, const events::CriEvent& event);
  // container_logs.cc, on the event hub's thread (its listener): an app container that
  // Docker started has its log copied, also when no StartContainer did it (the shim was
  // killed during that call, or restarted while the container was only created).
  void OnContainerEvent(const events::CriEvent& event);

 private:
  // Docker's /info changes rarely; cached briefly (and shared, not copied: it holds
  // the raw JSON) so Status, RuntimeConfig and PodSandboxStatus stay cheap.
  absl::StatusOr<std::shared_ptr<const dockerclient::SystemInfo>> CachedInfo(const common::Context& ctx);
  // Docker's version: cached, asked under a short bound, the last known one when
  // dockerd does not answer (runtime_info.cc).
  absl::StatusOr<std::shared_ptr<const dockerclient::VersionInfo>> DockerVersion(const common::Context& ctx);
  bool IsPinned(const std::vector<std::string>& repo_tags) const;

  // Sandbox helpers (sandbox_run.cc / sandbox_stop_remove.cc).
  absl::StatusOr<std::string> DockerRuntimeFor(const common::Context& ctx, const std::string& handler);
  absl::Status EnsurePauseImage(const common::Context& ctx);
  // Which inspect a caller needs: one that acts on a container needs Docker's state now;
  // a status call takes what a list would show (the view's last read, when it has one).
  enum class Reading { kDocker, kForStatus };
  absl::StatusOr<dockerclient::ContainerInspect> Inspect(const common::Context& ctx, const std::string& id,
                                                        Reading reading);
  // Inspects `id` (ID or unique prefix); NOT_FOUND unless it is a pod infra container.
  absl::StatusOr<dockerclient::ContainerInspect> InspectSandbox(const common::Context& ctx, const std::string& id,
                                                               Reading reading = Reading::kDocker);
  // Stops the pod's containers, detaches its network, stops the infra container.
  absl::Status StopSandbox(const common::Context& ctx, const dockerclient::ContainerInspect& sandbox);
  // Detaches the network recorded in the checkpoint (once); `netns` may be empty.
  absl::Status TearDownNetwork(const common::Context& ctx, const std::string& sandbox_id, const std::string& netns,
                               const dockerclient::Labels& labels);
  // What status calls need of a container's image, cached by image ID. Docker merges
  // an image's labels into its containers' labels; CRI reports only the pod's own.
  // Labels never change for an image ID; its repo digests (in image_ref) may, so image
  // facts, and the lists converted with them, are made again now and then.
  static constexpr absl::Duration kImageFactsRefresh = absl::Minutes(1);
  struct ImageFacts {
    dockerclient::Labels labels;
    std::string image_ref;  // CRI image_ref (ToImageRef)
    std::string image_tag;  // first repo tag; empty when untagged
    absl::Time fetched_at;
    bool answered = false;  // Docker answered (found or not); else empty for now
  };
  ImageFacts FactsOfImage(const common::Context& ctx, const std::string& image_id);
  static dockerclient::Labels WithoutLabelsOf(const ImageFacts& image, const dockerclient::Labels& labels);

  absl::StatusOr<std::string> IssueStreamingUrl(streaming::Request request);
  // What this host can grant when the engine would ask runc for more (capabilities.h);
  // null when it would not. Logs that once, when `asked` (privileged, ALL or a missing one).
  const HostCapabilities* RestrictedCapabilities(const dockerclient::SystemInfo& info, bool asked);
  bool AddsMissingCapabilities(const v1::LinuxContainerSecurityContext& sc) const;
  // Creates the container's CRI log file and has the copier fill it (container_logs.cc).
  void CopyContainerLog(const dockerclient::ContainerInspect& container);
  void ResumeLogCopies(const common::Context& ctx);
  struct ListedSandboxes;
  // The sandboxes known only from their checkpoints (none of `listed`'s infra
  // containers), NOTREADY.
  std::vector<v1::PodSandbox> CheckpointOnlySandboxes(const std::string& id_prefix, const ListedSandboxes& listed);
  // Inspects `id` (ID or unique prefix); NOT_FOUND unless it is a CRI app container.
  absl::StatusOr<dockerclient::ContainerInspect> InspectCriContainer(const common::Context& ctx,
                                                                     const std::string& id,
                                                                     Reading reading = Reading::kDocker);
  // ListContainers once the pod filter is resolved: `sandbox_id` is a full ID, or empty.
  absl::StatusOr<ListAnswer<v1::ListContainersResponse>> ListContainersOf(const common::Context& ctx,
                                                                        const v1::ContainerFilter& filter,
                                                                        const std::string& sandbox_id);
  // The lists behind ListPodSandbox and ListContainers, converted: every one the view
  // holds, made once per change of the view (view/derived.h); from Docker, narrowed
  // by `narrowed`, when the view is not live. Callers filter them.
  struct ListedSandboxes {
    v1::ListPodSandboxResponse all;
    std::shared_ptr<WireForm> wire = std::make_shared<WireForm>();  // of `all`
    std::vector<std::string> names;                // of each item: Docker's, without the "/"
    std::vector<dockerclient::Labels> own_labels;  // of each item: the image's left out
    std::set<std::string> ids;  // every infra container listed, named like a sandbox or not
    // The checkpoints whose infra container this list lacks, worked out once per list
    // and per change of the checkpoint directories (CheckpointStore::Ids).
    struct MissingCheckpoints {
      std::mutex mu;
      CheckpointStore::IdList of;      // guarded by mu
      std::vector<std::string> ids;    // guarded by mu
    };
    std::shared_ptr<MissingCheckpoints> missing_checkpoints = std::make_shared<MissingCheckpoints>();
  };
  struct ListedContainers {
    v1::ListContainersResponse all;
    std::shared_ptr<WireForm> wire = std::make_shared<WireForm>();  // of `all`
    std::vector<dockerclient::Labels> own_labels;  // of each item: label selectors match these
  };
  // The container view's version; unset when there is no view or it is not live.
  std::optional<uint64_t> ViewVersion() const;
  // Docker's list of the CRI containers of `type` (kContainerTypeSandbox or
  // kContainerTypeContainer), stopped ones too: all of them, or those an ID prefix and a
  // label selector pick (the selector when it fits in Docker's request; callers match
  // it again against the containers' own labels).
  static dockerclient::ListContainersOptions CriListOptions(
      const char* type, const std::string& id_prefix = "",
      const google::protobuf::Map<std::string, std::string>& selector = {});
  absl::StatusOr<std::shared_ptr<const ListedSandboxes>> ListSandboxes(const common::Context& ctx,
                                                                       const dockerclient::ListContainersOptions& narrowed);
  absl::StatusOr<std::shared_ptr<const ListedContainers>> ListCriContainers(
      const common::Context& ctx, const dockerclient::ListContainersOptions& narrowed);
  // cgroup v2 files Docker has no field for (container_lifecycle.cc, cgroup_files.h).
  bool CgroupV2() const { return cgroup_layout_ && cgroup_layout_->version() == stats::CgroupVersion::kV2; }
  // The cgroup v2 directory of container `c`, from its process and checked to be its own;
  // FAILED_PRECONDITION when it does not run (a stopped container has no cgroup).
  absl::StatusOr<std::string> CgroupV2DirOf(const dockerclient::ContainerInspect& c) const;
  // At start: writes the files `created` was created with (kCgroupFilesLabel) once runc
  // has made its cgroup; stops the container when they cannot be written.
  absl::Status WriteCreatedCgroupFiles(const common::Context& ctx, const dockerclient::ContainerInspect& created);
  // The directory that names the image store's file system (ImageFsInfo's fs_id, and
  // the writable layers' in stats): image_fs_info.cc. DockerRootDir while containerd
  // cannot say where its snapshotter is.
  std::string ImageFsMountpoint(const common::Context& ctx, const dockerclient::SystemInfo& info);
  // Stats helpers (container_stats.cc, sandbox_stats.cc): containers as ListContainers
  // lists them, pods with their containers, and what was read of each.
  absl::StatusOr<std::vector<ContainerFigures>> FiguresOfContainers(const common::Context& ctx,
                                                                    const v1::ContainerFilter& filter);
  absl::StatusOr<std::vector<PodFigures>> FiguresOfPods(const common::Context& ctx,
                                                        std::vector<v1::PodSandbox> sandboxes);
  absl::StatusOr<std::vector<PodFigures>> FiguresOfReadyPods(const common::Context& ctx,
                                                             const v1::PodSandboxFilter& filter);
  // Removes the unpacked image trees that `labels` (of a removed container) bound, unless others use them.
  void RemoveUnusedImageVolumes(const common::Context& ctx, const dockerclient::Labels& labels);
  // sandbox_recovery.cc: at start, removes what a crash left of half-created sandboxes
  // (their infra container, network and checkpoint), network attachments of sandboxes
  // that are gone, and corrupt checkpoints set aside a week ago.
  void CleanUpAfterCrash(const common::Context& ctx);
  absl::Status DiscardHalfCreatedSandbox(const common::Context& ctx, const std::string& id, const std::string& why);
  // sandbox_adoption.cc. A running pod on CNI that another runtime (cri-dockerd)
  // networked has no IP of ours: its checkpoint is cri-dockerd's (imported) or missing.
  bool WantsAdoption(const dockerclient::ContainerInspect& sandbox,
                     const absl::StatusOr<SandboxCheckpoint>& known) const;
  // Takes the pod's IPs from the CNI cache, else from its network namespace, and records
  // them (CheckpointStore::Adopt); `known` unchanged when none are found, and then not
  // looked for again for a while.
  absl::StatusOr<SandboxCheckpoint> AdoptPodNetwork(const common::Context& ctx,
                                                    const dockerclient::ContainerInspect& sandbox,
                                                    absl::StatusOr<SandboxCheckpoint> known);
  // Undoes a RunPodSandbox that failed after creating `id`; false when the infra container
  // could not be removed.
  [[nodiscard]] bool RollBackSandbox(const std::string& id, bool network_attached,
                                     const network::PodNetworkRequest& net_req, const std::string& network_name);

  Options options_;
  dockerclient::DockerClient& docker_;
  network::NetworkPlugin& network_;
  CheckpointStore checkpoints_;
  OomScoreClamp oom_;
  const std::optional<HostCapabilities> host_capabilities_;  // unset when /proc did not say
  std::atomic<bool> capability_clamp_logged_{false};
  std::unique_ptr<storage::EngineStorage> storage_;  // where images and writable layers are
  std::unique_ptr<StatsSampler> stats_;
  std::unique_ptr<imagevolumes::ImageVolumes> image_volumes_;  // image mounts on engines before API 1.48

  static constexpr absl::Duration kInfoCacheTtl = absl::Seconds(10);
  CachedFetch<dockerclient::SystemInfo> info_;
  // Docker's version changes only when dockerd restarts: Version asks it at most once
  // a minute, and answers with the last known one while dockerd does not answer.
  static constexpr absl::Duration kDockerVersionCacheTtl = absl::Minutes(1);
  CachedFetch<dockerclient::VersionInfo> docker_version_;

  mutable std::mutex mu_;
  std::optional<EngineFeatures> features_;                         // guarded by mu_
  std::shared_ptr<const dockerclient::SystemInfo> features_info_;  // the /info features_ came from
  struct FsUsage {
    absl::Time measured_at = absl::InfinitePast();
    std::vector<std::string> dirs;  // measured
    uint64_t bytes = 0, inodes = 0;
    absl::Duration kept_for;  // until measured again (image_fs_info.cc)
  };
  // Its own lock, held through a walk of the layer store (seconds on a big node): a
  // second ImageFsInfo waits for the first's figures, no other call waits at all.
  std::mutex fs_usage_mu_;
  FsUsage fs_usage_;  // guarded by fs_usage_mu_
  // Set by a pull or an image removal: the next ImageFsInfo measures again. Not under
  // fs_usage_mu_, which a walk holds for seconds.
  std::atomic<bool> fs_usage_changed_{false};
  std::map<std::string, ImageFacts> image_facts_;  // by image ID; guarded by mu_
  view::Derived<ListedSandboxes> listed_sandboxes_;
  view::Derived<ListedContainers> listed_containers_;
  std::optional<stats::CgroupLayout> cgroup_layout_;  // unset when the host's cgroup mounts are not found
  // Names of the infra containers this process's RunPodSandbox calls are making, from
  // before the Docker create until the call returns. ListPodSandbox leaves them out, as
  // containerd lists a sandbox only once RunPodSandbox made it ready: otherwise the
  // kubelet's PLEG sees it NOTREADY while it is created (a "ContainerDied" event for the
  // sandbox), then READY before its network is set up (a status without an IP).
  std::multiset<std::string> sandboxes_in_flight_;  // guarded by mu_
  // Adoption (sandbox_adoption.cc): one at a time; when each failed sandbox was last tried.
  std::unique_ptr<network::NetnsAddressReader> own_netns_addresses_;
  network::NetnsAddressReader& netns_addresses_;
  std::mutex adoption_mu_;
  std::map<std::string, absl::Time> adoption_failures_;  // guarded by adoption_mu_
};

}  // namespace shim
