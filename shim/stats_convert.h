#pragma once
// Pure translations of what StatsSampler read into CRI stats, filled as containerd's CRI
// fills them: a figure the cgroup files did not give is left unset, not reported as 0.
#include <string>

#include "api/cri.h"
#include "shim/stats_sampler.h"

namespace shim {

// Writable-layer figures name `fs_mountpoint`, Docker's root directory (the file system
// that ImageFsInfo reports), where the kubelet looks up their file system's capacity.
v1::ContainerStats ToContainerStats(const ContainerFigures& figures, const std::string& fs_mountpoint);
v1::PodSandboxStats ToPodSandboxStats(const PodFigures& figures, const std::string& fs_mountpoint);

}  // namespace shim
