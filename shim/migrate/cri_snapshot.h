#pragma once
// A Snapshot of the CRI runtime that serves a unix socket, over CRI: ListPodSandbox,
// PodSandboxStatus of each pod (its IPs, host network), ListContainers.
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "shim/migrate/snapshot.h"

namespace shim::migrate {

// Waits up to `timeout` for the socket to answer (a runtime that is starting, or a
// socket unit that starts its service). UNAVAILABLE or DEADLINE_EXCEEDED when it does not.
absl::StatusOr<Snapshot> TakeSnapshot(const std::string& socket_path, absl::Duration timeout);

}  // namespace shim::migrate
