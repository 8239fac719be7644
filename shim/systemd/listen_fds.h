#pragma once
// Socket activation (sd_listen_fds(3) without libsystemd): the listening sockets
// systemd passed as fds 3, 4, ... with $LISTEN_FDS and $LISTEN_PID.
#include <vector>

#include "absl/status/statusor.h"
#include "common/unique_fd.h"

namespace shim::systemd {

// The passed sockets, empty when none were passed to this process. Unsets the
// variables (children must not take them) and marks the fds close-on-exec.
// FAILED_PRECONDITION when a passed fd is not a listening stream socket.
absl::StatusOr<std::vector<common::UniqueFd>> TakeListenFds();

}  // namespace shim::systemd
