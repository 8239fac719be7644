#pragma once
// The figures behind the stats and metrics RPCs (container_stats.cc, sandbox_stats.cc,
// metrics.cc), read from cgroup files and /proc for the containers and pods that
// ListContainers and ListPodSandbox report; never from Docker's /stats. What Docker's
// list does not say (a container's pid, cgroup parent, writable layer) comes from one
// inspect, kept by container ID until the listed state changes or the pid no longer
// belongs to the container; each container's and pod's CPU rate is kept beside it.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "api/cri.h"
#include "common/context.h"
#include "dockerclient/docker_client.h"
#include "shim/stats/cgroup.h"
#include "shim/stats/cpu_rate.h"
#include "shim/stats/netdev.h"
#include "shim/stats/writable_layers.h"

namespace shim {

namespace v1 = ::runtime::v1;

// One cgroup's figures, read at `at`.
struct CgroupReading {
  absl::Time at;
  stats::CgroupFigures figures;
  std::optional<uint64_t> nano_cores;  // see stats::CpuRate
};

struct NetworkReading {
  absl::Time at;
  std::vector<stats::InterfaceCounters> interfaces;  // loopback left out
};

// A listed container and what was read of it.
struct ContainerFigures {
  v1::Container container;              // as ListContainers reports it
  std::optional<CgroupReading> cgroup;  // running containers only
  std::optional<stats::LayerUsage> writable_layer;
};

// A listed pod and what was read of it.
struct PodFigures {
  v1::PodSandbox sandbox;  // as ListPodSandbox reports it
  // The pod's own cgroup: ready pods with a cgroup parent (the kubelet always gives one).
  std::optional<CgroupReading> cgroup;
  std::optional<NetworkReading> network;  // ready pods not on the host's network
  std::vector<ContainerFigures> containers;
};

struct SamplerOptions {
  std::string proc_root = "/proc";
  std::string cgroup_prefix;              // before every cgroup mount point (a fake tree in tests)
  std::function<absl::Time()> clock;      // absl::Now when unset
  stats::WritableLayerCollector* writable_layers = nullptr;  // none: no writable-layer figures
  // The directory of a container's writable layer ("" when it has none to measure); its
  // inspect's upper directory (a graph driver's) when unset.
  std::function<absl::StatusOr<std::string>(const common::Context&, const dockerclient::ContainerInspect&)>
      writable_layer_dir;
};

class StatsSampler {
 public:
  // Finds the host's cgroup layout; without one no cgroup figures are read.
  StatsSampler(dockerclient::DockerClient& docker, SamplerOptions options);

  ContainerFigures Container(const common::Context& ctx, v1::Container container);
  // The pod's own figures (containers are the caller's). `systemd_driver`: Docker's
  // cgroup driver, which decides where the pod's cgroup parent is.
  PodFigures Pod(const common::Context& ctx, v1::PodSandbox sandbox, bool systemd_driver);

 private:
  // One cgroup's files kept open; a sample holds `mu` while it reads them.
  struct KeptCgroupFiles {
    std::mutex mu;
    stats::KeptKernelFiles files;
  };
  // Of one inspect.
  struct Facts {
    int pid = 0;
    std::string cgroup_parent, upper_dir;
    bool host_network = false;
    // The running container's cgroups once found from its process: they are named by
    // its ID, so later samples read them without /proc (the kubelet asks every few seconds).
    std::optional<stats::CgroupDirs> cgroup;
    // Their files, kept open from one sample to the next while these facts stand.
    std::shared_ptr<KeptCgroupFiles> cgroup_files;
  };
  struct Tracked {
    std::optional<Facts> facts;
    bool running = false;  // the listed state `facts` were inspected in
    stats::CpuRate cpu;
    absl::Time used_at;
  };

  absl::Time Now() const;
  absl::StatusOr<Facts> FactsOf(const common::Context& ctx, const std::string& id, bool running);
  // The cgroups of running container `id`, read from its process and checked to be its:
  // a pid that Docker reported may since belong to a restarted container's successor or
  // to nothing. Inspects once more when not (`facts` then holds the new answer).
  std::optional<stats::CgroupDirs> DirsOfRunning(const common::Context& ctx, const std::string& id, Facts& facts);
  // The cgroups of running container `id`: those found before, else DirsOfRunning's,
  // kept for the next sample, with their files open (opened again once closed).
  std::optional<stats::CgroupDirs> CgroupOfRunning(const common::Context& ctx, const std::string& id, Facts& facts);
  // Through `kept` when given, else opening each file.
  CgroupReading Read(const std::string& id, const stats::CgroupDirs& dirs, KeptCgroupFiles* kept = nullptr);
  void Forget(const std::string& id);
  // Its cgroup went with its processes (a restart makes a new one, found again).
  void CloseCgroupFiles(const std::string& id);
  // Drops entries not used for a while, and the least recently used beyond a bound, and
  // closes the cgroup files of containers not sampled for a minute; mu_ held.
  void Prune(absl::Time now);

  dockerclient::DockerClient& docker_;
  const SamplerOptions options_;
  std::optional<stats::CgroupLayout> layout_;
  std::mutex mu_;
  std::map<std::string, Tracked> tracked_;  // by container ID; guarded by mu_
  absl::Time pruned_at_ = absl::InfinitePast();
};

// The one of `items` (v1::Container or v1::PodSandbox, listed with `id` as the ID
// filter, which Docker matches as a prefix) that `id` names: its exact match, else the
// only item. NOT_FOUND for none, INVALID_ARGUMENT when the prefix is ambiguous.
template <typename Item>
absl::StatusOr<Item> FindById(const google::protobuf::RepeatedPtrField<Item>& items, const std::string& id,
                              const char* what) {
  for (const Item& item : items)
    if (item.id() == id) return item;
  if (items.size() == 1) return items[0];
  if (items.empty()) return absl::NotFoundError(absl::StrCat(what, " ", id, " not found"));
  return absl::InvalidArgumentError(absl::StrCat(what, " ID prefix ", id, " is ambiguous (", items.size(), " match)"));
}

}  // namespace shim
