#pragma once
// Pod networking through CNI plugins, as kubelet's dockershim and cri-dockerd do
// it: the first network config in the conf dir, ADD through its plugin chain at
// RunPodSandbox, DEL at StopPodSandbox. Plugins run only there, never on Status.
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/phase_timer.h"
#include "shim/network/cni_config.h"
#include "shim/network/cni_exec.h"
#include "shim/network/network_plugin.h"

namespace network {

struct CniOptions {
  std::vector<std::string> bin_dirs;
  std::string conf_dir = "/etc/cni/net.d";
  // What DEL needs later, per attachment, in libcni's layout
  // (<cache_dir>/results/<network>-<container ID>-eth0, "kind": "cniCacheV1"), so
  // pods set up by cri-dockerd can be torn down after switching, and back.
  std::string cache_dir = "/var/lib/cni/cache";
  // How often the conf dir is checked for changes (a stat of the dir and its config
  // files; files are parsed again only when one changed).
  absl::Duration rescan_interval = absl::Seconds(1);
  // Written into each cache file ("createdBy"): RecordedAttachments lists only those with
  // this value, so shims sharing the cache dir (one per Docker) never release each
  // other's. main.cc makes it unique per root directory.
  std::string owner = "dockershim";
  // Receives each plugin run ("cni ADD bridge") and the cache write of SetUp
  // (common/phase_timer.h); null in production (the pod start-up bench sets it).
  common::PhaseSink* phase_sink = nullptr;
};

class CniNetwork : public NetworkPlugin {
 public:
  // Without an executor, plugins run as processes from `options.bin_dirs`.
  explicit CniNetwork(CniOptions options, std::unique_ptr<PluginExecutor> executor = nullptr);

  std::string Name() const override { return "cni"; }
  std::string DockerNetworkMode() const override { return "none"; }
  // FAILED_PRECONDITION "no CNI network config found in <dir>" (or why each file was
  // rejected) until a valid config exists.
  absl::Status Ready() override;
  // ADD through each plugin in order. On failure every plugin gets a DEL so that no
  // address stays allocated, and the error names the failing plugin.
  absl::StatusOr<PodNetworkStatus> SetUp(const common::Context& ctx, const PodNetworkRequest& req) override;
  // DEL through the plugins in reverse order with the config, capability arguments
  // and result cached at SetUp (the current config when nothing is cached), then
  // drops the cache. `req.netns_path` may name a namespace that is gone (plugins
  // still release addresses) and must be empty once the infra container has
  // stopped: a /proc/<pid>/ns/net path might by then belong to another process.
  absl::Status TearDown(const common::Context& ctx, const PodNetworkRequest& req,
                        const std::string& network_name) override;
  // CHECK through the plugins with the cached result (cniVersion 0.4.0 and later);
  // NOT_FOUND when nothing is cached for the pod.
  absl::Status Check(const common::Context& ctx, const PodNetworkRequest& req, const std::string& network_name);
  // Sent as "ipRanges" to plugins declaring that capability; comma-separated for
  // dual-stack, as kubelet passes it.
  void SetPodCidr(const std::string& cidr) override;
  // The cache files marked with this shim's `owner`.
  std::vector<RecordedAttachment> RecordedAttachments() const override;
  // WriteFileAtomically's temp files (<cache file>.tmp.XXXXXX) in the results dir.
  std::vector<std::string> RemoveInterruptedWrites() override;
  // The libcni result file <cache_dir>/results/<network>-<sandbox_id>-<interface>, for any
  // network and interface (the first by name when there are several); the addresses
  // of the interface it names.
  absl::StatusOr<CachedAttachment> CachedAttachmentOf(const std::string& sandbox_id) const override;

  std::string CacheFile(const std::string& network_name, const std::string& container_id) const;

 private:
  struct Attachment;  // a plugin invocation's parameters besides the config
  struct Cached;      // a cache file's content

  absl::StatusOr<std::shared_ptr<const CniNetworkConfig>> CurrentConfig();
  // Absent when there is no usable cache file (a broken one is logged).
  std::optional<Cached> ReadCache(const std::string& network_name, const std::string& container_id) const;
  absl::StatusOr<std::string> Run(const common::Context& ctx, const CniNetworkConfig& config, size_t index,
                                  const std::string& command, const Attachment& attachment,
                                  const nlohmann::json& prev_result);
  // DEL through all plugins in reverse order; stops at the first failure unless
  // `best_effort`, which tries every plugin and returns OK.
  absl::Status DelAll(const common::Context& ctx, const CniNetworkConfig& config, const Attachment& attachment,
                      const nlohmann::json& prev_result, bool best_effort);

  const CniOptions options_;
  const std::unique_ptr<PluginExecutor> executor_;

  std::mutex mu_;
  absl::Time last_scan_ = absl::InfinitePast();
  std::string conf_dir_signature_;
  bool scanned_ = false;
  absl::StatusOr<std::shared_ptr<const CniNetworkConfig>> config_;
  std::string pod_cidr_;
};

}  // namespace network
