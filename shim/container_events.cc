// The payload of GetContainerEvents, as containerd sends it: the event with the
// statuses of its pod and the pod's containers after it, built by the status RPCs.
#include "common/log.h"
#include "shim/cri_service.h"
#include "shim/events/cri_event.h"
#include "shim/naming.h"

namespace shim {

v1::ContainerEventResponse CriService::BuildContainerEvent(const common::Context& ctx, const events::CriEvent& event) {
  v1::ContainerEventResponse resp;
  resp.set_container_id(event.container_id);
  resp.set_container_event_type(event.type);
  resp.set_created_at(event.created_at);

  v1::PodSandboxStatusRequest pod;
  pod.set_pod_sandbox_id(event.sandbox_id);
  absl::StatusOr<v1::PodSandboxStatusResponse> pod_status = PodSandboxStatus(ctx, pod);
  if (pod_status.ok()) {
    *resp.mutable_pod_sandbox_status() = std::move(*pod_status->mutable_status());
  } else if (event.is_sandbox && event.type == v1::CONTAINER_DELETED_EVENT) {
    // The kubelet drops the pod from its cache when this status's ID is the deleted
    // one; what remains of the pod is what the event tells.
    v1::PodSandboxStatus& gone = *resp.mutable_pod_sandbox_status();
    gone.set_id(event.sandbox_id);
    gone.set_state(v1::SANDBOX_NOTREADY);
    *gone.mutable_metadata() = SandboxMetadataOf(LabelValue(event.attributes, "name"), event.attributes);
  } else {
    // The kubelet skips an event without a pod status; its relist catches up.
    LOG_DEBUG << "container event of " << event.container_id << ": pod " << event.sandbox_id << ": "
              << pod_status.status().message();
  }

  if (!pod_status.ok()) return resp;  // no pod: its containers are not listed either
  // The pod's full ID is known: no second inspect to resolve it.
  v1::ContainerFilter filter;
  absl::StatusOr<ListAnswer<v1::ListContainersResponse>> containers =
      ListContainersOf(ctx, filter, resp.pod_sandbox_status().id());
  if (!containers.ok()) {
    LOG_DEBUG << "container event of " << event.container_id << ": containers of pod " << event.sandbox_id << ": "
              << containers.status().message();
    return resp;
  }
  for (const v1::Container& c : containers->message->containers()) {
    v1::ContainerStatusRequest status;
    status.set_container_id(c.id());
    absl::StatusOr<v1::ContainerStatusResponse> s = ContainerStatus(ctx, status);
    if (s.ok()) *resp.add_containers_statuses() = std::move(*s->mutable_status());  // else removed meanwhile
  }
  return resp;
}

}  // namespace shim
