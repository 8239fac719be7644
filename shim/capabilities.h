#pragma once
// Restricted hosts (nested or sandboxed nodes) have a capability bounding set without
// some capabilities (e.g. CAP_SYS_RESOURCE). Docker before 23 turns "ALL" into every
// capability the kernel knows, and runc then fails the container with "unable to
// apply caps". On such hosts the shim asks for what the host can grant instead: "ALL"
// becomes that list, and a named capability the host lacks is left out (logged once).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace shim {

struct HostCapabilities {
  std::vector<std::string> grantable;  // "CAP_CHOWN", ... in bit order
  std::vector<std::string> missing;    // known to the kernel, not in the bounding set
};

// The last capability Docker before 23 knows (CAP_AUDIT_READ): it refuses the names
// of newer ones (CAP_PERFMON, CAP_BPF, CAP_CHECKPOINT_RESTORE), and its ALL stops here.
inline constexpr int kLastCapabilityBeforeDocker23 = 37;

// From /proc/self/status's CapBnd mask, for the capabilities up to `last_cap` (the
// kernel's /proc/sys/kernel/cap_last_cap, or less). Unset when the status has no
// CapBnd line.
std::optional<HostCapabilities> ParseHostCapabilities(std::string_view proc_status, int last_cap);
// This host's, read under `proc_root`, up to `last_known` at most; unset when it cannot be read.
std::optional<HostCapabilities> ReadHostCapabilities(const std::string& proc_root = "/proc",
                                                     int last_known = kLastCapabilityBeforeDocker23);

// Docker Engines from 23 on ask runc only for what the bounding set holds.
bool EngineGrantsAllCapabilitiesItself(std::string_view server_version);

// The spelling Docker bodies use: "net_admin", "CAP_NET_ADMIN" -> "CAP_NET_ADMIN";
// "all" -> "ALL" (Docker's word for every capability). No validation.
std::string CapabilityName(std::string_view name);
// Whether adding `name` (any spelling) asks for something `host` cannot grant: ALL,
// or a capability it lacks.
bool AsksBeyond(std::string_view name, const HostCapabilities& host);

// `cap_add` (normalized: "ALL" or "CAP_*") as this host can grant it.
std::vector<std::string> GrantableCapabilities(const std::vector<std::string>& cap_add, const HostCapabilities& host);

// The device nodes under `dev_root` (recursively; not pts, shm, mqueue), less those
// every container gets anyway (null, zero, full, random, urandom, tty, console, ptmx).
std::vector<std::string> HostDeviceNodes(const std::string& dev_root = "/dev");

// Privileged without Docker's flag, where that flag would ask runc for capabilities the
// host lacks: every capability the host grants, every host device and access to any
// device, no seccomp or AppArmor confinement, no masked or read-only /proc paths. /sys
// and the cgroup file system stay read-only: Docker's API has no switch for that part
// but the flag itself.
void AddPrivilegedWithoutTheFlag(const HostCapabilities& host, const std::vector<std::string>& devices,
                                 nlohmann::json& host_config, std::vector<std::string>& security_opts);

}  // namespace shim
