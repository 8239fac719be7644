#include "shim/events/cri_event.h"

#include "shim/naming.h"

namespace shim::events {

namespace v1 = runtime::v1;

std::optional<CriEvent> ToCriEvent(const dockerclient::DockerEvent& event) {
  if (event.type != "container") return std::nullopt;
  CriEvent cri;
  if (event.action == "create") {
    cri.type = v1::CONTAINER_CREATED_EVENT;
  } else if (event.action == "start") {
    cri.type = v1::CONTAINER_STARTED_EVENT;
  } else if (event.action == "die") {  // every exit, whether stopped, killed or ended
    cri.type = v1::CONTAINER_STOPPED_EVENT;
  } else if (event.action == "destroy") {
    cri.type = v1::CONTAINER_DELETED_EVENT;
  } else {
    return std::nullopt;
  }
  const std::string kind = LabelValue(event.attributes, kContainerTypeLabel);
  if (kind == kContainerTypeSandbox) {
    cri.is_sandbox = true;
    cri.sandbox_id = event.id;
  } else if (kind == kContainerTypeContainer) {
    cri.sandbox_id = LabelValue(event.attributes, kSandboxIdLabel);
    if (cri.sandbox_id.empty()) return std::nullopt;
  } else {
    return std::nullopt;
  }
  cri.container_id = event.id;
  cri.created_at = event.time_nano;
  cri.attributes = event.attributes;
  return cri;
}

}  // namespace shim::events
