#include "shim/engine_features.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "dockerclient/api_version.h"

namespace shim {

EngineFeatures FeaturesFor(std::string_view api_version, const dockerclient::SystemInfo& info) {
  using dockerclient::ApiAtLeast;
  EngineFeatures f;
  f.api_version = std::string(api_version);
  f.engine_version = info.server_version;
  f.annotations = ApiAtLeast(api_version, 1, 43);
  f.recursive_read_only = ApiAtLeast(api_version, 1, 44);
  f.image_mounts = ApiAtLeast(api_version, 1, 48);
  // Docker reports CDISpecDirs only where CDI is enabled (a daemon feature before 28.2;
  // an empty list otherwise).
  const auto dirs = info.raw.find("CDISpecDirs");
  f.cdi = ApiAtLeast(api_version, 1, 44) && dirs != info.raw.end() && dirs->is_array() && !dirs->empty();
  return f;
}

bool RuntimeSupportsRro(const dockerclient::SystemInfo& info, std::string_view name) {
  const std::string runtime = name.empty() ? info.default_runtime : std::string(name);
  const nlohmann::json* node = &info.raw;
  for (const char* key : {"Runtimes", runtime.c_str(), "status", "org.opencontainers.runtime-spec.features"}) {
    if (!node->is_object()) return false;
    const auto it = node->find(key);
    if (it == node->end()) return false;
    node = &*it;
  }
  if (!node->is_string()) return false;
  const nlohmann::json features = nlohmann::json::parse(node->get<std::string>(), nullptr, /*allow_exceptions=*/false);
  if (!features.is_object()) return false;
  const auto options = features.find("mountOptions");
  return options != features.end() && options->is_array() &&
         std::find(options->begin(), options->end(), "rro") != options->end();
}

std::string EngineName(const EngineFeatures& features) {
  const std::string version = features.engine_version.empty() ? "" : absl::StrCat(features.engine_version, " ");
  return absl::StrCat("Docker Engine ", version, "(API ", features.api_version, ")");
}

}  // namespace shim
