#pragma once
// Pure translations between Docker image objects and CRI images.
#include <optional>
#include <string>

#include "dockerclient/types.h"
#include "api/cri.h"

namespace shim {

// An image's Config.User as CRI wants it: a numeric user gives uid, a name gives
// username; a group after ':' is dropped. Empty gives neither.
struct ImageUser {
  std::optional<int64_t> uid;
  std::string username;
};
ImageUser ParseImageUser(const std::string& user);

// Drops Docker's "<none>:<none>" / "<none>@<none>" placeholders, and bare digests: Docker
// 28's containerd store lists a pulled image whose tags are gone with "sha256:<hex>" among
// its RepoDigests (its inspect has none), which names no repository.
std::vector<std::string> RealReferences(const std::vector<std::string>& refs);

runtime::v1::Image ToCriImage(const dockerclient::ImageInspect& image, bool pinned);
// Summaries carry no Config, so uid/username stay unset (as with cri-dockerd).
runtime::v1::Image ToCriImage(const dockerclient::ImageSummary& image, bool pinned);

}  // namespace shim
