#pragma once
// The few calls the shim makes to the containerd that dockerd uses, for Docker's
// containerd image store (images and writable layers kept by containerd's content
// store and snapshotter, Docker 29's default): where a plugin keeps its data, and the
// mounts of a container's snapshot. ContainerdClient is the seam; tests use a fake.
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/context.h"

namespace containerdclient {

struct Mount {
  std::string type;                  // "overlay", "bind"
  std::string source;
  std::vector<std::string> options;  // "upperdir=...", "lowerdir=...", "ro"
};

class ContainerdClient {
 public:
  virtual ~ContainerdClient() = default;
  // The directory plugin `type` ("io.containerd.snapshotter.v1") `id` ("overlayfs")
  // keeps its data in (the "root" it exports). NOT_FOUND when containerd has no such
  // plugin or it exports no root; FAILED_PRECONDITION when it failed to load.
  virtual absl::StatusOr<std::string> PluginRoot(const common::Context& ctx, const std::string& type,
                                                 const std::string& id) = 0;
  // The mounts of snapshot `key` of `snapshotter` in containerd namespace `ns`.
  // NOT_FOUND when there is no such snapshot.
  virtual absl::StatusOr<std::vector<Mount>> SnapshotMounts(const common::Context& ctx, const std::string& ns,
                                                            const std::string& snapshotter,
                                                            const std::string& key) = 0;
};

// How long a call may take when the caller allows more: containerd answers these from
// memory, so a containerd that takes longer is stuck, and the call is UNAVAILABLE.
inline constexpr absl::Duration kCallTimeout = absl::Seconds(5);

// A client of containerd's gRPC socket at `address` (a path). Connects on first use.
// Errors name the socket: UNAVAILABLE when containerd is not there or does not answer
// within kCallTimeout; DEADLINE_EXCEEDED when the caller's deadline came first.
std::unique_ptr<ContainerdClient> Connect(const std::string& address);

// The writable directory of a snapshot's mounts: an overlay's upperdir, or the source
// of a lone bind mount (a snapshot without parents). "" when there is none (a view).
std::string UpperDirOf(const std::vector<Mount>& mounts);

}  // namespace containerdclient
