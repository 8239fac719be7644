// PullImage: reference validation, registry credentials, progress deadline.
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status.h"
#include "shim/cri_service.h"
#include "shim/image_ref.h"
#include "shim/registry_auth.h"

namespace shim {

namespace {

// Registry refusals read best when they name the registry and hint at the fix.
absl::Status ExplainPullError(const absl::Status& status, const ImageRef& ref, const v1::AuthConfig& auth,
                              const std::string& header) {
  std::string message = ScrubSecrets(std::string(status.message()), auth, header);
  if (absl::IsUnauthenticated(status) || absl::IsPermissionDenied(status)) {
    message = absl::StrCat("registry ", ref.domain, " refused to serve ", ref.Normalized(),
                           auth.username().empty() && auth.auth().empty() && auth.registry_token().empty() &&
                                   auth.identity_token().empty()
                               ? " without credentials"
                               : " with the given credentials",
                           ": ", message);
  }
  return absl::Status(status.code(), message);
}

}  // namespace

absl::StatusOr<v1::PullImageResponse> CriService::PullImage(const common::Context& ctx,
                                                            const v1::PullImageRequest& req) {
  const std::string& name = req.image().image();
  if (LooksLikeImageId(name))
    return absl::InvalidArgumentError(absl::StrCat("cannot pull \"", name, "\": it is an image ID, not a reference"));
  ASSIGN_OR_RETURN(ImageRef ref, ParseImageRef(name));
  ASSIGN_OR_RETURN(std::string registry_auth, EncodeRegistryAuth(req.auth()));

  dockerclient::PullOptions pull;
  pull.reference = ref.Normalized();
  pull.registry_auth = std::move(registry_auth);
  pull.progress_deadline = options_.image_pull_progress_deadline;
  pull.on_progress = [&](const nlohmann::json& msg) {
    LOG_DEBUG << "pull " << pull.reference << ": " << msg.value("status", "") << " " << msg.value("progress", "");
  };
  absl::Time start = absl::Now();
  if (absl::Status pulled = docker_.PullImage(ctx, pull); !pulled.ok()) {
    absl::Status explained = ExplainPullError(pulled, ref, req.auth(), pull.registry_auth);
    LOG_WARN << explained.message();
    return explained;
  }
  fs_usage_changed_ = true;
  auto image = docker_.InspectImage(ctx, pull.reference);
  if (!image.ok()) {
    return common::Annotate(image.status(), absl::StrCat("image ", pull.reference, " was pulled but cannot be inspected"));
  }
  LOG_INFO << "pulled image " << pull.reference << " (" << image->id << ") in " << absl::Now() - start;
  v1::PullImageResponse resp;
  resp.set_image_ref(image->id);
  return resp;
}

}  // namespace shim
