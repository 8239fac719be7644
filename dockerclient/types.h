#pragma once
// The parts of Docker Engine API objects the shim reads. Each keeps the raw JSON
// for verbose CRI answers. Parsed leniently: absent fields keep their defaults.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dockerclient {

using Labels = std::map<std::string, std::string>;

struct VersionInfo {
  std::string version;       // "20.10.24"
  std::string api_version;   // "1.41"
  std::string min_api_version;
  std::string os, arch, kernel_version;
};

struct SystemInfo {
  std::string id, name;
  std::string docker_root_dir;   // "/var/lib/docker"
  std::string driver;            // storage driver, "overlay2"
  std::string cgroup_driver;     // "systemd" or "cgroupfs"
  std::string cgroup_version;    // "1" or "2"
  std::string default_runtime;
  std::vector<std::string> runtimes;
  std::string server_version;
  std::string kernel_version, operating_system;
  // DriverStatus's "driver-type": "io.containerd.snapshotter.v1" when images are in
  // containerd (Docker's containerd image store); empty with a graph driver.
  std::string driver_type;
  // The containerd that dockerd uses (Containerd.Address, API 1.46+) and the namespace
  // of its containers ("moby").
  std::string containerd_address, containerd_namespace;
  nlohmann::json raw;
};

struct ImageSummary {
  std::string id;  // "sha256:..."
  std::vector<std::string> repo_tags, repo_digests;
  int64_t size = 0;
  int64_t created = 0;  // unix seconds
  Labels labels;
};

struct ImageConfig {
  std::string user;
  std::vector<std::string> env, entrypoint, cmd;
  std::string working_dir;
  Labels labels;
  std::vector<std::string> volumes;
  std::string stop_signal;
};

struct ImageInspect {
  std::string id;
  std::vector<std::string> repo_tags, repo_digests;
  int64_t size = 0;  // on disk, as the image list says: with the containerd store, content and snapshots
  std::string created;  // RFC 3339
  std::string os, architecture;
  ImageConfig config;
  nlohmann::json raw;
};

struct ContainerSummary {
  std::string id;
  std::vector<std::string> names;  // with leading "/"
  std::string image, image_id;
  int64_t created = 0;  // unix seconds
  std::string state;    // "created", "running", "exited", ...
  std::string status;
  Labels labels;
};

struct ContainerState {
  std::string status;  // "created", "running", "paused", "restarting", "removing", "exited", "dead"
  bool running = false, paused = false, restarting = false, oom_killed = false, dead = false;
  int pid = 0;
  int exit_code = 0;
  std::string error;
  std::string started_at, finished_at;  // RFC 3339; "0001-01-01T00:00:00Z" when unset
};

struct MountPoint {
  std::string type, source, destination, mode, propagation;
  bool rw = true;
};

// HostConfig's cgroup settings; 0 or empty when Docker applies none.
struct ContainerResources {
  int64_t cpu_period = 0, cpu_quota = 0, cpu_shares = 0;
  std::string cpuset_cpus, cpuset_mems;
  int64_t memory = 0;
  int64_t memory_swap = 0;  // memory + swap; -1 is unlimited
  int64_t oom_score_adj = 0;
};

struct ContainerInspect {
  std::string id;
  std::string name;  // with leading "/"
  std::string created;
  std::string image;  // image ID
  std::string log_path;    // the json-file driver's file; empty with other drivers
  std::string log_driver;  // HostConfig.LogConfig.Type: "json-file", "local", "journald", ...
  ContainerState state;
  // Config
  std::string config_image;  // the reference the container was created from
  std::string hostname;
  std::string user;         // "uid[:gid]" or a name, as given at create
  std::string stop_signal;  // "SIGTERM", "TERM" or "15"; empty for Docker's default
  bool tty = false;
  Labels labels;
  std::vector<std::string> env;
  // HostConfig / NetworkSettings
  ContainerResources resources;
  std::string runtime;   // OCI runtime name, "runc"
  std::string pid_mode;  // "", "host", "container:<id>"
  std::string ipc_mode;  // "private", "shareable", "host", "container:<id>"
  std::string network_mode;
  std::string cgroup_parent;  // HostConfig.CgroupParent as given at create; empty: Docker's default
  std::string ip_address;     // default network's address (plugin-less mode)
  std::string ipv6_address;
  std::string sandbox_key;    // network namespace path
  std::vector<MountPoint> mounts;
  // GraphDriver.Data.UpperDir: the writable layer's directory (overlay2); empty with
  // storage drivers that have none.
  std::string upper_dir;
  // What holds its root filesystem: the snapshotter (Storage.RootFS.Snapshot.Name, API
  // 1.52+) or the graph driver (GraphDriver.Name; the snapshotter before 1.52).
  std::string storage_driver;
  nlohmann::json raw;
};

// Parsers from Docker's JSON (lenient; never throw).
VersionInfo ParseVersion(const nlohmann::json& j);
SystemInfo ParseInfo(const nlohmann::json& j);
ImageSummary ParseImageSummary(const nlohmann::json& j);
ImageInspect ParseImageInspect(const nlohmann::json& j);
ContainerSummary ParseContainerSummary(const nlohmann::json& j);
ContainerInspect ParseContainerInspect(const nlohmann::json& j);

}  // namespace dockerclient
