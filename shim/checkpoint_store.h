#pragma once
// Per-sandbox state that Docker cannot hold, kept under <root>/sandbox/<id> so a
// restarted shim can still report pod IPs and tear down networks. Files are
// written atomically (temp + fsync + rename + fsync dir) and carry a checksum; a
// corrupt or unknown file is logged and moved aside (<id>.corrupt), never fatal.
//
// cri-dockerd's checkpoints (<cri-dockerd root>/sandbox/<id>) are read, never written
// by the store (the switch back to cri-dockerd writes them, shim/migrate):
// a sandbox with no checkpoint of ours is imported from there (its port mappings and
// host network flag), so a node can switch from cri-dockerd and back. When both roots
// are one directory (how nodes were set up before the two were told apart), a
// cri-dockerd file there is imported the same way and left as it is until this store
// writes that sandbox.
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
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
  // Set when this shim did not create the pod but took it over from the runtime that
  // did (sandbox_adoption.cc): "cri-dockerd" (imported from its checkpoint), or
  // "infra-container-labels" (no checkpoint anywhere: rebuilt from the labels). Empty
  // for the pods this shim created.
  std::string adopted_from;

  bool operator==(const SandboxCheckpoint&) const = default;
};

inline constexpr char kAdoptedFromCriDockerd[] = "cri-dockerd";
inline constexpr char kAdoptedFromLabels[] = "infra-container-labels";

class CheckpointStore {
 public:
  // `cri_dockerd_root_directory`: cri-dockerd's state directory; empty when there is none.
  explicit CheckpointStore(std::string root_directory, std::string cri_dockerd_root_directory = "");

  // Creates <root>/sandbox if needed. Logs once when cri-dockerd's directory is ours.
  absl::Status Init();
  absl::Status Write(const SandboxCheckpoint& checkpoint);
  // Ours, else cri-dockerd's (imported). NOT_FOUND when neither is there or usable.
  // Served from memory after the first read.
  absl::StatusOr<SandboxCheckpoint> Read(const std::string& sandbox_id);
  // Records what adoption learnt of a pod: written as our checkpoint (true), or, where
  // the file in our directory is cri-dockerd's own, kept in memory only (false) so that
  // cri-dockerd can read its file again. Kept in memory also when the write fails.
  absl::StatusOr<bool> Adopt(const SandboxCheckpoint& checkpoint);
  // Ours and cri-dockerd's file of the sandbox. Idempotent.
  absl::Status Remove(const std::string& sandbox_id);
  // IDs of every readable checkpoint on disk, ours and cri-dockerd's.
  std::vector<std::string> List();
  // IDs of every checkpoint file on disk, ours and cri-dockerd's, sorted and unread (a
  // relist reads only those of pods Docker does not list). One list is shared until a
  // directory changes: every ListPodSandbox asks.
  using IdList = std::shared_ptr<const std::vector<std::string>>;
  IdList Ids();
  // Deletes the files set aside as corrupt more than `age` ago; returns their paths.
  std::vector<std::string> RemoveCorruptOlderThan(absl::Duration age);
  // Deletes the temp files of writes a crash interrupted (only safe before serving);
  // returns their paths.
  std::vector<std::string> RemoveInterruptedWrites();

  std::string Directory() const { return dir_; }

 private:
  struct Cached {
    SandboxCheckpoint checkpoint;
    bool cri_dockerd_file_here = false;  // our directory's file is in cri-dockerd's format
  };

  std::string PathOf(const std::string& sandbox_id) const;
  std::string CriDockerdPathOf(const std::string& sandbox_id) const;
  std::mutex& LockOf(const std::string& sandbox_id);
  // First reads, under the sandbox's lock. Ours: a corrupt file is set aside.
  absl::StatusOr<SandboxCheckpoint> ReadOwn(const std::string& sandbox_id);
  // cri-dockerd's: imported, nullopt when there is none, or why it is unusable (logged
  // once; the file stays where it is).
  absl::StatusOr<std::optional<SandboxCheckpoint>> ReadCriDockerd(const std::string& sandbox_id);
  // NOT_FOUND for a cri-dockerd file found unusable before.
  absl::Status NotKnownUnusable(const std::string& path);
  // Logs why cri-dockerd's file at `path` cannot be imported and remembers it; it is
  // cri-dockerd's, so it stays where it is. Returns NOT_FOUND.
  absl::Status IgnoreUnusable(const std::string& sandbox_id, const std::string& path, const absl::Status& why);
  // The names in `dir` that may be checkpoints. Read again only when the directory's
  // mtime moved: every ListPodSandbox asks (for pods known only by their checkpoint).
  IdList Candidates(const std::string& dir);

  const std::string dir_;
  // cri-dockerd's <root>/sandbox; empty when it has none or it is dir_.
  std::string cri_dockerd_dir_;
  bool shared_with_cri_dockerd_ = false;  // cri-dockerd's directory is dir_
  // Writes, removals and first reads of one sandbox's file are serialized (its temp
  // file; its renames, and the cache, in one order); other sandboxes' go on at once, so
  // that pods started together share the file system's journal commits (fsync) instead
  // of queueing for them. Taken before mu_.
  std::array<std::mutex, 16> sandbox_locks_;
  std::mutex mu_;  // cache_, unusable_cri_dockerd_, and the scans of the directories
  std::map<std::string, Cached> cache_;
  // Paths of cri-dockerd's files that could not be imported: not read again (they are
  // not set aside as ours are).
  std::set<std::string> unusable_cri_dockerd_;
  // The last read of each directory, with its mtime (ns) then and when the read began.
  struct DirectoryRead {
    int64_t mtime_ns = 0;
    uint64_t inode = 0;
    absl::Time began;
    IdList names;  // sorted
  };
  std::map<std::string, DirectoryRead> directory_reads_;  // by directory; guarded by mu_
  struct MergedIds {
    std::pair<IdList, IdList> of;  // ours and cri-dockerd's reads
    IdList ids;
  };
  MergedIds merged_;  // guarded by mu_
};

// Where the checkpoints of a root directory live (ours and cri-dockerd's alike).
std::string SandboxDirectoryOf(const std::string& root);

// Serialization, exposed for tests: JSON {"version":"dockershim/v1","data":{...},"checksum":"crc32:<hex>"}.
std::string EncodeCheckpoint(const SandboxCheckpoint& checkpoint);
absl::StatusOr<SandboxCheckpoint> DecodeCheckpoint(const std::string& text);

// cri-dockerd's own checkpoint of the pod (its PodSandboxCheckpoint), byte for byte as
// cri-dockerd v0.4.3 writes it, with the checksum its reads verify: the name, the
// namespace, the port mappings and the host-network flag; nothing else of ours.
std::string EncodeCriDockerdCheckpoint(const SandboxCheckpoint& checkpoint);
// A cri-dockerd checkpoint's text, imported as the store reads it (the checksum is
// not verified).
absl::StatusOr<SandboxCheckpoint> DecodeCriDockerdCheckpoint(const std::string& text, const std::string& sandbox_id);

}  // namespace shim
