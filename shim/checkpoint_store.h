#pragma once
// Per-sandbox state that Docker cannot hold, kept under <root>/sandbox/<id> so a
// restarted shim can still report pod IPs and tear down networks. Files are
// written atomically (temp + fsync + rename + fsync dir) and carry a checksum; a
// corrupt or unknown file is logged and moved aside (<id>.corrupt), never fatal;
// a checkpoint written by cri-dockerd is imported (its port mappings and host
// network flag) and left in place.
#include <array>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "shim/network/network_plugin.h"

namespace shim {

struct SandboxCheckpoint {
  std::string sandbox_id;
  std::string name, namespace_, uid;  // pod metadata, for humans reading the file
  bool host_network = false;
  std::vector<network::PortMapping> port_mappings;
  std::optional<network::Bandwidth> bandwidth;
  std::string network_plugin;  // "cni" / "docker" at creation
  std::string network_name;    // CNI network (conflist name) the pod was attached to; empty if not attached
  std::string netns_path;
  std::string ip;
  std::vector<std::string> additional_ips;
  bool network_torn_down = false;
  // Set from the first write of RunPodSandbox until its last: a shim that finds it at
  // start knows the sandbox was left half-created by a crash (sandbox_recovery.cc).
  bool pending = false;
  // The pod-level resources of the last UpdatePodSandboxResources (in-place pod resize):
  // {"overhead": {...}, "resources": {...}}, each CRI LinuxContainerResources in its
  // JSON form; null until then (and in checkpoints written before the field existed).
  nlohmann::json pod_resources;

  bool operator==(const SandboxCheckpoint&) const = default;
};

class CheckpointStore {
 public:
  explicit CheckpointStore(std::string root_directory);

  // Creates <root>/sandbox if needed.
  absl::Status Init();
  absl::Status Write(const SandboxCheckpoint& checkpoint);
  // NOT_FOUND when absent or set aside as corrupt. Served from memory after the first read.
  absl::StatusOr<SandboxCheckpoint> Read(const std::string& sandbox_id);
  // Idempotent.
  absl::Status Remove(const std::string& sandbox_id);
  // IDs of every readable checkpoint on disk.
  std::vector<std::string> List();
  // Deletes the files set aside as corrupt more than `age` ago; returns their paths.
  std::vector<std::string> RemoveCorruptOlderThan(absl::Duration age);
  // Deletes the temp files of writes a crash interrupted (only safe before serving);
  // returns their paths.
  std::vector<std::string> RemoveInterruptedWrites();

  std::string Directory() const { return dir_; }

 private:
  std::string PathOf(const std::string& sandbox_id) const;
  std::mutex& LockOf(const std::string& sandbox_id);

  std::string dir_;
  // Writes, removals and first reads of one sandbox's file are serialized (its temp
  // file; its renames, and the cache, in one order); other sandboxes' go on at once, so
  // that pods started together share the file system's journal commits (fsync) instead
  // of queueing for them. Taken before mu_.
  std::array<std::mutex, 16> sandbox_locks_;
  std::mutex mu_;  // cache_, and the scans of the directory
  std::map<std::string, SandboxCheckpoint> cache_;
};

// Serialization, exposed for tests: JSON {"version":"dockershim/v1","data":{...},"checksum":"crc32:<hex>"}.
std::string EncodeCheckpoint(const SandboxCheckpoint& checkpoint);
absl::StatusOr<SandboxCheckpoint> DecodeCheckpoint(const std::string& text);

}  // namespace shim
