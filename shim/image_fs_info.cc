// ImageFsInfo: usage of the filesystem that holds Docker's image store.
#include <sys/stat.h>

#include <filesystem>
#include <set>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status.h"
#include "shim/cri_service.h"

namespace shim {

namespace {

// Walking a large layer store is not free, and kubelet asks every few seconds.
constexpr absl::Duration kFsUsageCacheTtl = absl::Seconds(10);

struct DirUsage {
  uint64_t bytes = 0;
  uint64_t inodes = 0;
};

// Bytes on disk (st_blocks) and inodes under `root`; hard links count once. Only files
// with more than one link are remembered, as du does: a layer store holds hundreds of
// thousands of files, nearly all with one link.
DirUsage MeasureDir(const std::filesystem::path& root) {
  DirUsage usage;
  std::set<std::pair<dev_t, ino_t>> seen_links;
  auto account = [&](const std::filesystem::path& p) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0) return;
    if (!S_ISDIR(st.st_mode) && st.st_nlink > 1 && !seen_links.emplace(st.st_dev, st.st_ino).second) return;
    usage.bytes += static_cast<uint64_t>(st.st_blocks) * 512;
    usage.inodes += 1;
  };
  std::error_code ec;
  account(root);
  for (auto it = std::filesystem::recursive_directory_iterator(
           root, std::filesystem::directory_options::skip_permission_denied, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    account(it->path());
  }
  return usage;
}

}  // namespace

absl::StatusOr<v1::ImageFsInfoResponse> CriService::ImageFsInfo(const common::Context& ctx,
                                                                const v1::ImageFsInfoRequest&) {
  ASSIGN_OR_RETURN(std::shared_ptr<const dockerclient::SystemInfo> info, CachedInfo(ctx));
  if (info->docker_root_dir.empty())
    return absl::InternalError("Docker did not report its root directory (DockerRootDir)");

  std::lock_guard lock(fs_usage_mu_);
  if (absl::Now() - fs_usage_.measured_at > kFsUsageCacheTtl || fs_usage_.mountpoint != info->docker_root_dir) {
    // Image layers and container writable layers live in the storage driver's
    // directory; "image/" holds the metadata.
    std::filesystem::path root(info->docker_root_dir);
    DirUsage layers = MeasureDir(root / (info->driver.empty() ? "overlay2" : info->driver));
    DirUsage meta = MeasureDir(root / "image");
    fs_usage_.bytes = layers.bytes + meta.bytes;
    fs_usage_.inodes = layers.inodes + meta.inodes;
    fs_usage_.mountpoint = info->docker_root_dir;
    fs_usage_.measured_at = absl::Now();
  }

  v1::FilesystemUsage usage;
  usage.set_timestamp(absl::ToUnixNanos(absl::Now()));
  usage.mutable_fs_id()->set_mountpoint(fs_usage_.mountpoint);
  usage.mutable_used_bytes()->set_value(fs_usage_.bytes);
  usage.mutable_inodes_used()->set_value(fs_usage_.inodes);
  v1::ImageFsInfoResponse resp;
  *resp.add_image_filesystems() = usage;
  // Docker keeps writable layers in the same store, so the container filesystem
  // is the same one (as CRI-O reports when images and containers share storage).
  *resp.add_container_filesystems() = usage;
  return resp;
}

}  // namespace shim
