#include "shim/dispatch/lanes.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace shim::dispatch {

namespace {

// What each call waits on decides its lane:
// - health: Version and Status, the kubelet's and crictl's view of whether the runtime
//   is up. They give Docker at most 2 s (runtime_info.cc), so they answer even while
//   dockerd hangs and every short worker waits on it until its caller's deadline
//   (the kubelet's relists wait up to 2 minutes).
// - short: answered from memory (the container view, caches), cgroup and /proc files,
//   or a few Docker reads (inspect, list) that dockerd serves without waiting for a
//   container. The kubelet's relists, status polls and stats land here: they must
//   never wait behind work that takes seconds. ImageFsInfo walks the layer store at
//   most once per call burst (others wait for its figures), the one read that may
//   take seconds.
// - lifecycle: dockerd, containerd, runc and the CNI plugins create, start or remove
//   something; seconds, bounded by --runtime-request-timeout. StopPodSandbox belongs
//   here: it kills without a grace period (the kubelet stopped the app containers first).
// - process: the call lasts as long as a container's processes make it: StopContainer
//   waits up to the pod's grace period, ExecSync for its command (probes), a checkpoint
//   for CRIU's dump. Threads here sleep; many pods ending at once must not delay
//   pod starts, nor must a slow probe.
// - pull: registries and the network: a pull takes minutes; a burst of pulls must
//   not delay a probe or a stop.
constexpr std::pair<std::string_view, Lane> kLaneOfMethod[] = {
    // RuntimeService
    {"Version", Lane::kHealth},
    {"Status", Lane::kHealth},
    {"RuntimeConfig", Lane::kShort},
    {"UpdateRuntimeConfig", Lane::kShort},
    {"ListPodSandbox", Lane::kShort},
    {"StreamPodSandboxes", Lane::kShort},
    {"PodSandboxStatus", Lane::kShort},
    {"ListContainers", Lane::kShort},
    {"StreamContainers", Lane::kShort},
    {"ContainerStatus", Lane::kShort},
    {"ContainerStats", Lane::kShort},
    {"ListContainerStats", Lane::kShort},
    {"StreamContainerStats", Lane::kShort},
    {"PodSandboxStats", Lane::kShort},
    {"ListPodSandboxStats", Lane::kShort},
    {"StreamPodSandboxStats", Lane::kShort},
    {"ListMetricDescriptors", Lane::kShort},
    {"ListPodSandboxMetrics", Lane::kShort},
    {"StreamPodSandboxMetrics", Lane::kShort},
    {"ReopenContainerLog", Lane::kShort},
    {"Exec", Lane::kShort},  // Exec, Attach, PortForward only issue a URL
    {"Attach", Lane::kShort},
    {"PortForward", Lane::kShort},
    {"RunPodSandbox", Lane::kLifecycle},
    {"StopPodSandbox", Lane::kLifecycle},
    {"RemovePodSandbox", Lane::kLifecycle},
    {"CreateContainer", Lane::kLifecycle},
    {"StartContainer", Lane::kLifecycle},
    {"RemoveContainer", Lane::kLifecycle},
    {"UpdateContainerResources", Lane::kLifecycle},
    {"UpdatePodSandboxResources", Lane::kLifecycle},
    {"StopContainer", Lane::kProcess},
    {"ExecSync", Lane::kProcess},
    {"CheckpointContainer", Lane::kProcess},
    // ImageService
    {"ListImages", Lane::kShort},
    {"StreamImages", Lane::kShort},
    {"ImageStatus", Lane::kShort},
    {"ImageFsInfo", Lane::kShort},
    {"RemoveImage", Lane::kLifecycle},
    {"PullImage", Lane::kPull},
};

// What the kubelet asks every second or so, for every pod: the container view and the
// shim's caches answer these from memory, unless the view is not live yet or misses a
// container, or a cached Docker answer (the version, an image's facts) is due again.
// At 100 pods they were 15 of the 16 calls a second, each handed to a worker and back
// (two thread wake-ups, more than the answer costs).
constexpr std::string_view kTriedAtOnce[] = {"Version", "ListPodSandbox", "PodSandboxStatus", "ListContainers",
                                             "ContainerStatus"};

}  // namespace

bool TriedAtOnce(std::string_view method) {
  return std::find(std::begin(kTriedAtOnce), std::end(kTriedAtOnce), method) != std::end(kTriedAtOnce);
}

const char* LaneName(Lane lane) {
  switch (lane) {
    case Lane::kHealth:
      return "health";
    case Lane::kShort:
      return "short";
    case Lane::kLifecycle:
      return "lifecycle";
    case Lane::kProcess:
      return "process";
    case Lane::kPull:
      return "pull";
  }
  return "unknown";
}

std::optional<Lane> LaneOf(std::string_view method) {
  for (const auto& [name, lane] : kLaneOfMethod)
    if (name == method) return lane;
  return std::nullopt;
}

// Workers by what the lane's calls spend their time on (the host has a few cores):
// - health: a call takes 2 s at most; the kubelet asks Status every few seconds and
//   crictl Version before each command. 4.
// - short: quick reads, mostly waiting for dockerd's answer (an inspect takes ms, and
//   tens of ms while dockerd is busy with a burst of pod starts) rather than using a
//   core; some calls make several. 32 keep the kubelet's status polls flowing then
//   (cri_lanes_bench: 8 workers answered 150 calls/s at 5 ms per Docker read).
// - lifecycle: mostly waiting on dockerd, containerd and CNI plugins (an IPAM server
//   may take seconds), some of it serialized inside dockerd. 32 keep dockerd busy
//   during a burst of pod starts without handing it hundreds of creates at once.
// - process: sleeping until processes exit or a grace period ends; a thread costs a
//   mostly untouched stack. 256: a node with the kubelet's maxPods raised to 250 stops
//   every pod at once (a drain, a node shutdown), each StopContainer waiting out its
//   grace period; with fewer, the stops go in rounds of grace periods (64 workers took
//   65 s to stop 100 pods with a 30 s grace period where cri-dockerd took 40 s).
// - pull: dockerd downloads 3 layers at a time for all pulls and joins pulls of the
//   same image; the kubelet pulls one image at a time unless told otherwise
//   (serializeImagePulls), then maxParallelImagePulls. 16 is more than it sends.
// Queues: 1024 calls per lane, over 9 per pod at the kubelet's 110 pods. A queued
// call holds its request (a few KiB; the kubelet's largest, CreateContainer, rarely
// 100 KiB) and gRPC's state of the call, so all lanes full stay in tens of MiB.
// A worker without a call for 60 s (LaneLimits' default) leaves: after a burst the
// threads return to what the kubelet's steady calls keep busy (the most recently idle
// worker takes the next call), and a thread costs far less to start than the calls
// it runs, so a worker that left and is needed again is cheap.
Limits DefaultLimits() {
  Limits limits;
  limits[static_cast<std::size_t>(Lane::kHealth)] = {4, 1024};
  limits[static_cast<std::size_t>(Lane::kShort)] = {32, 1024};
  limits[static_cast<std::size_t>(Lane::kLifecycle)] = {32, 1024};
  limits[static_cast<std::size_t>(Lane::kProcess)] = {256, 1024};
  limits[static_cast<std::size_t>(Lane::kPull)] = {16, 1024};
  return limits;
}

}  // namespace shim::dispatch
