// ImageFsInfo: usage of the file system that holds the engine's images and writable
// layers (shim/storage/engine_storage.h says which directories those are).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status.h"
#include "shim/cri_service.h"
#include "shim/stats/disk_usage.h"
#include "shim/storage/engine_storage.h"

namespace shim {

namespace {

// Walking the store reads every inode of every layer, and the kubelet asks every 10 s:
// with 100 pods the walk was a quarter of an idle node's CPU. The kubelet's image GC and
// eviction take the file system's capacity and free space from statfs, not from this
// figure, so an answer up to a minute old is enough; a pull or an image removal made
// through us measures again at the next call. A store that stays the same (a node whose
// pods run on) is measured twice as long after each time, up to 5 minutes; a change
// brings the minute back. With 100 quiet pods the walk each minute was still 6% of the
// shim's CPU.
constexpr absl::Duration kFsUsageCacheTtl = absl::Seconds(60);
constexpr absl::Duration kFsUsageMaxKeep = absl::Minutes(5);

}  // namespace

std::string CriService::ImageFsMountpoint(const common::Context& ctx, const dockerclient::SystemInfo& info) {
  absl::StatusOr<storage::ImageStore> store = storage_->Store(ctx, info);
  return store.ok() ? store->mountpoint : info.docker_root_dir;
}

absl::StatusOr<v1::ImageFsInfoResponse> CriService::ImageFsInfo(const common::Context& ctx,
                                                                const v1::ImageFsInfoRequest&) {
  ASSIGN_OR_RETURN(std::shared_ptr<const dockerclient::SystemInfo> info, CachedInfo(ctx));
  ASSIGN_OR_RETURN(storage::ImageStore store, storage_->Store(ctx, *info));

  v1::FilesystemUsage usage;
  usage.set_timestamp(absl::ToUnixNanos(absl::Now()));
  usage.mutable_fs_id()->set_mountpoint(store.mountpoint);
  if (store.unknown.empty()) {
    std::lock_guard lock(fs_usage_mu_);
    const absl::Time now = options_.clock ? options_.clock() : absl::Now();
    if (fs_usage_changed_.exchange(false) || now - fs_usage_.measured_at > fs_usage_.kept_for ||
        fs_usage_.dirs != store.dirs) {
      // A directory's own file system only: the merged views of running containers
      // (overlay mounts inside a graph driver's directory) would count layers twice.
      stats::DiskUsage total;
      for (const std::string& dir : store.dirs) {
        absl::StatusOr<stats::DiskUsage> measured = stats::MeasureTree(dir);
        // containerd makes its content store's directory with the first blob.
        if (absl::IsNotFound(measured.status())) continue;
        if (!measured.ok()) return common::Annotate(measured.status(), absl::StrCat("measure ", store.description));
        total.bytes += measured->bytes;
        total.inodes += measured->inodes;
      }
      const bool same = fs_usage_.dirs == store.dirs && fs_usage_.bytes == total.bytes &&
                        fs_usage_.inodes == total.inodes;
      const absl::Duration keep = same ? std::min(fs_usage_.kept_for * 2, kFsUsageMaxKeep) : kFsUsageCacheTtl;
      fs_usage_ = FsUsage{now, store.dirs, total.bytes, total.inodes, keep};
    }
    usage.mutable_used_bytes()->set_value(fs_usage_.bytes);
    usage.mutable_inodes_used()->set_value(fs_usage_.inodes);
  }
  // An unknown store leaves used_bytes and inodes_used unset: the kubelet then has no
  // figure, rather than a zero it would believe (EngineStorage logged why).
  v1::ImageFsInfoResponse resp;
  *resp.add_image_filesystems() = usage;
  // Docker keeps writable layers in the same store, so the container filesystem
  // is the same one (as CRI-O reports when images and containers share storage).
  *resp.add_container_filesystems() = usage;
  return resp;
}

}  // namespace shim
