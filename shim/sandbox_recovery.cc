// At start, before serving: what a crash in the middle of RunPodSandbox left behind.
// RunPodSandbox marks the infra container's name (creation_markers.h), creates it, writes
// a `pending` checkpoint, starts the container, sets up the network and writes the final
// checkpoint. The kubelet saw the call fail and runs the pod again as a new sandbox, so
// nothing of a half-created one is ever used. A complete checkpoint without a container
// (removed behind the shim's back) is kept: the kubelet still lists that pod, and its
// Stop/Remove tears the network down.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status.h"
#include "shim/creation_markers.h"
#include "shim/cri_service.h"
#include "shim/naming.h"

namespace shim {

namespace {
// A file set aside as corrupt is kept this long for an operator to look at.
constexpr absl::Duration kCorruptCheckpointMaxAge = absl::Hours(7 * 24);
}  // namespace

absl::Status CriService::DiscardHalfCreatedSandbox(const common::Context& ctx, const std::string& id,
                                                   const std::string& why) {
  std::string netns;
  absl::StatusOr<dockerclient::ContainerInspect> inspect = docker_.InspectContainer(ctx, id);
  if (inspect.ok() && inspect->state.running && inspect->state.pid > 0)
    netns = absl::StrCat("/proc/", inspect->state.pid, "/ns/net");
  else if (!inspect.ok() && !absl::IsNotFound(inspect.status()))
    return inspect.status();
  // CNI DEL first, while the namespace is there; plugins release addresses without it too.
  if (checkpoints_.Read(id).ok()) RETURN_IF_ERROR(TearDownNetwork(ctx, id, netns, {}));
  if (inspect.ok()) {
    absl::Status removed = docker_.RemoveContainer(ctx, id, /*force=*/true);
    if (!removed.ok() && !absl::IsNotFound(removed))
      return common::Annotate(removed, "remove pod infra container");
  }
  RETURN_IF_ERROR(checkpoints_.Remove(id));
  LOG_WARN << "removed half-created pod sandbox " << id << " (" << why << "): "
           << (inspect.ok() ? "infra container removed" : "no infra container") << ", network released, checkpoint deleted";
  return absl::OkStatus();
}

void CriService::CleanUpAfterCrash(const common::Context& ctx) {
  for (const std::string& path : checkpoints_.RemoveInterruptedWrites())
    LOG_INFO << "removed " << path << ", a checkpoint write a crash interrupted";
  for (const std::string& path : network_.RemoveInterruptedWrites())
    LOG_INFO << "removed " << path << ", a CNI cache write a crash interrupted";
  for (const std::string& path : checkpoints_.RemoveCorruptOlderThan(kCorruptCheckpointMaxAge))
    LOG_INFO << "removed " << path << ", set aside as corrupt more than 7 days ago";

  dockerclient::ListContainersOptions list;
  list.label_filter = {{kContainerTypeLabel, kContainerTypeSandbox}};
  absl::StatusOr<std::vector<dockerclient::ContainerSummary>> sandboxes = docker_.ListContainers(ctx, list);
  if (!sandboxes.ok()) {
    LOG_WARN << "cannot look for half-created pod sandboxes: " << sandboxes.status().message();
    return;
  }
  std::set<std::string> present;
  for (const auto& c : *sandboxes) present.insert(c.id);

  for (const std::string& id : checkpoints_.List()) {
    absl::StatusOr<SandboxCheckpoint> checkpoint = checkpoints_.Read(id);
    if (!checkpoint.ok() || !checkpoint->pending) continue;
    const std::string why = present.count(id) ? "RunPodSandbox did not finish" : "RunPodSandbox did not finish, no container";
    if (absl::Status s = DiscardHalfCreatedSandbox(ctx, id, why); !s.ok())
      LOG_ERROR << "cannot clean up half-created pod sandbox " << id << ": " << s.message();
    present.erase(id);
  }
  // Created by this shim, which died before it wrote the checkpoint.
  CreationMarkers markers(options_.root_directory);
  for (const std::string& name : markers.List()) {
    bool done = true;
    for (const auto& c : *sandboxes) {
      if (!present.count(c.id) || std::find(c.names.begin(), c.names.end(), "/" + name) == c.names.end()) continue;
      if (checkpoints_.Read(c.id).ok()) continue;
      if (absl::Status s = DiscardHalfCreatedSandbox(ctx, c.id, "created, no checkpoint"); !s.ok()) {
        LOG_ERROR << "cannot clean up half-created pod sandbox " << c.id << ": " << s.message();
        done = false;  // the next start tries again
        continue;
      }
      present.erase(c.id);
    }
    if (done) markers.Unmark(name);
  }
  // Addresses whose sandbox is neither a container nor a checkpoint any more.
  for (const network::RecordedAttachment& a : network_.RecordedAttachments()) {
    if (present.count(a.sandbox_id) || checkpoints_.Read(a.sandbox_id).ok()) continue;
    network::PodNetworkRequest req;
    req.sandbox_id = a.sandbox_id;
    if (absl::Status s = network_.TearDown(ctx, req, a.network_name); !s.ok()) {
      LOG_ERROR << "cannot release the network of vanished pod sandbox " << a.sandbox_id << ": " << s.message();
    } else {
      LOG_WARN << "released network " << a.network_name << " of pod sandbox " << a.sandbox_id
               << ", which has neither a container nor a checkpoint";
    }
  }
}

}  // namespace shim
