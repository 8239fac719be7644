#include "shim/storage/engine_storage.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status.h"

namespace shim::storage {
namespace {

constexpr char kContentPlugin[] = "io.containerd.content.v1";
constexpr char kSnapshotterPlugin[] = "io.containerd.snapshotter.v1";
// Docker's containerd namespace, when /info does not name it.
constexpr char kDefaultNamespace[] = "moby";
// How long a containerd that did not answer is left alone.
constexpr absl::Duration kRetryAfter = absl::Seconds(5);

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

EngineStorage::EngineStorage(Connect connect, std::function<absl::Time()> clock)
    : connect_(std::move(connect)), clock_(std::move(clock)) {}

template <typename T>
absl::StatusOr<T> EngineStorage::Ask(const std::string& address,
                                     const std::function<absl::StatusOr<T>(containerdclient::ContainerdClient&)>& call) {
  containerdclient::ContainerdClient* client;
  {
    std::lock_guard lock(mu_);
    Containerd& c = containerds_[address];
    if (Now() < c.down_until) return c.down;
    if (!c.client) c.client = connect_(address);
    client = c.client.get();
  }
  absl::StatusOr<T> answer = call(*client);
  // UNAVAILABLE: not there, or no answer within containerdclient::kCallTimeout (the
  // caller's own deadline is DEADLINE_EXCEEDED and says nothing about containerd).
  const bool away = absl::IsUnavailable(answer.status());
  std::lock_guard lock(mu_);
  Containerd& c = containerds_[address];
  if (away) {
    if (c.down.ok()) LOG_WARN << answer.status().message() << "; asking it again in " << kRetryAfter << " at the earliest";
    c.down = answer.status();
    c.down_until = Now() + kRetryAfter;
  } else if (!c.down.ok()) {
    LOG_INFO << "containerd at " << address << " answers again";
    c.down = absl::OkStatus();
  }
  return answer;
}

ImageStore EngineStorage::Unknown(const dockerclient::SystemInfo& info, std::string why) {
  ImageStore store;
  store.description = absl::StrCat("storage driver \"", info.driver, "\"",
                                   info.driver_type.empty() ? "" : absl::StrCat(" (", info.driver_type, ")"));
  store.mountpoint = info.docker_root_dir;
  store.unknown = std::move(why);
  std::lock_guard lock(mu_);
  if (logged_unknown_.insert(absl::StrCat(store.description, store.unknown)).second) {
    LOG_WARN << "Docker Engine " << info.server_version << " keeps images with " << store.description
             << ", an image store dockershim cannot measure: " << store.unknown
             << ". ImageFsInfo reports its file system without used bytes or inodes (unknown, not 0), and "
                "container stats carry no writable-layer usage";
  }
  return store;
}

absl::StatusOr<ImageStore> EngineStorage::Store(const common::Context& ctx, const dockerclient::SystemInfo& info) {
  if (info.docker_root_dir.empty()) return Unknown(info, "Docker did not report its root directory (DockerRootDir)");
  if (info.driver_type.empty()) {
    // The walk stays on one file system (a running container's merged view is a mount
    // of its layers); these drivers keep each layer on a file system of its own.
    if (info.driver == "btrfs" || info.driver == "zfs")
      return Unknown(info, "its layers are file systems of their own (subvolumes, datasets), which dockershim does not walk");
    // A graph driver: layers (and writable layers) in <root>/<driver>, metadata in image/.
    const std::string layers = absl::StrCat(info.docker_root_dir, "/", info.driver);
    if (info.driver.empty() || !IsDirectory(layers))
      return Unknown(info, absl::StrCat("it has no directory ", layers));
    ImageStore store{absl::StrCat("graph driver ", info.driver), info.docker_root_dir, {layers}, ""};
    if (const std::string meta = absl::StrCat(info.docker_root_dir, "/image"); IsDirectory(meta))
      store.dirs.push_back(meta);
    return store;
  }
  if (info.driver_type != kSnapshotterDriverType)
    return Unknown(info, absl::StrCat("its driver type is not ", kSnapshotterDriverType));
  if (info.containerd_address.empty())
    return Unknown(info, "Docker does not say which containerd it uses (Containerd.Address, API 1.46 and later)");

  const auto key = std::make_pair(info.containerd_address, info.driver);
  std::pair<std::string, std::string> roots;
  bool known = false;
  {
    std::lock_guard lock(mu_);
    if (auto it = roots_.find(key); it != roots_.end()) roots = it->second, known = true;
  }
  if (!known) {
    const auto root_of = [&](const char* type, const std::string& id) {
      return Ask<std::string>(info.containerd_address, [&](containerdclient::ContainerdClient& client) {
        return client.PluginRoot(ctx, type, id);
      });
    };
    absl::StatusOr<std::string> content = root_of(kContentPlugin, "content");
    absl::StatusOr<std::string> snapshots = content.ok() ? root_of(kSnapshotterPlugin, info.driver) : content.status();
    for (const absl::Status& s : {content.status(), snapshots.status()}) {
      // A plugin that containerd lacks is a store of another shape; anything else is
      // containerd's trouble, for the caller to see and to ask again.
      if (absl::IsNotFound(s) || absl::IsFailedPrecondition(s)) return Unknown(info, std::string(s.message()));
      RETURN_IF_ERROR(s);
    }
    roots = {*content, *snapshots};
    std::lock_guard lock(mu_);
    roots_[key] = roots;
  }
  return ImageStore{absl::StrCat("containerd snapshotter ", info.driver), roots.second, {roots.first, roots.second},
                    ""};
}

absl::StatusOr<std::string> EngineStorage::WritableLayerDir(const common::Context& ctx,
                                                            const dockerclient::SystemInfo& info,
                                                            const dockerclient::ContainerInspect& c) {
  if (info.driver_type.empty()) return c.upper_dir;
  if (info.driver_type != kSnapshotterDriverType || info.containerd_address.empty()) return std::string();
  // Docker names a container's snapshot by the container's ID.
  const std::string snapshotter = c.storage_driver.empty() ? info.driver : c.storage_driver;
  const std::string ns = info.containerd_namespace.empty() ? kDefaultNamespace : info.containerd_namespace;
  absl::StatusOr<std::vector<containerdclient::Mount>> mounts = Ask<std::vector<containerdclient::Mount>>(
      info.containerd_address,
      [&](containerdclient::ContainerdClient& client) { return client.SnapshotMounts(ctx, ns, snapshotter, c.id); });
  if (absl::IsNotFound(mounts.status())) return std::string();
  if (!mounts.ok()) return mounts.status();
  return containerdclient::UpperDirOf(*mounts);
}

}  // namespace shim::storage
