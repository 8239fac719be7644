// The CNI parsers on arbitrary bytes: a network config file (.conflist, and .conf with
// one plugin) and a plugin's result JSON.
// - A config that parses has a name and a non-empty "plugins" list whose every entry has
//   a "type" string, and each plugin's stdin config builds from it (name, cniVersion).
// - A result that parses gives a primary address whenever it gives any, and never an
//   address with a prefix length.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/string_view.h"
#include "shim/network/cni_config.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

void CheckConfig(absl::string_view text, bool single_plugin) {
  const auto config = network::ParseNetworkConfig(text, single_plugin);
  if (!config.ok()) return Check(config.status().code() == absl::StatusCode::kInvalidArgument);
  Check(!config->name.empty());
  Check(config->plugins().is_array() && !config->plugins().empty());
  for (std::size_t i = 0; i < config->plugins().size(); ++i) {
    Check(!config->PluginType(i).empty());
    const nlohmann::json stdin_config = network::BuildPluginConfig(*config, i, nullptr, nlohmann::json::object());
    Check(stdin_config.at("name") == config->name);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  CheckConfig(text, false);
  CheckConfig(text, true);

  const nlohmann::json result = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (result.is_discarded()) return 0;
  const auto ips = network::ParseResultIps(result);
  if (!ips.ok()) return 0;
  Check(!ips->primary.empty() || ips->additional.empty());
  Check(ips->primary.find('/') == std::string::npos);
  for (const std::string& ip : ips->additional) Check(!ip.empty() && ip.find('/') == std::string::npos);
  return 0;
}
