#include "shim/imagevolumes/image_volumes.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <set>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/log.h"
#include "common/status.h"
#include "shim/imagevolumes/tar_extract.h"
#include "shim/naming.h"

namespace shim::imagevolumes {
namespace {

namespace fs = std::filesystem;

// Marks the stopped container an unpack exports, so a start after a crash can remove it.
constexpr char kUnpackLabel[] = "io.dockershim.image-volume-unpack";
// A tree being written or removed: never bound, swept at start.
constexpr char kPartialSuffix[] = ".partial";
constexpr char kRemovingSuffix[] = ".removing";
constexpr int kMaxSymlinks = 40;  // as Linux's path walk

// The hex of "sha256:<64 hex>", which names the image's tree; "" for anything else.
std::string HexOf(const std::string& image_id) {
  constexpr absl::string_view kPrefix = "sha256:";
  if (!absl::StartsWith(image_id, kPrefix) || image_id.size() != kPrefix.size() + 64) return "";
  std::string hex = image_id.substr(kPrefix.size());
  const bool ok = std::all_of(hex.begin(), hex.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
  return ok ? hex : "";
}

absl::Status RemoveTree(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot remove ", path, ": ", ec.message()));
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> ImageIdsOfLabel(const std::string& value) {
  return absl::StrSplit(value, ',', absl::SkipEmpty());
}

absl::StatusOr<std::string> ResolveInTree(const std::string& root, const std::string& sub_path) {
  const auto invalid = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("image_sub_path \"", sub_path, "\" ", why));
  };
  if (absl::StartsWith(sub_path, "/")) return invalid("is not a relative path");
  std::deque<std::string> pending;
  for (absl::string_view part : absl::StrSplit(sub_path, '/', absl::SkipEmpty())) {
    if (part == "..") return invalid("leaves the image (it has a \"..\" component)");
    pending.emplace_back(part);
  }
  std::vector<std::string> walked;  // components below root, none of them a symlink
  int links = 0;
  while (!pending.empty()) {
    const std::string part = std::move(pending.front());
    pending.pop_front();
    if (part == ".") continue;
    if (part == "..") {  // from a symlink's target: as in a chroot, never above the root
      if (!walked.empty()) walked.pop_back();
      continue;
    }
    const std::string path = absl::StrCat(root, "/", absl::StrJoin(walked, "/"), walked.empty() ? "" : "/", part);
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) {
        return absl::NotFoundError(absl::StrCat("image_sub_path \"", sub_path, "\" is not in the image"));
      }
      return absl::InternalError(absl::StrCat("cannot look up ", path, ": ", std::strerror(errno)));
    }
    if (!S_ISLNK(st.st_mode)) {
      walked.push_back(part);
      continue;
    }
    if (++links > kMaxSymlinks) return invalid("has too many levels of symbolic links");
    std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
    const ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
    if (n < 0 || static_cast<size_t>(n) >= target.size()) {
      return absl::InternalError(absl::StrCat("cannot read the symlink ", path));
    }
    target.resize(static_cast<size_t>(n));
    if (absl::StartsWith(target, "/")) walked.clear();
    std::vector<std::string> parts = absl::StrSplit(target, '/', absl::SkipEmpty());
    pending.insert(pending.begin(), parts.begin(), parts.end());
  }
  return walked.empty() ? root : absl::StrCat(root, "/", absl::StrJoin(walked, "/"));
}

void ImageVolumes::Hold::Release() {
  if (owner_ != nullptr) owner_->Unhold(image_ids_);
  owner_ = nullptr;
  image_ids_.clear();
}

ImageVolumes::ImageVolumes(dockerclient::DockerClient& docker, std::string directory)
    : docker_(docker), directory_(std::move(directory)) {}

ImageVolumes::~ImageVolumes() = default;

std::shared_ptr<ImageVolumes::Entry> ImageVolumes::EntryFor(const std::string& image_id) {
  std::lock_guard lock(mu_);
  std::shared_ptr<Entry>& entry = entries_[image_id];
  if (!entry) entry = std::make_shared<Entry>();
  return entry;
}

void ImageVolumes::Unhold(const std::vector<std::string>& image_ids) {
  for (const std::string& id : image_ids) {
    std::shared_ptr<Entry> entry = EntryFor(id);
    std::lock_guard lock(entry->mu);
    --entry->holds;
  }
}

absl::StatusOr<std::string> ImageVolumes::Prepare(const common::Context& ctx, const std::string& image_id,
                                                  const std::string& sub_path, Hold& hold) {
  const std::string hex = HexOf(image_id);
  if (hex.empty()) return absl::InternalError(absl::StrCat("image volume: \"", image_id, "\" is not an image ID"));
  if (hold.owner_ != nullptr && hold.owner_ != this) return absl::InternalError("image volume: a hold of another owner");
  std::shared_ptr<Entry> entry = EntryFor(image_id);
  std::lock_guard lock(entry->mu);
  const std::string tree = absl::StrCat(directory_, "/", hex);
  std::error_code ec;
  if (!fs::exists(tree, ec)) RETURN_IF_ERROR(Unpack(ctx, image_id, tree));
  ASSIGN_OR_RETURN(std::string path, ResolveInTree(tree + "/rootfs", sub_path));
  ++entry->holds;
  hold.owner_ = this;
  hold.image_ids_.push_back(image_id);
  return path;
}

absl::Status ImageVolumes::Unpack(const common::Context& ctx, const std::string& image_id, const std::string& tree) {
  // Written aside and renamed into place: a tree under its final name is always whole.
  const std::string partial = absl::StrCat(tree, kPartialSuffix);
  RETURN_IF_ERROR(RemoveTree(partial));
  std::error_code ec;
  fs::create_directories(directory_, ec);
  if (!ec) ::chmod(directory_.c_str(), 0700);
  if (!ec) fs::create_directories(partial + "/rootfs", ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", partial, ": ", ec.message()));

  // Docker exports containers, not images: a container that is never started does.
  // It needs a command to be created, whatever the image says.
  const nlohmann::json body = {{"Image", image_id},
                               {"Cmd", {"/dockershim-image-volume"}},
                               {"Labels", {{kUnpackLabel, image_id}}},
                               {"HostConfig", {{"NetworkMode", "none"}}}};
  absl::StatusOr<std::string> container = docker_.CreateContainer(ctx, "", body);
  if (!container.ok()) {
    (void)RemoveTree(partial);
    return common::Annotate(container.status(), absl::StrCat("unpack image volume ", image_id));
  }
  absl::Status unpacked = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(TarExtractor tar, TarExtractor::Start(partial + "/rootfs"));
    bool tar_stopped = false;
    const absl::Status exported = docker_.ExportContainer(ctx, *container, [&](std::string_view data) {
      absl::Status written = tar.Write(data);
      tar_stopped = !written.ok();
      return written;
    });
    const absl::Status extracted = tar.Finish();
    // A tar that stopped reading ends the export; its own message says why.
    if (!exported.ok() && !tar_stopped) return exported;
    return extracted;
  }();
  if (absl::Status removed = docker_.RemoveContainer(ctx, *container, /*force=*/true); !removed.ok()) {
    LOG_WARN << "cannot remove container " << *container << " that unpacked image " << image_id << ": "
             << removed.message() << " (removed at the next start)";
  }
  if (unpacked.ok()) {
    fs::rename(partial, tree, ec);
    if (ec) unpacked = absl::InternalError(absl::StrCat("cannot rename ", partial, " to ", tree, ": ", ec.message()));
  }
  if (!unpacked.ok()) {
    (void)RemoveTree(partial);
    return common::Annotate(unpacked, absl::StrCat("unpack image volume ", image_id));
  }
  LOG_INFO << "unpacked image " << image_id << " for image volumes into " << tree;
  return absl::OkStatus();
}

absl::StatusOr<bool> ImageVolumes::InUse(const common::Context& ctx, const std::string& image_id) {
  dockerclient::ListContainersOptions list;
  list.label_keys = {kImageVolumesLabel};
  ASSIGN_OR_RETURN(std::vector<dockerclient::ContainerSummary> users, docker_.ListContainers(ctx, list));
  return std::any_of(users.begin(), users.end(), [&](const dockerclient::ContainerSummary& c) {
    const std::vector<std::string> ids = ImageIdsOfLabel(LabelValue(c.labels, kImageVolumesLabel));
    return std::find(ids.begin(), ids.end(), image_id) != ids.end();
  });
}

void ImageVolumes::RemoveUnused(const common::Context& ctx, const std::vector<std::string>& image_ids) {
  for (const std::string& id : std::set<std::string>(image_ids.begin(), image_ids.end())) {
    const std::string hex = HexOf(id);
    if (hex.empty()) continue;
    std::shared_ptr<Entry> entry = EntryFor(id);
    // Held across the list and the removal: a Prepare of this image waits, then unpacks anew.
    std::lock_guard lock(entry->mu);
    if (entry->holds > 0) continue;
    const std::string tree = absl::StrCat(directory_, "/", hex);
    std::error_code ec;
    if (!fs::exists(tree, ec)) continue;
    absl::StatusOr<bool> used = InUse(ctx, id);
    if (!used.ok()) {
      LOG_WARN << "cannot tell whether image volume " << tree << " is still used, keeping it: " << used.status();
      continue;
    }
    if (*used) continue;
    // Renamed first: a removal cut short leaves no tree that looks whole.
    const std::string removing = absl::StrCat(tree, kRemovingSuffix);
    fs::rename(tree, removing, ec);
    absl::Status removed =
        ec ? absl::InternalError(absl::StrCat("cannot rename ", tree, ": ", ec.message())) : RemoveTree(removing);
    if (!removed.ok()) {
      LOG_WARN << "cannot remove unused image volume: " << removed.message();
      continue;
    }
    LOG_INFO << "removed image volume " << tree << ": no container uses it any more";
  }
}

absl::Status ImageVolumes::Sweep(const common::Context& ctx) {
  std::error_code ec;
  if (!fs::exists(directory_, ec)) return absl::OkStatus();  // never used: no Docker call
  dockerclient::ListContainersOptions unpacking;
  unpacking.label_keys = {kUnpackLabel};
  ASSIGN_OR_RETURN(std::vector<dockerclient::ContainerSummary> leftovers, docker_.ListContainers(ctx, unpacking));
  for (const auto& c : leftovers) {
    if (absl::Status s = docker_.RemoveContainer(ctx, c.id, /*force=*/true); !s.ok() && !absl::IsNotFound(s)) {
      LOG_WARN << "cannot remove image volume unpack container " << c.id << ": " << s.message();
    }
  }
  dockerclient::ListContainersOptions users;
  users.label_keys = {kImageVolumesLabel};
  ASSIGN_OR_RETURN(std::vector<dockerclient::ContainerSummary> containers, docker_.ListContainers(ctx, users));
  std::set<std::string> used;
  for (const auto& c : containers) {
    for (const std::string& id : ImageIdsOfLabel(LabelValue(c.labels, kImageVolumesLabel))) used.insert(HexOf(id));
  }
  std::vector<std::string> unused;  // listed first: removing while listing could skip entries
  for (const fs::directory_entry& e : fs::directory_iterator(directory_, ec)) {
    if (!used.contains(e.path().filename().string())) unused.push_back(e.path().string());
  }
  if (ec) return absl::InternalError(absl::StrCat("cannot list ", directory_, ": ", ec.message()));
  for (const std::string& path : unused) {
    if (absl::Status s = RemoveTree(path); !s.ok()) {
      LOG_WARN << "image volume sweep: " << s.message();
    } else {
      LOG_INFO << "removed image volume " << path << ": no container uses it";
    }
  }
  return absl::OkStatus();
}

}  // namespace shim::imagevolumes
