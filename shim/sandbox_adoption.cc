// Pods another runtime networked: a node switched from cri-dockerd keeps its running
// pods (same container names, labels and CNI cache), but cri-dockerd records no IP in
// its checkpoint (it enters the pod's namespace each time it reports one). Here the IPs
// are looked for once, at the first status call that lacks them, and recorded
// (CheckpointStore::Adopt), so that later calls answer from memory, as for the pods
// this shim started:
//   1. libcni's cached result for the sandbox, to whichever network: what the plugins gave;
//   2. else the pod's namespace: the global addresses of the interface CNI named (eth0),
//      read with netlink on a dedicated thread (network::NetnsAddressReader), no process.
// When neither has one, the pod is reported without an IP, as before, and not looked at
// again for kAdoptionRetry: a relist storm does not enter namespaces in a loop.
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/no_wait.h"
#include "shim/cri_service.h"
#include "shim/naming.h"
#include "shim/network/cni_config.h"

namespace shim {

namespace {

constexpr absl::Duration kAdoptionRetry = absl::Seconds(30);
// What CNI names the pod's interface unless its cache says otherwise (and cri-dockerd's).
constexpr char kDefaultInterface[] = "eth0";

struct FoundNetwork {
  network::PodIps ips;
  std::string network_name;  // empty when only the namespace told
  std::string source;        // for the log
};

// The pod's IPs from the plugin's cache, else from the namespace at `netns_path`;
// NOT_FOUND saying why neither had one.
absl::StatusOr<FoundNetwork> FindPodNetwork(const network::NetworkPlugin& network,
                                            network::NetnsAddressReader& netns_addresses,
                                            const std::string& sandbox_id, const std::string& netns_path) {
  FoundNetwork found;
  std::string ifname = kDefaultInterface;
  std::vector<std::string> why;
  absl::StatusOr<network::CachedAttachment> cached = network.CachedAttachmentOf(sandbox_id);
  if (cached.ok()) {
    found.network_name = cached->network.network_name;
    ifname = cached->network.interface;
    if (!cached->network.ip.empty()) {
      found.ips = {cached->network.ip, cached->network.additional_ips};
      found.source = absl::StrCat("the CNI cache (", cached->file, ")");
      return found;
    }
    why.push_back(absl::StrCat(cached->file, " names no IP"));
  } else {
    if (!absl::IsNotFound(cached.status()))
      LOG_WARN << "ignoring the CNI cache of sandbox " << sandbox_id << ": " << cached.status().message();
    why.push_back(std::string(cached.status().message()));
  }
  absl::StatusOr<std::vector<std::string>> addresses = netns_addresses.GlobalAddresses(netns_path, ifname);
  if (addresses.ok() && !addresses->empty()) {
    found.ips = network::OrderPodIps(*std::move(addresses));
    found.source = absl::StrCat("the network namespace (", ifname, " in ", netns_path, "; ", why.front(), ")");
    return found;
  }
  why.push_back(addresses.ok() ? absl::StrCat(ifname, " in ", netns_path, " has no global address")
                               : std::string(addresses.status().message()));
  return absl::NotFoundError(absl::StrJoin(why, "; "));
}

}  // namespace

bool CriService::WantsAdoption(const dockerclient::ContainerInspect& sandbox,
                               const absl::StatusOr<SandboxCheckpoint>& known) const {
  if (network_.Name() != "cni" || !sandbox.state.running || sandbox.network_mode == "host") return false;
  if (absl::IsNotFound(known.status())) return true;
  return known.ok() && known->adopted_from == kAdoptedFromCriDockerd && known->ip.empty() && !known->host_network &&
         !known->network_torn_down;
}

absl::StatusOr<SandboxCheckpoint> CriService::AdoptPodNetwork(const common::Context& ctx,
                                                              const dockerclient::ContainerInspect& sandbox,
                                                              absl::StatusOr<SandboxCheckpoint> known) {
  // Adoption waits for Docker, a namespace and other calls' adoptions (under adoption_mu_),
  // and records failures: never tried at once.
  if (!common::MayWait()) return known;
  const absl::Time now = options_.clock ? options_.clock() : absl::Now();
  std::lock_guard lock(adoption_mu_);
  if (auto it = adoption_failures_.find(sandbox.id); it != adoption_failures_.end() && now - it->second < kAdoptionRetry)
    return known;
  // What another call did while this one waited for the lock (adopted it, stopped it).
  known = checkpoints_.Read(sandbox.id);
  if (!WantsAdoption(sandbox, known)) return known;
  // Its process now (a status may have been answered from the view's last read).
  absl::StatusOr<dockerclient::ContainerInspect> live = docker_.InspectContainer(ctx, sandbox.id);
  if (!live.ok() || !live->state.running || live->state.pid <= 0) return known;

  const std::string pod = absl::StrCat(LabelValue(sandbox.labels, kPodNamespaceLabel), "/",
                                       LabelValue(sandbox.labels, kPodNameLabel), " (sandbox ", sandbox.id, ")");
  const std::string netns_path = absl::StrCat("/proc/", live->state.pid, "/ns/net");
  absl::StatusOr<FoundNetwork> found = FindPodNetwork(network_, netns_addresses_, sandbox.id, netns_path);
  if (!found.ok()) {
    for (auto it = adoption_failures_.begin(); it != adoption_failures_.end();)
      it = now - it->second >= kAdoptionRetry ? adoption_failures_.erase(it) : std::next(it);
    adoption_failures_[sandbox.id] = now;
    LOG_WARN << "pod " << pod << " was not started by this shim and no IP of it was found (" << found.status().message()
             << "); reported without one, looked for again in " << kAdoptionRetry;
    return known;
  }
  adoption_failures_.erase(sandbox.id);

  SandboxCheckpoint adopted;
  if (known.ok()) {
    adopted = *std::move(known);
  } else {
    adopted.sandbox_id = sandbox.id;
    adopted.name = LabelValue(sandbox.labels, kPodNameLabel);
    adopted.namespace_ = LabelValue(sandbox.labels, kPodNamespaceLabel);
    adopted.uid = LabelValue(sandbox.labels, kPodUidLabel);
    adopted.network_plugin = network_.Name();
    adopted.adopted_from = kAdoptedFromLabels;
  }
  if (!found->network_name.empty()) adopted.network_name = found->network_name;
  adopted.netns_path = netns_path;
  adopted.ip = found->ips.primary;
  adopted.additional_ips = found->ips.additional;
  absl::StatusOr<bool> written = checkpoints_.Adopt(adopted);
  const std::string kept = !written.ok() ? absl::StrCat("kept in memory only: ", written.status().message())
                           : *written    ? absl::StrCat("recorded in ", checkpoints_.Directory(), "/", sandbox.id)
                                         : "kept in memory only (the shared checkpoint directory holds cri-dockerd's file)";
  std::vector<std::string> ips = {adopted.ip};
  ips.insert(ips.end(), adopted.additional_ips.begin(), adopted.additional_ips.end());
  LOG_INFO << "adopted pod " << pod << " from " << (known.ok() ? "cri-dockerd's checkpoint" : "its labels")
           << ": IPs " << absl::StrJoin(ips, ", ") << " from " << found->source << "; " << kept;
  return adopted;
}

}  // namespace shim
