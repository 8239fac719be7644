#pragma once
// Writing a container's cgroup v2 interface files directly, for what Docker Engine has
// no field for: CRI's unified keys (LinuxContainerResources.unified: the kubelet's
// memory.min/memory.high of MemoryQoS, memory.oom.group...) and hugepage limits
// (hugetlb.<size>.max). runc writes the same files when containerd hands them over in
// the OCI spec; Docker cannot pass them on, so the shim writes them once runc has made
// the cgroup (after start) and after every Docker update (which, with the systemd
// driver, has systemd apply the unit's properties again and set memory.high, memory.min
// and memory.low back to its own defaults).
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace shim {

// Interface file name -> the value to write, e.g. {"memory.high", "67108864"}.
using CgroupFileValues = std::map<std::string, std::string>;

// INVALID_ARGUMENT naming `what` (e.g. `linux.resources.unified["x"]`) unless `name` is
// the name of a controller's interface file a container may set: "<controller>.<name>"
// of letters, digits, '_', '-' and '.', no empty part (so no "..", no '/'), and not a
// core "cgroup." file (those move processes and switch controllers, they limit nothing).
absl::Status CheckCgroupFileName(absl::string_view name, absl::string_view what);

// Whether `values` can be written into the cgroup v2 directory `dir` (a container's, or
// its pod's, whose children have the same files): INVALID_ARGUMENT naming the file when
// its controller is not enabled there (cgroup.controllers), it does not exist or is
// read-only; FAILED_PRECONDITION when `dir` is no cgroup (the container's processes are
// gone). The values themselves are the kernel's to judge.
absl::Status CheckCgroupFiles(const std::string& dir, const CgroupFileValues& values);

// CheckCgroupFiles, then writes `values` into `dir`, each file once, in name order; a
// hugetlb.<size>.max also sets hugetlb.<size>.rsvd.max where the kernel has it (as runc
// does). What the kernel refuses is reported by WriteError's rules. Files written
// before a failure keep their new values.
absl::Status WriteCgroupFiles(const std::string& dir, const CgroupFileValues& values);

// The present values of `names` in `dir` (without the trailing newline); names whose
// file cannot be read are left out.
CgroupFileValues ReadCgroupFiles(const std::string& dir, const std::vector<std::string>& names);

// The status of a failed write of `value` to `dir`/`name` (errno `err`): INVALID_ARGUMENT
// for what the request got wrong (no such file, a read-only file, a value the kernel
// rejects: EINVAL, ERANGE); FAILED_PRECONDITION for a value the cgroup's state rules out
// now (EBUSY: e.g. a hugetlb limit below what the cgroup uses); INTERNAL otherwise.
absl::Status WriteError(int err, const std::string& dir, absl::string_view name, absl::string_view value);

}  // namespace shim
