#include "shim/image_convert.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "shim/image_ref.h"

namespace shim {

ImageUser ParseImageUser(const std::string& user) {
  ImageUser out;
  std::string name = user.substr(0, user.find(':'));
  if (name.empty()) return out;
  int64_t uid = 0;
  if (absl::SimpleAtoi(name, &uid) && uid >= 0) {
    out.uid = uid;
  } else {
    out.username = name;
  }
  return out;
}

std::vector<std::string> RealReferences(const std::vector<std::string>& refs) {
  std::vector<std::string> out;
  for (const auto& r : refs)
    if (!absl::StartsWith(r, "<none>") && !LooksLikeImageId(r)) out.push_back(r);
  return out;
}

namespace {
void FillCommon(runtime::v1::Image& out, const std::string& id, const std::vector<std::string>& tags,
                const std::vector<std::string>& digests, int64_t size, bool pinned) {
  out.set_id(id);
  for (const auto& t : RealReferences(tags)) out.add_repo_tags(t);
  for (const auto& d : RealReferences(digests)) out.add_repo_digests(d);
  out.set_size(size > 0 ? static_cast<uint64_t>(size) : 0);
  out.mutable_spec()->set_image(id);
  out.set_pinned(pinned);
}
}  // namespace

runtime::v1::Image ToCriImage(const dockerclient::ImageInspect& image, bool pinned) {
  runtime::v1::Image out;
  FillCommon(out, image.id, image.repo_tags, image.repo_digests, image.size, pinned);
  ImageUser user = ParseImageUser(image.config.user);
  if (user.uid) out.mutable_uid()->set_value(*user.uid);
  out.set_username(user.username);
  return out;
}

runtime::v1::Image ToCriImage(const dockerclient::ImageSummary& image, bool pinned) {
  runtime::v1::Image out;
  FillCommon(out, image.id, image.repo_tags, image.repo_digests, image.size, pinned);
  return out;
}

}  // namespace shim
