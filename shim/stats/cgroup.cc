#include "shim/stats/cgroup.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status.h"
#include "common/strings.h"
#include "shim/stats/kernel_file.h"

namespace shim::stats {
namespace {

using common::Av;

// Limits above this mean "none". v1 shows an unset limit as PAGE_COUNTER_MAX pages
// (9223372036854771712 with 4 KiB pages), never exactly INT64_MAX; containerd's CRI
// (isMemoryUnlimited) and cAdvisor's metrics use this same cut-off.
constexpr uint64_t kUnlimited = uint64_t{1} << 62;

// The v1 controllers whose files Read uses: cpuacct.usage, memory.*, pids.current.
constexpr std::array<absl::string_view, 3> kV1Controllers = {"cpuacct", "memory", "pids"};

// The memory controller's file names and memory.stat keys, per version
// (cgroup-v1/memory.txt, cgroup-v2.rst). v1's total_* keys are the hierarchical figures
// (the cgroup and its descendants: what a pod cgroup needs, and what containerd's CRI
// reports); v2's figures are hierarchical already. RSS is v1 total_rss, v2 anon, as in
// cAdvisor and containerd.
struct MemoryFiles {
  const char* usage;
  const char* limit;
  const char* inactive_file;
  const char* rss;
  const char* page_faults;
  const char* major_page_faults;
};
constexpr MemoryFiles kV1Memory{.usage = "memory.usage_in_bytes",
                                .limit = "memory.limit_in_bytes",
                                .inactive_file = "total_inactive_file",
                                .rss = "total_rss",
                                .page_faults = "total_pgfault",
                                .major_page_faults = "total_pgmajfault"};
constexpr MemoryFiles kV2Memory{.usage = "memory.current",
                                .limit = "memory.max",
                                .inactive_file = "inactive_file",
                                .rss = "anon",
                                .page_faults = "pgfault",
                                .major_page_faults = "pgmajfault"};

uint64_t FlooredDifference(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

std::optional<uint64_t> ParseCounter(absl::string_view text) {
  uint64_t value;
  if (absl::SimpleAtoi(text, &value)) return value;  // SimpleAtoi allows the trailing newline
  return std::nullopt;
}

std::optional<uint64_t> ReadCounter(KernelFileSource& files, const std::string& path) {
  absl::StatusOr<std::string> text = files.Read(path);
  return text.ok() ? ParseCounter(*text) : std::nullopt;
}

// Unset when the file says "max" (v2) or a figure past kUnlimited (v1), or is unreadable.
std::optional<uint64_t> ReadLimit(KernelFileSource& files, const std::string& path) {
  std::optional<uint64_t> limit = ReadCounter(files, path);
  if (limit && *limit > kUnlimited) return std::nullopt;
  return limit;
}

// The value of `key` in a flat-keyed file ("key value" lines: memory.stat, cpu.stat;
// cgroup-v2.rst says to look entries up by key, as new ones appear in the middle).
std::optional<uint64_t> FlatKeyedValue(absl::string_view text, absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::ConsumePrefix(&line, key) && absl::ConsumePrefix(&line, " ")) return ParseCounter(line);
  }
  return std::nullopt;
}

// v2's cpu.stat counts microseconds; usage_usec is there whether or not the cpu
// controller is enabled (cgroup-v2.rst).
std::optional<uint64_t> ReadCpuUsageNsV2(KernelFileSource& files, const std::string& dir) {
  std::optional<uint64_t> usec = FlatKeyedValue(files.Read(dir + "/cpu.stat").value_or(""), "usage_usec");
  if (!usec) return std::nullopt;
  return *usec * 1000;
}

// v1's memsw files count memory plus swap (memory.txt, 2.4); swap alone is the
// difference. Its limit is known only when both limits are set, as with Docker's
// --memory and --memory-swap.
void ReadSwapV1(KernelFileSource& files, const std::string& dir, MemoryFigures& memory) {
  if (std::optional<uint64_t> memsw = ReadCounter(files, dir + "/memory.memsw.usage_in_bytes"))
    memory.swap_usage_bytes = FlooredDifference(*memsw, memory.usage_bytes);
  std::optional<uint64_t> memsw_limit = ReadLimit(files, dir + "/memory.memsw.limit_in_bytes");
  if (memsw_limit && memory.limit_bytes) memory.swap_limit_bytes = FlooredDifference(*memsw_limit, *memory.limit_bytes);
}

// v2's swap files count swap alone.
void ReadSwapV2(KernelFileSource& files, const std::string& dir, MemoryFigures& memory) {
  memory.swap_usage_bytes = ReadCounter(files, dir + "/memory.swap.current");
  memory.swap_limit_bytes = ReadLimit(files, dir + "/memory.swap.max");
}

// Unset without the usage file; memory.stat figures missing from the file count as 0.
std::optional<MemoryFigures> ReadMemory(KernelFileSource& source, const std::string& dir, CgroupVersion version) {
  const MemoryFiles& files = version == CgroupVersion::kV1 ? kV1Memory : kV2Memory;
  std::optional<uint64_t> usage = ReadCounter(source, absl::StrCat(dir, "/", files.usage));
  if (!usage) return std::nullopt;
  std::string stat = source.Read(dir + "/memory.stat").value_or("");
  MemoryFigures memory;
  memory.usage_bytes = *usage;
  // The working set as cAdvisor computes it for the kubelet (eviction, kubectl top):
  // usage less the inactive file pages, the first the kernel reclaims.
  memory.working_set_bytes = FlooredDifference(*usage, FlatKeyedValue(stat, files.inactive_file).value_or(0));
  memory.rss_bytes = FlatKeyedValue(stat, files.rss).value_or(0);
  memory.page_faults = FlatKeyedValue(stat, files.page_faults).value_or(0);
  memory.major_page_faults = FlatKeyedValue(stat, files.major_page_faults).value_or(0);
  memory.limit_bytes = ReadLimit(source, absl::StrCat(dir, "/", files.limit));
  if (version == CgroupVersion::kV1) {
    ReadSwapV1(source, dir, memory);
  } else {
    ReadSwapV2(source, dir, memory);
  }
  return memory;
}

// "avg10=0.12 avg60=0.05 avg300=0.01 total=123456" (after "some " or "full "), every key
// present; unset otherwise.
std::optional<PressureLine> ParsePressureFields(absl::string_view fields) {
  PressureLine line;
  int seen = 0;
  for (absl::string_view field : absl::StrSplit(fields, ' ', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(field, absl::MaxSplits('=', 1));
    double* avg = kv.first == "avg10"    ? &line.avg10
                  : kv.first == "avg60"  ? &line.avg60
                  : kv.first == "avg300" ? &line.avg300
                                         : nullptr;
    if (avg) {
      if (!absl::SimpleAtod(kv.second, avg) || !std::isfinite(*avg) || *avg < 0) return std::nullopt;
      ++seen;
    } else if (kv.first == "total") {
      if (!absl::SimpleAtoi(kv.second, &line.total_us)) return std::nullopt;
      ++seen;
    }
  }
  if (seen != 4) return std::nullopt;
  return line;
}

std::optional<Pressure> ReadPressure(KernelFileSource& files, const std::string& path) {
  absl::StatusOr<std::string> text = files.Read(path);
  return text.ok() ? ParsePressure(*text) : std::nullopt;
}

// Mountinfo writes space, tab, newline and backslash in paths as \ooo (proc(5)).
std::string UnescapeMountinfo(absl::string_view field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    auto octal = [&](size_t j) { return j < field.size() && field[j] >= '0' && field[j] <= '7'; };
    if (field[i] == '\\' && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
      out += static_cast<char>(((field[i + 1] - '0') << 6) | ((field[i + 2] - '0') << 3) | (field[i + 3] - '0'));
      i += 3;
    } else {
      out += field[i];
    }
  }
  return out;
}

struct MountLine {
  std::string root, point;
  absl::string_view fstype, super_options;
};

// "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue"
// (proc(5)): the 4th and 5th fields are the mount's root and mount point; after the
// optional fields and "-" come the file system type, the source and the super options
// (where a v1 hierarchy lists its controllers, "rw,cpu,cpuacct").
std::optional<MountLine> ParseMountLine(absl::string_view line) {
  std::vector<absl::string_view> fields = absl::StrSplit(line, ' ');
  if (fields.size() < 10) return std::nullopt;
  auto dash = std::find(fields.begin() + 6, fields.end(), "-");
  if (fields.end() - dash < 4) return std::nullopt;
  return MountLine{UnescapeMountinfo(fields[3]), UnescapeMountinfo(fields[4]), dash[1], dash[3]};
}

// The directory of `hierarchy_path` below mount point `point` ("/": the point itself).
std::string JoinDir(absl::string_view point, absl::string_view hierarchy_path) {
  while (absl::ConsumePrefix(&hierarchy_path, "/")) {
  }
  return hierarchy_path.empty() ? std::string(point) : absl::StrCat(point, "/", hierarchy_path);
}

std::string* DirOfController(CgroupDirs& dirs, absl::string_view controller) {
  if (controller == "cpuacct") return &dirs.cpu;
  if (controller == "memory") return &dirs.memory;
  if (controller == "pids") return &dirs.pids;
  return nullptr;
}

}  // namespace

absl::StatusOr<CgroupLayout> CgroupLayout::Discover(const std::string& proc_root, const std::string& path_prefix) {
  const std::string mountinfo_path = proc_root + "/self/mountinfo";
  ASSIGN_OR_RETURN(std::string mountinfo, ReadKernelFile(mountinfo_path));
  CgroupLayout layout;
  layout.proc_root_ = proc_root;
  std::optional<Mount> v2;
  // A hierarchy may be mounted more than once (bind mounts of a subtree): keep the mount
  // that shows most of it, the one with the shortest root.
  auto keep = [](std::optional<Mount>& kept, const Mount& mount) {
    if (!kept || mount.root.size() < kept->root.size()) kept = mount;
  };
  std::map<std::string, std::optional<Mount>> v1;
  for (absl::string_view line : absl::StrSplit(mountinfo, '\n')) {
    std::optional<MountLine> parsed = ParseMountLine(line);
    if (!parsed) continue;
    Mount mount{path_prefix + parsed->point, parsed->root};
    if (parsed->fstype == "cgroup2") keep(v2, mount);
    if (parsed->fstype != "cgroup") continue;
    for (absl::string_view option : absl::StrSplit(parsed->super_options, ',')) {
      if (std::find(kV1Controllers.begin(), kV1Controllers.end(), option) != kV1Controllers.end())
        keep(v1[std::string(option)], mount);
    }
  }
  // Hybrid hosts mount cgroup2 (at /sys/fs/cgroup/unified) beside the v1 hierarchies,
  // which keep the controllers: v1 wins, as in runc and cAdvisor.
  if (!v1.empty()) {
    layout.version_ = CgroupVersion::kV1;
    for (auto& [controller, mount] : v1) layout.v1_mounts_[controller] = std::move(*mount);
  } else if (v2) {
    layout.version_ = CgroupVersion::kV2;
    layout.v2_mount_ = std::move(*v2);
  } else {
    return absl::FailedPreconditionError(absl::StrCat("no cgroup or cgroup2 mount in ", mountinfo_path));
  }
  return layout;
}

absl::StatusOr<CgroupDirs> CgroupLayout::DirsOfProcess(int pid) const {
  ASSIGN_OR_RETURN(std::string text, ReadKernelFile(absl::StrCat(proc_root_, "/", pid, "/cgroup")));
  // The path as the process reports it is from the hierarchy's root; a mount whose root
  // is not "/" (inside a container) shows only that subtree, so strip its root, as runc
  // does for nested containers. A cgroup outside the mount's subtree is not visible.
  auto dir_in = [](const Mount& mount, absl::string_view path) -> std::string {
    if (mount.root != "/" && !(absl::ConsumePrefix(&path, mount.root) && (path.empty() || path[0] == '/'))) return "";
    return JoinDir(mount.point, path);
  };
  CgroupDirs dirs;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    // "hierarchy-ID:controller-list:cgroup-path" (cgroups(7)); v2's line is "0::path".
    // Named v1 hierarchies ("name=systemd") match no controller.
    std::vector<absl::string_view> fields = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (fields.size() != 3) continue;
    if (version_ == CgroupVersion::kV2) {
      if (fields[0] == "0" && fields[1].empty()) dirs.cpu = dirs.memory = dirs.pids = dir_in(v2_mount_, fields[2]);
      continue;
    }
    for (absl::string_view controller : absl::StrSplit(fields[1], ',')) {
      auto mount = v1_mounts_.find(std::string(controller));
      if (mount != v1_mounts_.end()) *DirOfController(dirs, controller) = dir_in(mount->second, fields[2]);
    }
  }
  return dirs;
}

// Docker (runc) puts an absolute cgroup path under each hierarchy's mount point as it
// sees it, whatever that mount's root: no stripping here.
CgroupDirs CgroupLayout::DirsOfPath(std::string_view hierarchy_path) const {
  CgroupDirs dirs;
  if (version_ == CgroupVersion::kV2) {
    dirs.cpu = dirs.memory = dirs.pids = JoinDir(v2_mount_.point, Av(hierarchy_path));
    return dirs;
  }
  for (const auto& [controller, mount] : v1_mounts_)
    *DirOfController(dirs, controller) = JoinDir(mount.point, Av(hierarchy_path));
  return dirs;
}

CgroupDirs CgroupLayout::DirsOfParent(std::string_view cgroup_parent, bool systemd_driver) const {
  return DirsOfPath(systemd_driver ? ExpandSystemdSlice(cgroup_parent) : std::string(cgroup_parent));
}

// moby's daemon/oci_linux.go: cgroupfs "<parent>/<id>"; systemd "<slice>:docker:<id>",
// which runc's systemd driver makes "<expanded slice>/docker-<id>.scope".
CgroupDirs CgroupLayout::DirsOfContainer(std::string_view cgroup_parent, std::string_view container_id,
                                         bool systemd_driver) const {
  if (systemd_driver) {
    return DirsOfPath(absl::StrCat(ExpandSystemdSlice(cgroup_parent.empty() ? "system.slice" : cgroup_parent),
                                   "/docker-", Av(container_id), ".scope"));
  }
  return DirsOfPath(absl::StrCat(cgroup_parent.empty() ? "/docker" : Av(cgroup_parent), "/", Av(container_id)));
}

CgroupFigures CgroupLayout::Read(const CgroupDirs& dirs) const {
  FreshKernelFiles fresh;
  return Read(dirs, fresh);
}

CgroupFigures CgroupLayout::Read(const CgroupDirs& dirs, KernelFileSource& files) const {
  CgroupFigures figures;
  if (!dirs.cpu.empty())
    figures.cpu_usage_ns = version_ == CgroupVersion::kV1 ? ReadCounter(files, dirs.cpu + "/cpuacct.usage")
                                                          : ReadCpuUsageNsV2(files, dirs.cpu);
  if (!dirs.memory.empty()) figures.memory = ReadMemory(files, dirs.memory, version_);
  if (!dirs.pids.empty()) figures.process_count = ReadCounter(files, dirs.pids + "/pids.current");
  // The pressure files are the cgroup core's (there whatever controllers are enabled).
  if (version_ == CgroupVersion::kV2 && !dirs.cpu.empty()) {
    figures.cpu_pressure = ReadPressure(files, dirs.cpu + "/cpu.pressure");
    figures.memory_pressure = ReadPressure(files, dirs.cpu + "/memory.pressure");
    figures.io_pressure = ReadPressure(files, dirs.cpu + "/io.pressure");
  }
  return figures;
}

std::optional<Pressure> ParsePressure(std::string_view text) {
  Pressure pressure;
  for (absl::string_view line : absl::StrSplit(Av(text), '\n')) {
    if (absl::ConsumePrefix(&line, "some ")) {
      pressure.some = ParsePressureFields(line);
    } else if (absl::ConsumePrefix(&line, "full ")) {
      pressure.full = ParsePressureFields(line);
    }
  }
  if (!pressure.some && !pressure.full) return std::nullopt;
  return pressure;
}

absl::StatusOr<std::vector<CgroupMount>> ListCgroupMounts(const std::string& proc_root, const std::string& path_prefix) {
  // The kernel's v1 controllers: the rest of a mount's super options are mount options.
  static constexpr std::array<absl::string_view, 14> kControllers = {
      "cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "net_cls",
      "net_prio", "blkio", "perf_event", "hugetlb", "pids", "rdma", "misc"};
  ASSIGN_OR_RETURN(std::string mountinfo, ReadKernelFile(proc_root + "/self/mountinfo"));
  std::vector<CgroupMount> mounts;
  for (absl::string_view line : absl::StrSplit(mountinfo, '\n')) {
    std::optional<MountLine> parsed = ParseMountLine(line);
    if (!parsed || (parsed->fstype != "cgroup" && parsed->fstype != "cgroup2")) continue;
    CgroupMount mount{path_prefix + parsed->point, parsed->root, parsed->fstype == "cgroup2", {}};
    for (absl::string_view option : absl::StrSplit(parsed->super_options, ',')) {
      if (!mount.v2 && (absl::StartsWith(option, "name=") ||
                        std::find(kControllers.begin(), kControllers.end(), option) != kControllers.end()))
        mount.controllers.emplace_back(option);
    }
    mounts.push_back(std::move(mount));
  }
  return mounts;
}

// runc's ExpandSlice: each "-" opens a level; "-.slice" is the root; "a--b.slice",
// "-a.slice" and names with "/" are not slices.
std::string ExpandSystemdSlice(std::string_view slice_name) {
  absl::string_view slice = Av(slice_name);
  absl::string_view name = slice;
  if (!absl::ConsumeSuffix(&name, ".slice") || name.empty() || absl::StrContains(slice, '/')) return std::string(slice);
  if (name == "-") return "/";
  std::string path, prefix;
  for (absl::string_view part : absl::StrSplit(name, '-')) {
    if (part.empty()) return std::string(slice);
    absl::StrAppend(&prefix, part);
    absl::StrAppend(&path, "/", prefix, ".slice");
    absl::StrAppend(&prefix, "-");
  }
  return path;
}

}  // namespace shim::stats
