#pragma once
// Where the engine keeps images and containers' writable layers, which Docker's API
// does not say in full. With a graph driver: its directory and image/ under
// DockerRootDir, and each container's upper directory in its inspect. With Docker's
// containerd image store (Docker 29's default; "containerd-snapshotter" before): the
// content store and the snapshotter of the containerd that dockerd uses, whose
// directories (its plugins' roots) and snapshot mounts containerd names. Any other
// store is reported as unknown, once in the log, rather than measured wrongly.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/context.h"
#include "containerdclient/containerd_client.h"
#include "dockerclient/types.h"

namespace shim::storage {

// Docker's DriverStatus "driver-type" of the containerd image store.
inline constexpr char kSnapshotterDriverType[] = "io.containerd.snapshotter.v1";

// The directories that hold an engine's images and writable layers.
struct ImageStore {
  std::string description;        // "graph driver overlay2", "containerd snapshotter overlayfs"
  std::string mountpoint;         // ImageFsInfo's fs_id: a directory on the store's file system
  std::vector<std::string> dirs;  // whose usage ImageFsInfo reports; none when unknown
  // Why the shim cannot measure this store; empty when it can.
  std::string unknown;
};

class EngineStorage {
 public:
  using Connect = std::function<std::unique_ptr<containerdclient::ContainerdClient>(const std::string& address)>;
  // `clock` times a containerd's absence (absl::Now when unset).
  explicit EngineStorage(Connect connect = containerdclient::Connect, std::function<absl::Time()> clock = {});

  // The image store of the engine `info` describes. containerd is asked once per socket
  // and snapshotter; errors are its (UNAVAILABLE while it is away). An unknown store is
  // logged once.
  absl::StatusOr<ImageStore> Store(const common::Context& ctx, const dockerclient::SystemInfo& info);

  // The directory of container `c`'s writable layer: its graph driver's upper directory,
  // or its containerd snapshot's. "" when it has none the shim can read (a driver without
  // upper directories, no snapshot, an unknown store).
  absl::StatusOr<std::string> WritableLayerDir(const common::Context& ctx, const dockerclient::SystemInfo& info,
                                               const dockerclient::ContainerInspect& c);

 private:
  // A containerd socket's client, and whether it failed to answer a moment ago.
  struct Containerd {
    std::unique_ptr<containerdclient::ContainerdClient> client;
    absl::Status down;  // the last call's failure while it did not answer
    absl::Time down_until = absl::InfinitePast();
  };
  // Calls `call` with the client of `address`. After a call that found containerd away
  // (UNAVAILABLE), calls within a few seconds fail at once with that error: a stats call
  // asks about every container, and each would wait. Logs when containerd stops and
  // starts answering.
  template <typename T>
  absl::StatusOr<T> Ask(const std::string& address,
                        const std::function<absl::StatusOr<T>(containerdclient::ContainerdClient&)>& call);
  ImageStore Unknown(const dockerclient::SystemInfo& info, std::string why);

  absl::Time Now() const { return clock_ ? clock_() : absl::Now(); }

  const Connect connect_;
  const std::function<absl::Time()> clock_;
  std::mutex mu_;
  std::map<std::string, Containerd> containerds_;  // by socket; guarded by mu_
  // The content store's and snapshotter's roots, by socket and snapshotter; guarded by mu_.
  std::map<std::pair<std::string, std::string>, std::pair<std::string, std::string>> roots_;
  std::set<std::string> logged_unknown_;  // guarded by mu_
};

}  // namespace shim::storage
