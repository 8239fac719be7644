#pragma once
// Image volumes (CRI Mount.image) on engines without Docker's "image" mount type (API
// before 1.48): each image's filesystem is unpacked once, under
// <directory>/<image-id-hex>/rootfs, bound read-only into the containers that mount it,
// and removed once the last of them is. A container lists the images whose trees it
// binds in its label kImageVolumesLabel (shim/naming.h); Docker's container list is the
// reference count, so nothing else is kept on disk and a restarted shim knows the users.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/context.h"
#include "dockerclient/docker_client.h"

namespace shim::imagevolumes {

class ImageVolumes {
 public:
  // Keeps the trees it was given for from removal while their container is being created
  // (until Docker has it, label and all). Lets go on destruction or Release().
  class Hold {
   public:
    Hold() = default;
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    ~Hold() { Release(); }
    void Release();

   private:
    friend class ImageVolumes;
    ImageVolumes* owner_ = nullptr;
    std::vector<std::string> image_ids_;
  };

  // `directory` is the shim's <root>/image-volumes; created when first needed.
  ImageVolumes(dockerclient::DockerClient& docker, std::string directory);
  ~ImageVolumes();

  // The host directory to bind for `sub_path` ("" for the whole image) of `image_id`
  // (Docker's "sha256:<hex>", of an image that is present), unpacking the image first if
  // no tree of it is there yet; concurrent calls for one image unpack it once. `hold`
  // keeps the tree until the caller's container exists. INVALID_ARGUMENT for a sub path
  // that is absolute or has a ".." component, NOT_FOUND for one that is not in the image.
  absl::StatusOr<std::string> Prepare(const common::Context& ctx, const std::string& image_id,
                                      const std::string& sub_path, Hold& hold);

  // Removes the trees of `image_ids` that no container binds and no Hold keeps. Failures
  // are logged: the tree stays until a later removal or the next start's Sweep.
  void RemoveUnused(const common::Context& ctx, const std::vector<std::string>& image_ids);

  // For the shim's start: removes the trees no container binds, trees left half-written
  // or half-removed, and unpack containers that a crash left behind.
  absl::Status Sweep(const common::Context& ctx);

 private:
  struct Entry {
    std::mutex mu;      // held while the tree is unpacked, looked up or removed
    int holds = 0;      // guarded by mu
  };
  // One per image ID ever prepared (a few bytes each), so that every caller locks the same mutex.
  std::shared_ptr<Entry> EntryFor(const std::string& image_id);
  // Unpacks the tree of `image_id` into <directory>/<hex>; call with the entry's mutex held.
  absl::Status Unpack(const common::Context& ctx, const std::string& image_id, const std::string& tree);
  // Whether a container (in Docker's list) binds the tree of `image_id`.
  absl::StatusOr<bool> InUse(const common::Context& ctx, const std::string& image_id);
  void Unhold(const std::vector<std::string>& image_ids);

  dockerclient::DockerClient& docker_;
  const std::string directory_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;  // by image ID; guarded by mu_
};

// The image IDs in a value of kImageVolumesLabel.
std::vector<std::string> ImageIdsOfLabel(const std::string& value);

// `sub_path` of the tree at `root` as a host path, following symlinks as the container
// would see them (an absolute target is taken from `root`), so that no sub path reaches
// outside the tree. INVALID_ARGUMENT or NOT_FOUND as Prepare.
absl::StatusOr<std::string> ResolveInTree(const std::string& root, const std::string& sub_path);

}  // namespace shim::imagevolumes
