#pragma once
// CNI network configuration as libcni handles it, without running anything:
// picking the network from the conf dir, building each plugin's stdin, reading
// results and plugin errors. CniNetwork does the I/O around these.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shim/network/network_plugin.h"

namespace network {

struct CniNetworkConfig {
  std::string name;         // the conflist "name"; also names the cache file and host-local's store
  std::string cni_version;  // may be empty (plugins read that as 0.1.0)
  nlohmann::json list;      // the whole conflist object; a .conf file is wrapped into one
  std::string file;         // where it was loaded from (empty for a cached copy)
  bool disable_check = false;

  const nlohmann::json& plugins() const { return list.at("plugins"); }
  std::string PluginType(size_t index) const { return plugins().at(index).at("type").get<std::string>(); }
};

// Parses a conflist, or with `single_plugin` a .conf file (one plugin object), which
// is wrapped into a list the way libcni's ConfListFromConf does. INVALID_ARGUMENT
// names what is wrong: invalid JSON, missing name, plugins or type.
absl::StatusOr<CniNetworkConfig> ParseNetworkConfig(absl::string_view text, bool single_plugin);

// The network a pod joins: the first valid *.conflist, *.conf or *.json file in
// `conf_dir` by file name. NOT_FOUND when the directory is missing or has no such
// files; FAILED_PRECONDITION listing why each file was rejected.
absl::StatusOr<CniNetworkConfig> LoadDefaultNetworkConfig(const std::string& conf_dir);

// *.conflist, *.conf and *.json: the files LoadDefaultNetworkConfig considers.
bool IsNetworkConfigFileName(absl::string_view file_name);

// libcni's rule for network names and container IDs, which also end up in file
// names: a letter or digit, then letters, digits, '_', '.' and '-'.
bool IsValidCniIdentifier(absl::string_view id);

// "1.0.0" >= "0.4.0"; an empty or unparsable version counts as 0.1.0.
bool CniVersionAtLeast(absl::string_view version, absl::string_view minimum);

// CNI_ARGS as kubelet passes them, in order. Joined with ';' in the environment.
std::vector<std::pair<std::string, std::string>> CniArgs(const PodNetworkRequest& req);
std::string JoinCniArgs(const std::vector<std::pair<std::string, std::string>>& args);

// The runtime's capability arguments (libcni's RuntimeConf.CapabilityArgs):
// "portMappings" always (kubelet sends an empty list too; entries without a host
// port are dropped), "bandwidth" when a limit is set, "ipRanges" when `pod_cidr` is
// known. Only plugins that declare a capability get its key (BuildPluginConfig).
//
// Bandwidth: the bandwidth plugin takes rates in bit/s and bursts in bits, rejects a
// rate without a burst and a burst of 4 GiB or more. Like kubelet we send a burst of
// INT32_MAX bits (256 MiB): a burst equal to the rate would drop every packet larger
// than the burst at low rates (tbf cannot send a packet bigger than its bucket).
nlohmann::json CapabilityArgs(const PodNetworkRequest& req, const std::string& pod_cidr);

// The stdin config for plugin `index` of `config`, as libcni's buildOneConfig does:
// the plugin object with the list's "name" and "cniVersion", "prevResult" when
// `prev_result` is not null, and "runtimeConfig" holding the capability arguments
// the plugin declares in "capabilities" (none: no runtimeConfig key).
nlohmann::json BuildPluginConfig(const CniNetworkConfig& config, size_t index, const nlohmann::json& prev_result,
                                 const nlohmann::json& capability_args);

struct PodIps {
  std::string primary;  // the first IPv4 address, else the first address
  std::vector<std::string> additional;
};

// The pod's addresses from a CNI result: "ips" (0.3.0 and later) or "ip4"/"ip6"
// (0.1.0/0.2.0), without prefix lengths. An address on a host-side interface (one
// that is neither `ifname` nor has a "sandbox", e.g. the bridge) is not the pod's.
// INVALID_ARGUMENT for a malformed result; an empty `primary` when it has no address.
absl::StatusOr<PodIps> ParseResultIps(const nlohmann::json& result, absl::string_view ifname = "eth0");

// A pod's addresses as the kubelet takes them: the first IPv4 one is the primary (else
// the first), the others follow in their order.
PodIps OrderPodIps(std::vector<std::string> ips);

// The status for a plugin that failed: "CNI plugin bridge failed (ADD): <msg>: <details>"
// from the CNI error JSON on its stdout ({"code","msg","details"}), else
// "...: <how it exited>: <stderr tail>". Code 11 ("try again later") maps to
// UNAVAILABLE, anything else to INTERNAL.
absl::Status PluginFailure(absl::string_view plugin, absl::string_view command, absl::string_view how_it_exited,
                           absl::string_view stdout_text, absl::string_view stderr_text);

}  // namespace network
