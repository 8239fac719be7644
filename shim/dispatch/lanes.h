#pragma once
// Which CRI call runs on which worker pool (lane), and how large each pool and its
// queue are. The reasoning is in lanes.cc, next to the table.
#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

#include "absl/time/time.h"

namespace shim::dispatch {

// Calls are split by what they wait on, so that a flood of one kind only makes that
// kind wait.
enum class Lane {
  kHealth,     // Version and Status: bounded Docker probes, never waits behind the rest
  kShort,      // memory, cgroup files, caches, one Docker read
  kLifecycle,  // dockerd/containerd/runc and the CNI chain making or removing things
  kProcess,    // a container's processes: a stop's grace period, an exec, a CRIU dump
  kPull,       // registries
};
inline constexpr std::size_t kLaneCount = 5;

const char* LaneName(Lane lane);  // "health", "short", "lifecycle", "process", "pull"

// The lane of a CRI method by its gRPC name ("Version", "PullImage"); none for
// GetContainerEvents (a stream that runs on no worker) or a name the table lacks.
std::optional<Lane> LaneOf(std::string_view method);

// Whether a call of `method` is first tried at once, on the gRPC thread that received it
// (Call::AnsweredAtOnce), before it is queued for a worker of its lane.
bool TriedAtOnce(std::string_view method);

struct LaneLimits {
  int workers = 1;             // at most; started as calls come
  std::size_t max_queued = 1;  // calls waiting for a worker; past it, RESOURCE_EXHAUSTED
  absl::Duration max_idle = absl::Seconds(60);  // a worker without a call this long leaves
};

using Limits = std::array<LaneLimits, kLaneCount>;  // by Lane
Limits DefaultLimits();

}  // namespace shim::dispatch
