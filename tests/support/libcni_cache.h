#pragma once
// What libcni (and so cri-dockerd) leaves in its cache after an ADD, for tests that set
// up a pod the way cri-dockerd does: <cache dir>/results/<network>-<container ID>-<ifname>.
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"

namespace testsupport {

// libcni's cachedInfo as it marshals it: "config" is Go's []byte (base64) of the
// conflist, "cniArgs" as cri-dockerd passes them, no "createdBy" (dockershim's mark).
inline nlohmann::json LibcniCacheRecord(const std::string& network, const std::string& container_id,
                                        const std::string& ifname, const std::string& conflist,
                                        const nlohmann::json& result, const std::string& netns = "") {
  nlohmann::json record = {{"kind", "cniCacheV1"},
                           {"containerId", container_id},
                           {"config", absl::Base64Escape(conflist)},
                           {"ifName", ifname},
                           {"networkName", network},
                           {"cniArgs",
                            {{"IgnoreUnknown", "1"},
                             {"K8S_POD_NAMESPACE", "default"},
                             {"K8S_POD_NAME", "web"},
                             {"K8S_POD_INFRA_CONTAINER_ID", container_id}}},
                           {"capabilityArgs", {{"portMappings", nlohmann::json::array()}}},
                           {"result", result}};
  if (!netns.empty()) record["netns"] = netns;
  return record;
}

// Writes `text` where libcni would keep the record; returns the path.
inline std::string WriteLibcniCacheFile(const std::string& cache_dir, const std::string& network,
                                        const std::string& container_id, const std::string& ifname,
                                        const std::string& text) {
  std::filesystem::create_directories(cache_dir + "/results");
  const std::string path = cache_dir + "/results/" + network + "-" + container_id + "-" + ifname;
  std::ofstream(path) << text;
  return path;
}

}  // namespace testsupport
