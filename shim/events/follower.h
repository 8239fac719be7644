#pragma once
// What follows Docker's events together with the hub, on the hub's thread (the
// container view, shim/view/): it gets every raw event before any CRI payload is
// built, and compares Docker's full list with what the events told whenever the
// stream (re)opens and periodically while it stays open.
#include <vector>

#include "absl/status/statusor.h"
#include "dockerclient/event_stream.h"

namespace shim::events {

class Follower {
 public:
  virtual ~Follower() = default;
  // An event of a CRI container, in Docker's order (resumed streams may repeat some).
  virtual void OnEvent(const dockerclient::DockerEvent& event) = 0;
  // Docker's full list, taken now. Returns the lifecycle events Docker would have sent
  // for what changed without an event reaching the follower (the stream was down,
  // dockerd restarted and lost its buffer), stamped with the list's time; none on the
  // first call. An error leaves the follower untrusted; the hub reconnects.
  virtual absl::StatusOr<std::vector<dockerclient::DockerEvent>> Reconcile() = 0;
  // The stream broke: what the follower holds may already be stale.
  virtual void OnStreamDown() = 0;
};

}  // namespace shim::events
