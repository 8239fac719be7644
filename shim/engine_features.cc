#include "shim/engine_features.h"

#include "dockerclient/api_version.h"

namespace shim {

EngineFeatures FeaturesFor(std::string_view api_version, const dockerclient::SystemInfo& info) {
  using dockerclient::ApiAtLeast;
  EngineFeatures f;
  f.api_version = std::string(api_version);
  f.recursive_read_only = ApiAtLeast(api_version, 1, 44);
  f.image_mounts = ApiAtLeast(api_version, 1, 48);
  // Docker reports CDISpecDirs only where CDI is enabled (a daemon feature before 28).
  const auto dirs = info.raw.find("CDISpecDirs");
  f.cdi = ApiAtLeast(api_version, 1, 44) && dirs != info.raw.end() && dirs->is_array() && !dirs->empty();
  return f;
}

}  // namespace shim
