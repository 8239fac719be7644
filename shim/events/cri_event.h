#pragma once
// Which Docker events are CRI container events: the lifecycle actions (create, start,
// die, destroy) of containers the shim made (pod infra and app containers, by their
// io.kubernetes.docker.type label). Pure, table-tested.
#include <cstdint>
#include <optional>
#include <string>

#include "api/cri.h"
#include "dockerclient/event_stream.h"

namespace shim::events {

struct CriEvent {
  std::string container_id;  // the sandbox's ID for a pod infra container's event
  std::string sandbox_id;
  bool is_sandbox = false;
  runtime::v1::ContainerEventType type = runtime::v1::CONTAINER_CREATED_EVENT;
  int64_t created_at = 0;            // the event's time, ns since the epoch
  dockerclient::Labels attributes;   // the container's labels and name, as Docker sent them
};

// nullopt for other actions (exec_*, attach, resize, kill, health_status, ...) and
// other containers.
std::optional<CriEvent> ToCriEvent(const dockerclient::DockerEvent& event);

}  // namespace shim::events
