#include "shim/capabilities.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace shim {
namespace {

// linux/capability.h, by bit number.
constexpr std::array<const char*, 41> kCapabilityNames = {
    "CAP_CHOWN",           "CAP_DAC_OVERRIDE",   "CAP_DAC_READ_SEARCH", "CAP_FOWNER",         "CAP_FSETID",
    "CAP_KILL",            "CAP_SETGID",         "CAP_SETUID",          "CAP_SETPCAP",        "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN",       "CAP_NET_RAW",        "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",       "CAP_SYS_MODULE",     "CAP_SYS_RAWIO",       "CAP_SYS_CHROOT",     "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",       "CAP_SYS_ADMIN",      "CAP_SYS_BOOT",        "CAP_SYS_NICE",       "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",        "CAP_SYS_TTY_CONFIG", "CAP_MKNOD",           "CAP_LEASE",          "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",   "CAP_SETFCAP",        "CAP_MAC_OVERRIDE",    "CAP_MAC_ADMIN",      "CAP_SYSLOG",
    "CAP_WAKE_ALARM",      "CAP_BLOCK_SUSPEND",  "CAP_AUDIT_READ",      "CAP_PERFMON",        "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE"};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::optional<HostCapabilities> ParseHostCapabilities(std::string_view proc_status, int last_cap) {
  for (absl::string_view line : absl::StrSplit(absl::string_view(proc_status.data(), proc_status.size()), '\n')) {
    if (!absl::ConsumePrefix(&line, "CapBnd:")) continue;
    uint64_t mask = 0;
    if (!absl::SimpleHexAtoi(absl::StripAsciiWhitespace(line), &mask)) return std::nullopt;
    HostCapabilities caps;
    const int last = std::min<int>(last_cap, static_cast<int>(kCapabilityNames.size()) - 1);
    for (int bit = 0; bit <= last; ++bit) {
      (mask >> bit & 1 ? caps.grantable : caps.missing).push_back(kCapabilityNames[bit]);
    }
    return caps;
  }
  return std::nullopt;
}

std::optional<HostCapabilities> ReadHostCapabilities(const std::string& proc_root, int last_known) {
  int last_cap = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadAll(proc_root + "/sys/kernel/cap_last_cap")), &last_cap)) {
    return std::nullopt;
  }
  return ParseHostCapabilities(ReadAll(proc_root + "/self/status"), std::min(last_cap, last_known));
}

bool EngineGrantsAllCapabilitiesItself(std::string_view server_version) {
  int major = 0;
  const std::string_view head = server_version.substr(0, server_version.find('.'));
  return absl::SimpleAtoi(absl::string_view(head.data(), head.size()), &major) && major >= 23;
}

std::string CapabilityName(std::string_view name) {
  std::string upper = absl::AsciiStrToUpper(absl::string_view(name.data(), name.size()));
  if (upper == "ALL" || absl::StartsWith(upper, "CAP_")) return upper;
  return "CAP_" + upper;
}

bool AsksBeyond(std::string_view name, const HostCapabilities& host) {
  const std::string cap = CapabilityName(name);
  return cap == "ALL" || std::find(host.missing.begin(), host.missing.end(), cap) != host.missing.end();
}

std::vector<std::string> GrantableCapabilities(const std::vector<std::string>& cap_add, const HostCapabilities& host) {
  if (std::find(cap_add.begin(), cap_add.end(), "ALL") != cap_add.end()) return host.grantable;
  std::vector<std::string> out;
  for (const std::string& cap : cap_add) {
    if (std::find(host.missing.begin(), host.missing.end(), cap) == host.missing.end()) out.push_back(cap);
  }
  return out;
}

std::vector<std::string> HostDeviceNodes(const std::string& dev_root) {
  namespace fs = std::filesystem;
  static const std::set<std::string> kSkippedDirs = {"pts", "shm", "mqueue"};
  static const std::set<std::string> kEveryContainersOwn = {"null",    "zero", "full",    "random",
                                                             "urandom", "tty",  "console", "ptmx"};
  std::vector<std::string> out;
  std::error_code ec;
  fs::recursive_directory_iterator it(dev_root, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const fs::file_status status = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_directory(status)) {
      if (it.depth() == 0 && kSkippedDirs.count(name)) it.disable_recursion_pending();
      continue;
    }
    if (!fs::is_character_file(status) && !fs::is_block_file(status)) continue;
    if (it.depth() == 0 && kEveryContainersOwn.count(name)) continue;
    out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void AddPrivilegedWithoutTheFlag(const HostCapabilities& host, const std::vector<std::string>& devices,
                                 nlohmann::json& host_config, std::vector<std::string>& security_opts) {
  host_config["CapAdd"] = host.grantable;
  host_config.erase("CapDrop");
  nlohmann::json mapped = nlohmann::json::array();
  for (const std::string& path : devices) {
    mapped.push_back({{"PathOnHost", path}, {"PathInContainer", path}, {"CgroupPermissions", "rwm"}});
  }
  host_config["Devices"] = std::move(mapped);
  host_config["DeviceCgroupRules"] = {"a *:* rwm"};
  host_config["MaskedPaths"] = nlohmann::json::array();
  host_config["ReadonlyPaths"] = nlohmann::json::array();
  security_opts.push_back("seccomp=unconfined");
  security_opts.push_back("apparmor=unconfined");
}

}  // namespace shim
