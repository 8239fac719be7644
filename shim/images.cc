// ListImages, ImageStatus, RemoveImage.
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status.h"
#include "shim/cri_service.h"
#include "shim/image_convert.h"
#include "shim/image_ref.h"

namespace shim {

namespace {

// Accepts image IDs (full or short) and references; rejects malformed names early
// so the operator sees why, instead of Docker's generic 400.
absl::Status ValidateImageLookup(const std::string& image) {
  if (image.empty()) return absl::InvalidArgumentError("image spec is empty: set image.image to a name or ID");
  if (LooksLikeImageId(image)) return absl::OkStatus();
  return ParseImageRef(image).status();
}

bool IsIdOf(const std::string& ref, const std::string& image_id) {
  absl::string_view hex = image_id;
  if (absl::StartsWith(hex, "sha256:")) hex.remove_prefix(7);
  absl::string_view r = ref;
  if (absl::StartsWith(r, "sha256:")) r.remove_prefix(7);
  return !r.empty() && absl::StartsWith(hex, r);
}

}  // namespace

bool CriService::IsPinned(const std::vector<std::string>& repo_tags) const {
  auto pause = ParseImageRef(options_.pod_infra_image);
  if (!pause.ok()) return false;
  for (const auto& tag : repo_tags) {
    auto ref = ParseImageRef(tag);
    if (ref.ok() && ref->Normalized() == pause->Normalized()) return true;
  }
  return false;
}

absl::StatusOr<v1::ListImagesResponse> CriService::ListImages(const common::Context& ctx,
                                                              const v1::ListImagesRequest& req) {
  const std::string& filter = req.filter().image().image();
  v1::ListImagesResponse resp;
  if (filter.empty()) {
    ASSIGN_OR_RETURN(auto images, docker_.ListImages(ctx, ""));
    for (const auto& image : images) *resp.add_images() = ToCriImage(image, IsPinned(image.repo_tags));
    return resp;
  }
  RETURN_IF_ERROR(ValidateImageLookup(filter));
  // Docker's reference filter matches familiar names ("busybox", "busybox:1.0") and,
  // without a tag, every tag of the repository.
  if (!LooksLikeImageId(filter)) {
    std::string familiar = filter;
    if (auto ref = ParseImageRef(filter); ref.ok() && ref->digest.empty()) {
      familiar = ref->Familiar();
      if (ref->tag_defaulted) familiar = familiar.substr(0, familiar.rfind(':'));
    }
    ASSIGN_OR_RETURN(auto images, docker_.ListImages(ctx, familiar));
    if (!images.empty()) {
      for (const auto& image : images) *resp.add_images() = ToCriImage(image, IsPinned(image.repo_tags));
      return resp;
    }
  }
  // IDs and digests: resolve through inspect.
  auto image = docker_.InspectImage(ctx, filter);
  if (absl::IsNotFound(image.status())) return resp;
  if (!image.ok()) return image.status();
  *resp.add_images() = ToCriImage(*image, IsPinned(image->repo_tags));
  return resp;
}

absl::StatusOr<v1::ImageStatusResponse> CriService::ImageStatus(const common::Context& ctx,
                                                                const v1::ImageStatusRequest& req) {
  const std::string& name = req.image().image();
  RETURN_IF_ERROR(ValidateImageLookup(name));
  v1::ImageStatusResponse resp;
  auto image = docker_.InspectImage(ctx, name);
  if (absl::IsNotFound(image.status())) return resp;  // absent is an empty answer, not an error
  if (!image.ok()) return image.status();
  *resp.mutable_image() = ToCriImage(*image, IsPinned(image->repo_tags));
  if (req.verbose()) {
    nlohmann::json info = {{"id", image->id},
                           {"created", image->created},
                           {"os", image->os},
                           {"architecture", image->architecture},
                           {"config", image->raw.value("Config", nlohmann::json::object())},
                           {"rootfs", image->raw.value("RootFS", nlohmann::json::object())}};
    (*resp.mutable_info())["info"] = info.dump();
  }
  return resp;
}

absl::StatusOr<v1::RemoveImageResponse> CriService::RemoveImage(const common::Context& ctx,
                                                                const v1::RemoveImageRequest& req) {
  const std::string& name = req.image().image();
  RETURN_IF_ERROR(ValidateImageLookup(name));
  auto image = docker_.InspectImage(ctx, name);
  if (absl::IsNotFound(image.status())) return v1::RemoveImageResponse();  // already gone
  if (!image.ok()) return image.status();

  // A name removes that name only; an ID removes the image with all its names
  // (Docker refuses an ID that several repositories reference, so untag first).
  std::vector<std::string> targets;
  if (IsIdOf(name, image->id)) {
    for (const auto& r : RealReferences(image->repo_tags)) targets.push_back(r);
    for (const auto& r : RealReferences(image->repo_digests)) targets.push_back(r);
    targets.push_back(image->id);
  } else {
    targets.push_back(name);
  }
  fs_usage_changed_ = true;  // even when only some of the targets go
  for (const auto& target : targets) {
    absl::Status removed = docker_.RemoveImage(ctx, target, /*force=*/false);
    if (!removed.ok() && !absl::IsNotFound(removed)) return removed;
  }
  LOG_INFO << "removed image " << name << " (" << image->id << ")";
  return v1::RemoveImageResponse();
}

}  // namespace shim
