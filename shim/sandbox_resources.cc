// UpdatePodSandboxResources: the pod-level resources after an in-place pod resize
// (Kubernetes 1.33+), sent once the kubelet has resized the pod's cgroup itself. As
// containerd does (it records them in its sandbox store and relays them to NRI plugins),
// the shim validates and records them, in the sandbox checkpoint, and PodSandboxStatus
// reports them in its verbose info. Nothing of them maps to the infra container: it has
// no resources of its own (RunPodSandbox gives it none, as containerd and cri-dockerd
// do), and pod-wide limits copied onto pause would only constrain pause, inside the pod
// cgroup that already carries them. Nor are they written into the pod's cgroup: the
// kubelet has written it (CRI: "called after the kubelet reconfigures the pod-level
// cgroups"), with the overhead that `resources` leaves out, and containerd and CRI-O
// write nothing either.
#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "shim/container_config.h"
#include "shim/cri_service.h"

namespace shim {
namespace {

// Checked as a container's resources are (values Docker would refuse), then written as
// CRI's JSON mapping writes them, with the proto's field names.
absl::StatusOr<nlohmann::json> Record(const v1::LinuxContainerResources& resources, const char* field) {
  const std::string what = absl::StrCat("UpdatePodSandboxResources: ", field);
  RETURN_IF_ERROR(common::Annotate(MakeResourceLimits(resources).status(), what));
  RETURN_IF_ERROR(common::Annotate(ShimCgroupFiles(resources).status(), what));
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string text;
  if (!google::protobuf::util::MessageToJsonString(resources, &text, options).ok())
    return absl::InvalidArgumentError(absl::StrCat(what, ": a string is not valid UTF-8"));
  return nlohmann::json::parse(text);
}

}  // namespace

absl::StatusOr<v1::UpdatePodSandboxResourcesResponse> CriService::UpdatePodSandboxResources(
    const common::Context& ctx, const v1::UpdatePodSandboxResourcesRequest& req) {
  if (req.pod_sandbox_id().empty())
    return absl::InvalidArgumentError("UpdatePodSandboxResources: pod_sandbox_id is required");
  ASSIGN_OR_RETURN(nlohmann::json overhead, Record(req.overhead(), "overhead"));
  ASSIGN_OR_RETURN(nlohmann::json resources, Record(req.resources(), "resources"));
  ASSIGN_OR_RETURN(dockerclient::ContainerInspect sandbox, InspectSandbox(ctx, req.pod_sandbox_id()));
  absl::StatusOr<SandboxCheckpoint> checkpoint = checkpoints_.Read(sandbox.id);
  if (!checkpoint.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("UpdatePodSandboxResources: pod sandbox ", sandbox.id,
                                                      " has no checkpoint to record them in: ",
                                                      checkpoint.status().message()));
  }
  checkpoint->pod_resources = {{"overhead", std::move(overhead)}, {"resources", std::move(resources)}};
  RETURN_IF_ERROR(common::Annotate(checkpoints_.Write(*checkpoint), "UpdatePodSandboxResources"));
  return v1::UpdatePodSandboxResourcesResponse();
}

}  // namespace shim
