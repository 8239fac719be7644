#pragma once
// Container and pod figures straight from cgroup files (v1 and v2, cgroupfs and
// systemd drivers), never from Docker's /stats endpoint, which costs dockerd a full
// collection per container. Pure file reads: no process, no Docker call.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "shim/stats/kernel_file.h"

namespace shim::stats {

enum class CgroupVersion { kV1, kV2 };

// Where one cgroup's files are, per controller: v2 has one directory for all; v1
// has one per hierarchy (cpuacct, memory, pids; cpu,cpuacct joined on most hosts).
struct CgroupDirs {
  std::string cpu;     // cpuacct.usage (v1) or cpu.stat (v2)
  std::string memory;  // memory.*
  std::string pids;    // pids.current
  bool operator==(const CgroupDirs&) const = default;
};

struct MemoryFigures {
  uint64_t usage_bytes = 0;
  uint64_t working_set_bytes = 0;  // usage - inactive_file, floored at 0 (as cAdvisor)
  uint64_t rss_bytes = 0;          // v1 total_rss, v2 anon
  uint64_t page_faults = 0, major_page_faults = 0;
  std::optional<uint64_t> limit_bytes;  // unset when unlimited
  // Swap alone (v1's memsw files count memory + swap); unset without swap accounting.
  std::optional<uint64_t> swap_usage_bytes;
  std::optional<uint64_t> swap_limit_bytes;  // also unset when unlimited
  bool operator==(const MemoryFigures&) const = default;
};

// One line of a v2 pressure file (PSI, accounting/psi.rst): the share of wall time in
// which some (or all) of the cgroup's tasks stalled on the resource.
struct PressureLine {
  double avg10 = 0, avg60 = 0, avg300 = 0;  // percent, over 10 s, 60 s, 300 s
  uint64_t total_us = 0;                    // cumulative stall time
  bool operator==(const PressureLine&) const = default;
};

// A pressure file's "some" and "full" lines; a line the file lacks stays unset (cpu
// has "full" only since Linux 5.13).
struct Pressure {
  std::optional<PressureLine> some, full;
  bool operator==(const Pressure&) const = default;
};

// A pressure file's text; unset when it holds neither a well-formed "some" nor "full" line.
std::optional<Pressure> ParsePressure(std::string_view text);

struct CgroupFigures {
  std::optional<uint64_t> cpu_usage_ns;  // cumulative
  std::optional<MemoryFigures> memory;
  std::optional<uint64_t> process_count;
  // cgroup v2 only: unset on v1, and where the kernel has no PSI (CONFIG_PSI off, psi=0,
  // cgroup.pressure set to 0), which hides or fails the files.
  std::optional<Pressure> cpu_pressure, memory_pressure, io_pressure;
  bool operator==(const CgroupFigures&) const = default;
};

// The host's cgroup layout: found once from /proc/self/mountinfo (the mount points of
// the cgroup2 file system, or of each v1 hierarchy). `proc_root` and the mount points
// it names are taken as given, so tests run on a fake tree (mount points under a
// temporary directory).
class CgroupLayout {
 public:
  // Parses `<proc_root>/self/mountinfo`. FAILED_PRECONDITION when no cgroup mount is
  // there. `path_prefix` is put before every mount point (a fake tree's root in tests).
  static absl::StatusOr<CgroupLayout> Discover(const std::string& proc_root = "/proc",
                                               const std::string& path_prefix = "");

  CgroupVersion version() const { return version_; }

  // The cgroups of process `pid`, from `<proc_root>/<pid>/cgroup`. NOT_FOUND when the
  // process is gone.
  absl::StatusOr<CgroupDirs> DirsOfProcess(int pid) const;
  // The cgroup a container runtime made of `cgroup_parent` (HostConfig.CgroupParent of
  // a pod's infra container): with the cgroupfs driver a path ("/kubepods/burstable/
  // pod<uid>"); with the systemd driver a slice name ("kubepods-burstable-pod<uid>.slice"),
  // which lives at /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice.
  CgroupDirs DirsOfParent(std::string_view cgroup_parent, bool systemd_driver) const;
  // The cgroup Docker made for container `container_id` under `cgroup_parent` (empty:
  // Docker's default, "/docker" or "system.slice"): "<parent>/<id>" with cgroupfs,
  // "<expanded slice>/docker-<id>.scope" with systemd. Saves reading /proc/<pid>/cgroup
  // when the parent is known; assumes dockerd has no --cgroup-parent of its own.
  CgroupDirs DirsOfContainer(std::string_view cgroup_parent, std::string_view container_id, bool systemd_driver) const;

  // Reads what the files hold. A missing, unreadable or malformed file, or an empty
  // dir, leaves its figure unset; memory needs only the usage file (memory.stat keys
  // that are missing count as 0). On v2 the pressure files are read from the one
  // directory (cpu's) that all controllers share.
  CgroupFigures Read(const CgroupDirs& dirs) const;
  // The same, each file read through `files` (KeptKernelFiles: kept open between readings).
  CgroupFigures Read(const CgroupDirs& dirs, KernelFileSource& files) const;

 private:
  // One mount of a hierarchy: where it is, and which cgroup of the hierarchy it shows
  // (mountinfo's "root": not "/" inside a container that sees only its own subtree).
  struct Mount {
    std::string point;
    std::string root;
  };

  CgroupDirs DirsOfPath(std::string_view hierarchy_path) const;

  CgroupVersion version_ = CgroupVersion::kV2;
  std::string proc_root_;
  Mount v2_mount_;                          // v2
  std::map<std::string, Mount> v1_mounts_;  // v1: controller ("cpuacct", "memory", "pids") -> mount
};

// One mounted cgroup hierarchy, from mountinfo: a v1 hierarchy's controllers ("cpu",
// "cpuacct"; "name=systemd" for a named one), none for cgroup2. `root` is the cgroup of
// the hierarchy the mount shows ("/" unless the mount is of a subtree).
struct CgroupMount {
  std::string point;
  std::string root;
  bool v2 = false;
  std::vector<std::string> controllers;
};
// Every cgroup and cgroup2 mount in `<proc_root>/self/mountinfo`, `path_prefix` before
// each mount point (as CgroupLayout::Discover).
absl::StatusOr<std::vector<CgroupMount>> ListCgroupMounts(const std::string& proc_root = "/proc",
                                                          const std::string& path_prefix = "");

// The expansion of a systemd slice name into its path: "a-b-c.slice" ->
// "/a.slice/a-b.slice/a-b-c.slice"; "-.slice" is the root "/". Other names are
// returned as they are.
std::string ExpandSystemdSlice(std::string_view slice);

}  // namespace shim::stats
