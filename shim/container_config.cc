#include "shim/container_config.h"

// Compatibility notes (checked against Mirantis/cri-dockerd core/container_create.go,
// core/helpers_linux.go, core/security_context.go, libdocker/helpers.go and
// moby's create validation):
//
// * The container joins the infra container's network namespace (also for
//   host-network pods: the infra container holds the host network) and so
//   must not carry a hostname, DNS settings or ports: Docker refuses them with
//   a container network mode. Host-network pods get UTSMode "host", which
//   Docker allows there, so that the node's hostname shows.
// * Mounts use HostConfig.Mounts with BindOptions.ReadOnlyNonRecursive, as
//   cri-dockerd does: since API 1.44 Docker makes read-only binds recursively
//   read-only, which is not what Kubernetes' readOnly means. Mounts the kubelet
//   asks to relabel go into Binds with ":Z" instead, the only way to have
//   Docker relabel; the kubelet asks that of its own volumes (secrets, config
//   maps, emptyDirs...), which have no submounts for rro to change. Binds have
//   no mode that forces rro, so a relabelled mount cannot be recursive_read_only.
// * Relabelling happens only when the container has SELinux options (as in
//   cri-dockerd): without them Docker picks a random MCS label per container,
//   and ":Z" would lock a shared volume to the first container that mounts it.
// * Memory without swap (MemorySwap = Memory) unless the kubelet asks for swap.
// * No Docker health check: an image's HEALTHCHECK would run execs in the
//   container for nothing, the kubelet has its own probes.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/status.h"
#include "shim/naming.h"
#include "shim/sandbox_config.h"
#include "shim/security_opts.h"

namespace shim {
namespace {

using runtime::v1::ContainerConfig;
using runtime::v1::LinuxContainerResources;
using runtime::v1::LinuxContainerSecurityContext;
using runtime::v1::PodSandboxConfig;

constexpr char kSwapMaxKey[] = "memory.swap.max";
constexpr char kPidsMaxKey[] = "pids.max";
constexpr char kRuncShimGroupAnnotation[] = "io.containerd.runc.v2.group";

absl::Status Invalid(absl::string_view msg) { return absl::InvalidArgumentError(msg); }

std::string Quote(absl::string_view s) { return absl::StrCat("\"", s, "\""); }

bool IsAbsolute(const std::string& path) { return !path.empty() && path[0] == '/'; }

// Docker takes the environment as JSON text, so a value must be UTF-8 (without
// NUL, which would cut it short at exec); CRI sends values as raw bytes.
bool IsEnvText(absl::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0) return false;
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t extra;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      extra = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (s.size() - i <= extra) return false;
    for (std::size_t k = 1; k <= extra; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMinForLength[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLength[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += extra + 1;
  }
  return true;
}

absl::StatusOr<std::vector<std::string>> MakeEnv(const ContainerConfig& config) {
  std::vector<std::string> env;
  env.reserve(config.envs_size());
  for (int i = 0; i < config.envs_size(); ++i) {
    const runtime::v1::KeyValue& kv = config.envs(i);
    if (kv.key().empty()) return Invalid(absl::StrCat("envs[", i, "]: empty variable name"));
    if (absl::StrContains(kv.key(), '=') || absl::StrContains(kv.key(), '\0')) {
      return Invalid(absl::StrCat("envs[", i, "]: variable name ", Quote(kv.key()), " contains '=' or a NUL byte"));
    }
    if (!IsEnvText(kv.value())) {
      return Invalid(absl::StrCat("envs[", i, "]: the value of ", kv.key(),
                                  " is not UTF-8 text or contains a NUL byte (Docker Engine takes the "
                                  "environment as JSON text)"));
    }
    env.push_back(absl::StrCat(kv.key(), "=", kv.value()));
  }
  return env;
}

// CRI spells real-time signals SIGRTMINPLUS1 and SIGRTMAXMINUS1; Docker wants
// SIGRTMIN+1 and SIGRTMAX-1 (and takes every other CRI name as is).
absl::StatusOr<std::string> DockerStopSignal(runtime::v1::Signal signal) {
  const std::string& name = runtime::v1::Signal_Name(signal);
  if (name.empty()) return Invalid(absl::StrCat("stop_signal: unknown signal ", static_cast<int>(signal)));
  return absl::StrReplaceAll(name, {{"PLUS", "+"}, {"MINUS", "-"}});
}

// ---------------------------------------------------------------------------
// Mounts and devices

absl::StatusOr<std::string> DockerPropagation(runtime::v1::MountPropagation p, absl::string_view field) {
  switch (p) {
    case runtime::v1::PROPAGATION_PRIVATE:
      return std::string();  // Docker's default (rprivate; rslave for sources in its root)
    case runtime::v1::PROPAGATION_HOST_TO_CONTAINER:
      return std::string("rslave");
    case runtime::v1::PROPAGATION_BIDIRECTIONAL:
      return std::string("rshared");
    default:
      return Invalid(absl::StrCat(field, ".propagation: unknown mount propagation ", static_cast<int>(p)));
  }
}

// CRI's rules for recursive_read_only (the kubelet checks them too), then the engine's.
absl::Status CheckRecursiveReadOnly(const runtime::v1::Mount& m, bool relabelled, const EngineFeatures& features,
                                    const std::string& field) {
  if (!m.readonly()) return Invalid(absl::StrCat(field, ".recursive_read_only: needs readonly"));
  if (m.propagation() != runtime::v1::PROPAGATION_PRIVATE) {
    return Invalid(absl::StrCat(field, ".recursive_read_only: needs propagation PROPAGATION_PRIVATE, not ",
                                runtime::v1::MountPropagation_Name(m.propagation())));
  }
  if (!features.recursive_read_only) {
    return Invalid(absl::StrCat(field, ".recursive_read_only: ", EngineName(features),
                                " cannot make recursive read-only mounts; they need API 1.44 (Docker 25) or later"));
  }
  if (relabelled) {
    return Invalid(absl::StrCat(field, ".recursive_read_only: Docker Engine cannot make a mount it relabels for "
                                       "SELinux (selinux_relabel) recursively read-only"));
  }
  return absl::OkStatus();
}

// An image mount, always read-only (the kubelet asks so too). Propagation and SELinux
// relabelling do not apply: nothing mounts below it, and its files are shared by every
// container that mounts the image.
absl::StatusOr<nlohmann::json> ImageMount(const runtime::v1::Mount& m, const std::string& field,
                                          const ContainerCreateParams& params, int index) {
  if (m.image().image().empty()) return Invalid(absl::StrCat(field, ".image_sub_path: set without an image"));
  if (!IsAbsolute(m.container_path())) {
    return Invalid(absl::StrCat(field, ".container_path: ", Quote(m.container_path()), " is not an absolute path"));
  }
  if (m.container_path().find_first_not_of('/') == std::string::npos) {
    return Invalid(absl::StrCat(field, ".container_path: cannot mount over the container's root directory"));
  }
  const auto source = params.image_mount_sources.find(index);
  if (source == params.image_mount_sources.end()) {
    return absl::InternalError(absl::StrCat("container create: the image of ", field, " was not resolved"));
  }
  if (!source->second.host_path.empty()) {
    return nlohmann::json{
        {"Type", "bind"}, {"Source", source->second.host_path}, {"Target", m.container_path()}, {"ReadOnly", true}};
  }
  nlohmann::json mount = {
      {"Type", "image"}, {"Source", source->second.image_id}, {"Target", m.container_path()}, {"ReadOnly", true}};
  if (!m.image_sub_path().empty()) {
    const std::vector<absl::string_view> parts = absl::StrSplit(m.image_sub_path(), '/');
    if (IsAbsolute(m.image_sub_path()) || std::find(parts.begin(), parts.end(), "..") != parts.end()) {
      return Invalid(absl::StrCat(field, ".image_sub_path: ", Quote(m.image_sub_path()),
                                  " is not a relative path inside the image"));
    }
    mount["ImageOptions"] = {{"Subpath", m.image_sub_path()}};
  }
  return mount;
}

absl::Status AddMounts(const ContainerConfig& config, const ContainerCreateParams& params, bool relabel,
                       nlohmann::json& host) {
  nlohmann::json binds = nlohmann::json::array();
  nlohmann::json mounts = nlohmann::json::array();
  for (int i = 0; i < config.mounts_size(); ++i) {
    const runtime::v1::Mount& m = config.mounts(i);
    const std::string field = absl::StrCat("mounts[", i, "]");
    if (!m.image().image().empty() || !m.image_sub_path().empty()) {
      ASSIGN_OR_RETURN(nlohmann::json mount, ImageMount(m, field, params, i));
      mounts.push_back(std::move(mount));
      continue;
    }
    if (m.uidmappings_size() > 0 || m.gidmappings_size() > 0) {
      return Invalid(absl::StrCat(field, ": ID-mapped mounts (uidMappings/gidMappings) need pod user namespaces, "
                                         "which Docker Engine does not support"));
    }
    if (!IsAbsolute(m.container_path())) {
      return Invalid(absl::StrCat(field, ".container_path: ", Quote(m.container_path()),
                                  " is not an absolute path"));
    }
    if (m.container_path().find_first_not_of('/') == std::string::npos) {
      return Invalid(absl::StrCat(field, ".container_path: cannot mount over the container's root directory"));
    }
    if (!IsAbsolute(m.host_path())) {
      return Invalid(absl::StrCat(field, ".host_path: ", Quote(m.host_path()), " is not an absolute path"));
    }
    ASSIGN_OR_RETURN(std::string propagation, DockerPropagation(m.propagation(), field));
    const bool relabelled = relabel && m.selinux_relabel();
    if (m.recursive_read_only()) RETURN_IF_ERROR(CheckRecursiveReadOnly(m, relabelled, params.features, field));

    if (relabelled) {
      if (absl::StrContains(m.host_path(), ':') || absl::StrContains(m.container_path(), ':')) {
        return Invalid(absl::StrCat(field, ": paths of a mount to relabel for SELinux cannot contain ':' (",
                                    Quote(m.host_path()), " -> ", Quote(m.container_path()), ")"));
      }
      std::vector<std::string> opts;
      if (m.readonly()) opts.push_back("ro");
      opts.push_back("Z");
      if (!propagation.empty()) opts.push_back(propagation);
      binds.push_back(absl::StrCat(m.host_path(), ":", m.container_path(), ":", absl::StrJoin(opts, ",")));
      continue;
    }
    // CreateMountpoint (API 1.42+) creates a missing host path, as Binds do.
    nlohmann::json bind_options = {{"CreateMountpoint", true}};
    if (!propagation.empty()) bind_options["Propagation"] = propagation;
    nlohmann::json mount = {{"Type", "bind"}, {"Source", m.host_path()}, {"Target", m.container_path()}};
    if (m.readonly()) {
      mount["ReadOnly"] = true;
      // Both API 1.44+. Forced, Docker fails the container where the kernel (5.12+) or
      // runtime cannot make it recursive, as CRI wants; older APIs are never recursive.
      bind_options[m.recursive_read_only() ? "ReadOnlyForceRecursive" : "ReadOnlyNonRecursive"] = true;
    }
    mount["BindOptions"] = std::move(bind_options);
    mounts.push_back(std::move(mount));
  }
  if (!binds.empty()) host["Binds"] = std::move(binds);
  if (!mounts.empty()) host["Mounts"] = std::move(mounts);
  return absl::OkStatus();
}

// A CDI name part by the CDI parser's rules: letters, digits and `extra`, starting with a
// letter (or a digit, when `digit_first`) and ending with a letter or digit.
bool IsCdiNamePart(absl::string_view s, bool digit_first, absl::string_view extra) {
  if (s.empty() || !absl::ascii_isalnum(s.back())) return false;
  if (!(absl::ascii_isalpha(s.front()) || (digit_first && absl::ascii_isdigit(s.front())))) return false;
  return std::all_of(s.begin(), s.end(), [extra](char c) { return absl::ascii_isalnum(c) || absl::StrContains(extra, c); });
}

// "vendor.com/class=device".
bool IsQualifiedCdiName(absl::string_view name) {
  const std::size_t eq = name.find('=');
  if (eq == absl::string_view::npos) return false;
  const absl::string_view kind = name.substr(0, eq);
  const std::size_t slash = kind.find('/');
  if (slash == absl::string_view::npos) return false;
  return IsCdiNamePart(kind.substr(0, slash), false, "_-.") && IsCdiNamePart(kind.substr(slash + 1), false, "_-") &&
         IsCdiNamePart(name.substr(eq + 1), true, "_-.:");
}

constexpr absl::string_view kCdiAnnotationPrefix = "cdi.k8s.io/";

// The CDI devices of CDI_devices and, as device plugins of kubelets before CDI_devices
// (1.28) send them, of "cdi.k8s.io/..." annotations holding comma-separated names;
// containerd reads both. Each once, in that order.
absl::StatusOr<std::vector<std::string>> CdiDevices(const ContainerConfig& config) {
  std::vector<std::string> names;
  const auto add = [&names](std::string name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
  };
  for (int i = 0; i < config.cdi_devices_size(); ++i) {
    const std::string& name = config.cdi_devices(i).name();
    if (!IsQualifiedCdiName(name)) {
      return Invalid(absl::StrCat("CDI_devices[", i, "].name: ", Quote(name),
                                  " is not a fully qualified CDI device name (vendor/class=device)"));
    }
    add(name);
  }
  // Sorted, so that the request does not depend on the map's order.
  const std::map<std::string, std::string> annotations(config.annotations().begin(), config.annotations().end());
  for (const auto& [key, value] : annotations) {
    if (!absl::StartsWith(key, kCdiAnnotationPrefix)) continue;
    for (absl::string_view name : absl::StrSplit(value, ',')) {
      if (!IsQualifiedCdiName(name)) {
        return Invalid(absl::StrCat("annotations[", Quote(key), "]: ", Quote(name),
                                    " is not a fully qualified CDI device name (vendor/class=device)"));
      }
      add(std::string(name));
    }
  }
  return names;
}

absl::Status AddDevices(const ContainerConfig& config, const EngineFeatures& features, nlohmann::json& host) {
  nlohmann::json devices = nlohmann::json::array();
  for (int i = 0; i < config.devices_size(); ++i) {
    const runtime::v1::Device& d = config.devices(i);
    const std::string field = absl::StrCat("devices[", i, "]");
    if (!IsAbsolute(d.host_path())) {
      return Invalid(absl::StrCat(field, ".host_path: ", Quote(d.host_path()), " is not an absolute path"));
    }
    if (!IsAbsolute(d.container_path())) {
      return Invalid(absl::StrCat(field, ".container_path: ", Quote(d.container_path()),
                                  " is not an absolute path"));
    }
    // Empty: all access, Docker's own default for --device.
    const std::string permissions = d.permissions().empty() ? "rwm" : d.permissions();
    if (permissions.find_first_not_of("rwm") != std::string::npos) {
      return Invalid(absl::StrCat(field, ".permissions: ", Quote(d.permissions()),
                                  " is not a device cgroup access (letters r, w and m)"));
    }
    devices.push_back({{"PathOnHost", d.host_path()},
                       {"PathInContainer", d.container_path()},
                       {"CgroupPermissions", permissions}});
  }
  if (!devices.empty()) host["Devices"] = std::move(devices);

  // Docker resolves CDI names itself where its CDI support is on; elsewhere the start
  // would fail with Docker's "could not select device driver".
  ASSIGN_OR_RETURN(std::vector<std::string> cdi, CdiDevices(config));
  if (cdi.empty()) return absl::OkStatus();
  if (!features.cdi) {
    return absl::FailedPreconditionError(absl::StrCat(
        "CDI devices (", absl::StrJoin(cdi, ", "), "): ", EngineName(features),
        " has no CDI enabled; CDI needs Docker 25 or later (API 1.44), on by default from Docker 28.2 and "
        "before that enabled with \"features\": {\"cdi\": true} in daemon.json (Docker 25 also wants \"experimental\": "
        "true)"));
  }
  // One request for all names, as the docker CLI sends --device vendor/class=name.
  host["DeviceRequests"] = nlohmann::json::array({{{"Driver", "cdi"}, {"DeviceIDs", cdi}}});
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Resources

// Docker's MemorySwap counts memory plus swap (-1: unlimited swap) and needs a
// memory limit. nullopt: leave Docker's default.
absl::StatusOr<std::optional<int64_t>> MemorySwap(const LinuxContainerResources& r) {
  const int64_t memory = r.memory_limit_in_bytes();
  // Kubelets on cgroup v1 use CRI's field, which means what Docker's means.
  if (r.memory_swap_limit_in_bytes() != 0) {
    if (memory == 0) {
      return Invalid(
          "linux.resources.memory_swap_limit_in_bytes: Docker Engine cannot limit swap without a memory limit "
          "(memory_limit_in_bytes)");
    }
    if (r.memory_swap_limit_in_bytes() < memory) {
      return Invalid(absl::StrCat("linux.resources.memory_swap_limit_in_bytes: ", r.memory_swap_limit_in_bytes(),
                                  " is below memory_limit_in_bytes ", memory, " (it counts memory plus swap)"));
    }
    return std::optional<int64_t>(r.memory_swap_limit_in_bytes());
  }
  // Without a memory limit Docker cannot cap swap: the kubelet's memory.swap.max=0
  // for best-effort containers is left undone (it matters only on nodes with swap).
  if (memory == 0) return std::optional<int64_t>();
  auto it = r.unified().find(kSwapMaxKey);
  if (it == r.unified().end()) return std::optional<int64_t>(memory);  // no swap, as cri-dockerd
  // Kubelets on cgroup v2 give the swap alone.
  if (it->second == "max") return std::optional<int64_t>(-1);
  int64_t swap = 0;
  if (it->second.empty() || it->second.find_first_not_of("0123456789") != std::string::npos ||
      !absl::SimpleAtoi(it->second, &swap) || swap > std::numeric_limits<int64_t>::max() - memory) {
    return Invalid(absl::StrCat("linux.resources.unified[\"", kSwapMaxKey, "\"]: ", Quote(it->second),
                                " is not a byte count or \"max\""));
  }
  return std::optional<int64_t>(memory + swap);
}

// Docker's PidsLimit from unified pids.max (the kubelet sets the pod's pids.max itself;
// a container's comes only from here). nullopt: leave Docker's default.
absl::StatusOr<std::optional<int64_t>> PidsLimit(const LinuxContainerResources& r) {
  auto it = r.unified().find(kPidsMaxKey);
  if (it == r.unified().end()) return std::optional<int64_t>();
  if (it->second == "max") return std::optional<int64_t>(-1);  // Docker's "unlimited" at create and update
  int64_t limit = 0;
  if (it->second.empty() || it->second.find_first_not_of("0123456789") != std::string::npos ||
      !absl::SimpleAtoi(it->second, &limit) || limit == 0) {
    return Invalid(absl::StrCat("linux.resources.unified[\"", kPidsMaxKey, "\"]: ", Quote(it->second),
                                " is not a positive process count or \"max\" (Docker Engine takes 0 for unlimited)"));
  }
  return std::optional<int64_t>(limit);
}

}  // namespace

absl::StatusOr<nlohmann::json> MakeResourceLimits(const LinuxContainerResources& r) {
  nlohmann::json host = nlohmann::json::object();
  if (r.cpu_period() != 0) host["CpuPeriod"] = r.cpu_period();
  if (r.cpu_quota() != 0) host["CpuQuota"] = r.cpu_quota();
  if (r.cpu_shares() != 0) host["CpuShares"] = r.cpu_shares();
  if (!r.cpuset_cpus().empty()) host["CpusetCpus"] = r.cpuset_cpus();
  if (!r.cpuset_mems().empty()) host["CpusetMems"] = r.cpuset_mems();
  if (r.memory_limit_in_bytes() < 0) {
    return Invalid(absl::StrCat("linux.resources.memory_limit_in_bytes: ", r.memory_limit_in_bytes(),
                                " is negative"));
  }
  if (r.memory_swap_limit_in_bytes() < 0) {
    return Invalid(absl::StrCat("linux.resources.memory_swap_limit_in_bytes: ", r.memory_swap_limit_in_bytes(),
                                " is negative"));
  }
  if (r.memory_limit_in_bytes() > 0) host["Memory"] = r.memory_limit_in_bytes();
  ASSIGN_OR_RETURN(std::optional<int64_t> swap, MemorySwap(r));
  if (swap.has_value()) host["MemorySwap"] = *swap;
  ASSIGN_OR_RETURN(std::optional<int64_t> pids, PidsLimit(r));
  if (pids.has_value()) host["PidsLimit"] = *pids;
  // Hugepage limits and the other unified keys have no Docker field: the shim writes
  // them into the container's cgroup itself (ShimCgroupFiles).
  return host;
}

absl::StatusOr<CgroupFileValues> ShimCgroupFiles(const LinuxContainerResources& r) {
  CgroupFileValues files;
  for (int i = 0; i < r.hugepage_limits_size(); ++i) {
    const std::string& size = r.hugepage_limits(i).page_size();
    // The kernel's names: "64KB", "2MB", "1GB" (hugetlb_cgroup.c, as the kubelet spells them).
    const size_t unit = size.find_first_not_of("0123456789");
    if (unit == 0 || unit == std::string::npos || (size.substr(unit) != "KB" && size.substr(unit) != "MB" &&
                                                   size.substr(unit) != "GB")) {
      return Invalid(absl::StrCat("linux.resources.hugepage_limits[", i, "].page_size: ", Quote(size),
                                  " is not a page size (e.g. 2MB, 1GB)"));
    }
    files[absl::StrCat("hugetlb.", size, ".max")] = absl::StrCat(r.hugepage_limits(i).limit());
  }
  // Unified keys last: they win over the fields, as in runc.
  for (const auto& [key, value] : r.unified()) {
    RETURN_IF_ERROR(CheckCgroupFileName(key, absl::StrCat("linux.resources.unified[", Quote(key), "]")));
    if (key == kPidsMaxKey || (key == kSwapMaxKey && r.memory_limit_in_bytes() != 0)) continue;  // Docker's fields
    files[key] = value;
  }
  return files;
}

std::string CgroupFilesLabel(const CgroupFileValues& files) { return nlohmann::json(files).dump(); }

CgroupFileValues CgroupFilesOfLabels(const std::map<std::string, std::string>& labels) {
  const std::string text = LabelValue(labels, kCgroupFilesLabel);
  if (text.empty()) return {};
  const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  CgroupFileValues files;
  if (!parsed.is_object()) return files;
  for (const auto& [name, value] : parsed.items())
    if (value.is_string()) files[name] = value.get<std::string>();
  return files;
}

namespace {

absl::Status AddResources(const LinuxContainerResources& r, int oom_score_adj_floor, nlohmann::json& host) {
  ASSIGN_OR_RETURN(nlohmann::json limits, MakeResourceLimits(r));
  host.update(limits);
  if (r.oom_score_adj() < -1000 || r.oom_score_adj() > 1000) {
    return Invalid(absl::StrCat("linux.resources.oom_score_adj: ", r.oom_score_adj(), " is outside -1000..1000"));
  }
  host["OomScoreAdj"] = std::max<int64_t>(r.oom_score_adj(), oom_score_adj_floor);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Namespaces and security

absl::Status AddNamespaces(const ContainerConfig& config, const PodSandboxConfig& sandbox_config,
                           const ContainerCreateParams& params, nlohmann::json& host) {
  // The pod decides network and IPC; the kubelet sends the same modes for its containers.
  const runtime::v1::NamespaceOption& pod_ns = sandbox_config.linux().security_context().namespace_options();
  const std::string sandbox_mode = absl::StrCat("container:", params.sandbox_id);
  host["NetworkMode"] = sandbox_mode;
  if (pod_ns.network() == runtime::v1::NODE) host["UTSMode"] = "host";
  host["IpcMode"] = pod_ns.ipc() == runtime::v1::NODE ? "host" : sandbox_mode;
  // containerd's runc shim serves every container whose OCI spec names the same group from
  // one process, and a container without the annotation is its own group (its ID): so the
  // pod's containers join the shim of its infra container, as containerd's CRI does. That
  // saves a shim process (about 5 MB) per container and its start (about 40 ms). Other
  // shims (runsc, kata) do not read the key.
  if (params.features.annotations) host["Annotations"] = {{kRuncShimGroupAnnotation, params.sandbox_id}};

  const runtime::v1::NamespaceOption& ns = config.linux().security_context().namespace_options();
  switch (ns.pid()) {
    case runtime::v1::CONTAINER:
      break;  // a PID namespace of its own: Docker's default
    case runtime::v1::POD:
      host["PidMode"] = sandbox_mode;
      break;
    case runtime::v1::NODE:
      host["PidMode"] = "host";
      break;
    case runtime::v1::TARGET:
      if (!params.pid_target_container_id.has_value() || params.pid_target_container_id->empty()) {
        return Invalid(
            "linux.security_context.namespace_options.pid: mode TARGET needs the target container (target_id)");
      }
      host["PidMode"] = absl::StrCat("container:", *params.pid_target_container_id);
      break;
    default:
      return Invalid(absl::StrCat("linux.security_context.namespace_options.pid: unknown mode ",
                                  static_cast<int>(ns.pid())));
  }
  return CheckUserNamespace(ns);
}

// Each in CapabilityName's spelling (Docker accepts both; one makes bodies comparable),
// checked to be a capability name.
absl::StatusOr<std::vector<std::string>> NormalizeCapabilities(
    const google::protobuf::RepeatedPtrField<std::string>& caps, absl::string_view field) {
  std::vector<std::string> out;
  out.reserve(caps.size());
  for (int i = 0; i < caps.size(); ++i) {
    std::string cap = CapabilityName(caps[i]);
    const std::string_view name = std::string_view(cap).substr(cap == "ALL" ? 0 : 4);  // after "CAP_"
    const bool valid = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    });
    if (!valid) {
      return Invalid(absl::StrCat("linux.security_context.capabilities.", field, "[", i, "]: ", Quote(caps[i]),
                                  " is not a capability name (want e.g. NET_ADMIN, CAP_NET_ADMIN or ALL)"));
    }
    out.push_back(std::move(cap));
  }
  return out;
}

absl::Status AddSecurity(const LinuxContainerSecurityContext& sc, const ContainerCreateParams& params,
                         nlohmann::json& body, nlohmann::json& host) {
  ASSIGN_OR_RETURN(std::string user, MakeDockerUser(sc.has_run_as_user() ? &sc.run_as_user() : nullptr,
                                                   sc.run_as_username(),
                                                   sc.has_run_as_group() ? &sc.run_as_group() : nullptr));
  if (!user.empty()) body["User"] = user;
  // Docker always adds the groups the image's /etc/group gives the user.
  if (sc.supplemental_groups_policy() == runtime::v1::Strict) {
    return Invalid(
        "linux.security_context.supplemental_groups_policy: Strict is not supported on Docker Engine, which "
        "always adds the groups the image gives the user");
  }
  ASSIGN_OR_RETURN(std::vector<std::string> groups, MakeGroupAdd(sc.supplemental_groups()));
  if (!groups.empty()) host["GroupAdd"] = std::move(groups);
  const bool emulate_privileged = sc.privileged() && params.restricted_capabilities;
  if (sc.privileged() && !emulate_privileged) host["Privileged"] = true;
  if (sc.readonly_rootfs()) host["ReadonlyRootfs"] = true;

  std::vector<std::string> security_opts;
  AppendSELinuxOpts(sc.selinux_options(), security_opts);
  if (emulate_privileged) {
    AddPrivilegedWithoutTheFlag(*params.restricted_capabilities, params.host_devices, host, security_opts);
  }
  // Docker gives privileged containers every capability and no seccomp,
  // AppArmor or path masking whatever is asked, so none of it is looked at.
  if (!sc.privileged()) {
    RETURN_IF_ERROR(AppendAppArmorOpt(sc, security_opts));
    RETURN_IF_ERROR(AppendSeccompOpt(sc, params.seccomp_profile_root, security_opts));
    // add_ambient_capabilities is ignored: Docker has no ambient capabilities,
    // and the kubelet never sends them.
    ASSIGN_OR_RETURN(std::vector<std::string> cap_add,
                     NormalizeCapabilities(sc.capabilities().add_capabilities(), "add_capabilities"));
    ASSIGN_OR_RETURN(std::vector<std::string> cap_drop,
                     NormalizeCapabilities(sc.capabilities().drop_capabilities(), "drop_capabilities"));
    if (params.restricted_capabilities) cap_add = GrantableCapabilities(cap_add, *params.restricted_capabilities);
    if (!cap_add.empty()) host["CapAdd"] = std::move(cap_add);
    if (!cap_drop.empty()) host["CapDrop"] = std::move(cap_drop);
    // An empty list leaves Docker's defaults: CRI cannot tell "unset" from "empty",
    // and the kubelet sends the defaults explicitly.
    if (!sc.masked_paths().empty()) {
      host["MaskedPaths"] = std::vector<std::string>(sc.masked_paths().begin(), sc.masked_paths().end());
    }
    if (!sc.readonly_paths().empty()) {
      host["ReadonlyPaths"] = std::vector<std::string>(sc.readonly_paths().begin(), sc.readonly_paths().end());
    }
  }
  if (sc.no_new_privs()) security_opts.push_back("no-new-privileges");
  if (!security_opts.empty()) host["SecurityOpt"] = std::move(security_opts);
  return absl::OkStatus();
}

bool HasSELinuxOptions(const runtime::v1::SELinuxOption& se) {
  return !se.user().empty() || !se.role().empty() || !se.type().empty() || !se.level().empty();
}

}  // namespace

absl::StatusOr<nlohmann::json> MakeContainerCreateBody(const ContainerConfig& config,
                                                       const PodSandboxConfig& sandbox_config,
                                                       const ContainerCreateParams& params) {
  if (!config.has_metadata()) return Invalid("container config: metadata is required");
  if (config.metadata().name().empty()) return Invalid("container config: metadata.name is required");
  if (config.image().image().empty()) return Invalid("container config: image.image is required");
  if (params.image.empty()) return absl::InternalError("container create: the image was not resolved");
  if (params.sandbox_id.empty()) return absl::InternalError("container create: no pod sandbox ID");

  nlohmann::json body = nlohmann::json::object();
  nlohmann::json host = nlohmann::json::object();
  body["Image"] = params.image;

  std::map<std::string, std::string> internal = {{kContainerTypeLabel, kContainerTypeContainer},
                                                 {kSandboxIdLabel, params.sandbox_id}};
  if (!params.log_path.empty()) internal[kContainerLogPathLabel] = params.log_path;
  std::vector<std::string> unpacked_images;
  for (const auto& [index, source] : params.image_mount_sources) {
    if (!source.host_path.empty() &&
        std::find(unpacked_images.begin(), unpacked_images.end(), source.image_id) == unpacked_images.end()) {
      unpacked_images.push_back(source.image_id);
    }
  }
  if (!unpacked_images.empty()) internal[kImageVolumesLabel] = absl::StrJoin(unpacked_images, ",");
  ASSIGN_OR_RETURN(CgroupFileValues cgroup_files, ShimCgroupFiles(config.linux().resources()));
  if (!cgroup_files.empty()) internal[kCgroupFilesLabel] = CgroupFilesLabel(cgroup_files);
  body["Labels"] = MakeLabels(config.labels(), config.annotations(), internal);

  // An Entrypoint without Cmd makes Docker drop the image's CMD too, as
  // Kubernetes wants for a command without args.
  if (!config.command().empty()) {
    body["Entrypoint"] = std::vector<std::string>(config.command().begin(), config.command().end());
  }
  if (!config.args().empty()) body["Cmd"] = std::vector<std::string>(config.args().begin(), config.args().end());
  ASSIGN_OR_RETURN(std::vector<std::string> env, MakeEnv(config));
  if (!env.empty()) body["Env"] = std::move(env);
  if (!config.working_dir().empty()) {
    if (!IsAbsolute(config.working_dir())) {
      return Invalid(absl::StrCat("working_dir: ", Quote(config.working_dir()), " is not an absolute path"));
    }
    body["WorkingDir"] = config.working_dir();
  }
  body["Tty"] = config.tty();
  body["OpenStdin"] = config.stdin();
  body["StdinOnce"] = config.stdin_once();
  if (config.stop_signal() != runtime::v1::RUNTIME_DEFAULT) {
    ASSIGN_OR_RETURN(body["StopSignal"], DockerStopSignal(config.stop_signal()));
  }
  body["Healthcheck"] = {{"Test", nlohmann::json::array({"NONE"})}};

  RETURN_IF_ERROR(AddNamespaces(config, sandbox_config, params, host));
  const LinuxContainerSecurityContext& sc = config.linux().security_context();
  RETURN_IF_ERROR(AddMounts(config, params, HasSELinuxOptions(sc.selinux_options()), host));
  RETURN_IF_ERROR(AddDevices(config, params.features, host));
  RETURN_IF_ERROR(AddResources(config.linux().resources(), params.oom_score_adj_floor, host));
  RETURN_IF_ERROR(AddSecurity(sc, params, body, host));

  // Containers live in their pod's cgroup.
  if (!sandbox_config.linux().cgroup_parent().empty()) {
    absl::StatusOr<std::string> cgroup_parent =
        ConvertCgroupParent(sandbox_config.linux().cgroup_parent(), params.cgroup_driver);
    if (!cgroup_parent.ok()) return common::Annotate(cgroup_parent.status(), "sandbox_config.linux.cgroup_parent");
    if (!cgroup_parent->empty()) host["CgroupParent"] = *cgroup_parent;
  }
  if (!params.docker_runtime.empty()) host["Runtime"] = params.docker_runtime;
  // Windows settings do not apply on a Linux node.

  body["HostConfig"] = std::move(host);
  return body;
}

}  // namespace shim
