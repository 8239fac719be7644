#include "dockerclient/types.h"

namespace dockerclient {
namespace {

using nlohmann::json;

// Accessors that read a field when it has the expected type and otherwise give the
// default: Docker sends null for empty lists and maps, and older engines omit fields.
const json& Field(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

std::string Str(const json& j, const char* key) {
  const json& v = Field(j, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

int64_t Int(const json& j, const char* key) {
  const json& v = Field(j, key);
  if (v.is_number_integer()) return v.get<int64_t>();
  // A float outside int64's range (or NaN) has no integer to convert to (UB): 0.
  if (v.is_number_float() && v.get<double>() >= -0x1p63 && v.get<double>() < 0x1p63)
    return static_cast<int64_t>(v.get<double>());
  return 0;
}

bool Bool(const json& j, const char* key, bool fallback = false) {
  const json& v = Field(j, key);
  return v.is_boolean() ? v.get<bool>() : fallback;
}

// A list of strings; a lone string (old Entrypoint/Cmd form) becomes a one-element list.
std::vector<std::string> Strings(const json& j, const char* key) {
  const json& v = Field(j, key);
  std::vector<std::string> out;
  if (v.is_string()) {
    out.push_back(v.get<std::string>());
  } else if (v.is_array()) {
    for (const json& item : v) {
      if (item.is_string()) out.push_back(item.get<std::string>());
    }
  }
  return out;
}

Labels StringMap(const json& j, const char* key) {
  const json& v = Field(j, key);
  Labels out;
  if (!v.is_object()) return out;
  for (const auto& [k, value] : v.items()) {
    if (value.is_string()) out.emplace(k, value.get<std::string>());
  }
  return out;
}

// Names of an object's members, e.g. Volumes {"/data": {}} or Runtimes {"runc": {...}}.
std::vector<std::string> Keys(const json& j, const char* key) {
  const json& v = Field(j, key);
  std::vector<std::string> out;
  if (!v.is_object()) return out;
  for (const auto& item : v.items()) out.push_back(item.key());
  return out;
}

// The top-level address, else the first attached network's non-empty one.
std::string NetworkAddress(const json& settings, const char* key) {
  std::string address = Str(settings, key);
  if (!address.empty()) return address;
  const json& networks = Field(settings, "Networks");
  if (!networks.is_object()) return address;
  for (const auto& network : networks.items()) {
    address = Str(network.value(), key);
    if (!address.empty()) break;
  }
  return address;
}

}  // namespace

VersionInfo ParseVersion(const json& j) {
  VersionInfo v;
  v.version = Str(j, "Version");
  v.api_version = Str(j, "ApiVersion");
  v.min_api_version = Str(j, "MinAPIVersion");
  v.os = Str(j, "Os");
  v.arch = Str(j, "Arch");
  v.kernel_version = Str(j, "KernelVersion");
  return v;
}

SystemInfo ParseInfo(const json& j) {
  SystemInfo s;
  s.id = Str(j, "ID");
  s.name = Str(j, "Name");
  s.docker_root_dir = Str(j, "DockerRootDir");
  s.driver = Str(j, "Driver");
  s.cgroup_driver = Str(j, "CgroupDriver");
  s.cgroup_version = Str(j, "CgroupVersion");
  s.default_runtime = Str(j, "DefaultRuntime");
  s.runtimes = Keys(j, "Runtimes");
  s.server_version = Str(j, "ServerVersion");
  s.kernel_version = Str(j, "KernelVersion");
  s.operating_system = Str(j, "OperatingSystem");
  const json& status = Field(j, "DriverStatus");  // [["driver-type", "io.containerd.snapshotter.v1"], ...]
  if (status.is_array()) {
    for (const json& pair : status) {
      if (pair.is_array() && pair.size() == 2 && pair[0] == "driver-type" && pair[1].is_string())
        s.driver_type = pair[1].get<std::string>();
    }
  }
  const json& containerd = Field(j, "Containerd");
  s.containerd_address = Str(containerd, "Address");
  s.containerd_namespace = Str(Field(containerd, "Namespaces"), "Containers");
  s.raw = j;
  return s;
}

ImageSummary ParseImageSummary(const json& j) {
  ImageSummary s;
  s.id = Str(j, "Id");
  s.repo_tags = Strings(j, "RepoTags");
  s.repo_digests = Strings(j, "RepoDigests");
  s.size = Int(j, "Size");
  s.created = Int(j, "Created");
  s.labels = StringMap(j, "Labels");
  return s;
}

ImageInspect ParseImageInspect(const json& j) {
  ImageInspect i;
  i.id = Str(j, "Id");
  i.repo_tags = Strings(j, "RepoTags");
  i.repo_digests = Strings(j, "RepoDigests");
  i.size = Int(j, "Size");
  // The containerd store's Size is the packed content of one platform; its manifests
  // (asked for with manifests=1) hold what each platform present takes on disk, packed
  // and unpacked, whose sum is the image list's Size (and docker system df's).
  if (const json& manifests = Field(j, "Manifests"); manifests.is_array() && !manifests.empty()) {
    i.size = 0;
    for (const json& m : manifests) i.size += Int(Field(m, "Size"), "Total");
  }
  i.created = Str(j, "Created");
  i.os = Str(j, "Os");
  i.architecture = Str(j, "Architecture");
  const json& config = Field(j, "Config");
  i.config.user = Str(config, "User");
  i.config.env = Strings(config, "Env");
  i.config.entrypoint = Strings(config, "Entrypoint");
  i.config.cmd = Strings(config, "Cmd");
  i.config.working_dir = Str(config, "WorkingDir");
  i.config.labels = StringMap(config, "Labels");
  i.config.volumes = Keys(config, "Volumes");
  i.config.stop_signal = Str(config, "StopSignal");
  i.raw = j;
  return i;
}

ContainerSummary ParseContainerSummary(const json& j) {
  ContainerSummary s;
  s.id = Str(j, "Id");
  s.names = Strings(j, "Names");
  s.image = Str(j, "Image");
  s.image_id = Str(j, "ImageID");
  s.created = Int(j, "Created");
  s.state = Str(j, "State");
  s.status = Str(j, "Status");
  s.labels = StringMap(j, "Labels");
  return s;
}

ContainerInspect ParseContainerInspect(const json& j) {
  ContainerInspect c;
  c.id = Str(j, "Id");
  c.name = Str(j, "Name");
  c.created = Str(j, "Created");
  c.image = Str(j, "Image");
  c.log_path = Str(j, "LogPath");

  const json& state = Field(j, "State");
  c.state.status = Str(state, "Status");
  c.state.running = Bool(state, "Running");
  c.state.paused = Bool(state, "Paused");
  c.state.restarting = Bool(state, "Restarting");
  c.state.oom_killed = Bool(state, "OOMKilled");
  c.state.dead = Bool(state, "Dead");
  c.state.pid = static_cast<int>(Int(state, "Pid"));
  c.state.exit_code = static_cast<int>(Int(state, "ExitCode"));
  c.state.error = Str(state, "Error");
  c.state.started_at = Str(state, "StartedAt");
  c.state.finished_at = Str(state, "FinishedAt");

  const json& config = Field(j, "Config");
  c.config_image = Str(config, "Image");
  c.hostname = Str(config, "Hostname");
  c.user = Str(config, "User");
  c.stop_signal = Str(config, "StopSignal");
  c.tty = Bool(config, "Tty");
  c.labels = StringMap(config, "Labels");
  c.env = Strings(config, "Env");

  const json& host = Field(j, "HostConfig");
  c.resources.cpu_period = Int(host, "CpuPeriod");
  c.resources.cpu_quota = Int(host, "CpuQuota");
  c.resources.cpu_shares = Int(host, "CpuShares");
  c.resources.cpuset_cpus = Str(host, "CpusetCpus");
  c.resources.cpuset_mems = Str(host, "CpusetMems");
  c.resources.memory = Int(host, "Memory");
  c.resources.memory_swap = Int(host, "MemorySwap");
  c.resources.oom_score_adj = Int(host, "OomScoreAdj");
  c.runtime = Str(host, "Runtime");
  c.pid_mode = Str(host, "PidMode");
  c.ipc_mode = Str(host, "IpcMode");
  c.network_mode = Str(host, "NetworkMode");
  c.log_driver = Str(Field(host, "LogConfig"), "Type");
  c.cgroup_parent = Str(host, "CgroupParent");
  const json& network = Field(j, "NetworkSettings");
  c.ip_address = NetworkAddress(network, "IPAddress");
  c.ipv6_address = NetworkAddress(network, "GlobalIPv6Address");
  c.sandbox_key = Str(network, "SandboxKey");

  const json& mounts = Field(j, "Mounts");
  if (mounts.is_array()) {
    for (const json& m : mounts) {
      MountPoint mount;
      mount.type = Str(m, "Type");
      mount.source = Str(m, "Source");
      mount.destination = Str(m, "Destination");
      mount.mode = Str(m, "Mode");
      mount.propagation = Str(m, "Propagation");
      mount.rw = Bool(m, "RW", true);
      c.mounts.push_back(std::move(mount));
    }
  }
  c.upper_dir = Str(Field(Field(j, "GraphDriver"), "Data"), "UpperDir");
  c.storage_driver = Str(Field(Field(Field(j, "Storage"), "RootFS"), "Snapshot"), "Name");
  if (c.storage_driver.empty()) c.storage_driver = Str(Field(j, "GraphDriver"), "Name");
  c.raw = j;
  return c;
}

}  // namespace dockerclient
