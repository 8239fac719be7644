#include "shim/stats_sampler.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "common/log.h"
#include "common/status.h"

namespace shim {
namespace {

// As long as the kubelet keeps its own CPU samples (its cri_stats_provider's cache period).
constexpr absl::Duration kForgetAfter = absl::Minutes(10);
constexpr absl::Duration kPruneEvery = absl::Minutes(1);
// A container's cgroup files are closed once it has not been sampled for this long (six
// of the kubelet's stats periods): it was removed, or nobody asks for its figures.
constexpr absl::Duration kCloseFilesAfter = absl::Minutes(1);
// Far more containers than a node runs; a bound against churn within kForgetAfter.
constexpr size_t kMaxTracked = 4096;

// cgroupfs names a container's cgroup by its ID, the systemd driver "docker-<id>.scope".
bool NamesContainer(const stats::CgroupDirs& dirs, const std::string& id) {
  return absl::StrContains(dirs.cpu, id) || absl::StrContains(dirs.memory, id) || absl::StrContains(dirs.pids, id);
}

}  // namespace

StatsSampler::StatsSampler(dockerclient::DockerClient& docker, SamplerOptions options)
    : docker_(docker), options_(std::move(options)) {
  absl::StatusOr<stats::CgroupLayout> layout = stats::CgroupLayout::Discover(options_.proc_root, options_.cgroup_prefix);
  if (layout.ok()) {
    layout_ = std::move(*layout);
  } else {
    LOG_WARN << "stats: no cgroup figures: " << layout.status().message();
  }
}

absl::Time StatsSampler::Now() const { return options_.clock ? options_.clock() : absl::Now(); }

ContainerFigures StatsSampler::Container(const common::Context& ctx, v1::Container container) {
  ContainerFigures out;
  out.container = std::move(container);
  const std::string& id = out.container.id();
  const bool running = out.container.state() == v1::CONTAINER_RUNNING;
  if (!running) CloseCgroupFiles(id);
  // A stopped container is worth an inspect only for its writable layer.
  if (!running && !options_.writable_layers) return out;
  absl::StatusOr<Facts> facts = FactsOf(ctx, id, running);
  if (!facts.ok()) return out;  // removed since the list
  if (running && layout_) {
    if (std::optional<stats::CgroupDirs> dirs = CgroupOfRunning(ctx, id, *facts)) {
      out.cgroup = Read(id, *dirs, facts->cgroup_files.get());
      // Gone (it stopped since the list): found again from its process next time.
      const stats::CgroupFigures& read = out.cgroup->figures;
      if (!read.cpu_usage_ns && !read.memory && !read.process_count) Forget(id);
    }
  }
  if (options_.writable_layers && !facts->upper_dir.empty())
    out.writable_layer = options_.writable_layers->Get(id, facts->upper_dir);
  return out;
}

PodFigures StatsSampler::Pod(const common::Context& ctx, v1::PodSandbox sandbox, bool systemd_driver) {
  PodFigures out;
  out.sandbox = std::move(sandbox);
  const std::string& id = out.sandbox.id();
  if (out.sandbox.state() != v1::SANDBOX_READY || !layout_) return out;
  absl::StatusOr<Facts> facts = FactsOf(ctx, id, true);
  if (!facts.ok()) return out;
  // Without a cgroup parent the pod has no cgroup of its own (Docker's default parent
  // holds every container); containerd has no pod figures then either.
  if (!facts->cgroup_parent.empty()) out.cgroup = Read(id, layout_->DirsOfParent(facts->cgroup_parent, systemd_driver));
  if (facts->host_network || !DirsOfRunning(ctx, id, *facts)) return out;
  absl::StatusOr<std::vector<stats::InterfaceCounters>> interfaces = stats::ReadNetDev(facts->pid, options_.proc_root);
  if (interfaces.ok()) out.network = NetworkReading{Now(), std::move(*interfaces)};
  return out;
}

absl::StatusOr<StatsSampler::Facts> StatsSampler::FactsOf(const common::Context& ctx, const std::string& id,
                                                          bool running) {
  {
    std::lock_guard lock(mu_);
    auto it = tracked_.find(id);
    if (it != tracked_.end() && it->second.facts && it->second.running == running) {
      it->second.used_at = Now();
      return *it->second.facts;
    }
  }
  ASSIGN_OR_RETURN(dockerclient::ContainerInspect inspect, docker_.InspectContainer(ctx, id));
  Facts facts{inspect.state.pid, inspect.cgroup_parent, inspect.upper_dir, inspect.network_mode == "host", std::nullopt, nullptr};
  if (options_.writable_layers && options_.writable_layer_dir) {
    absl::StatusOr<std::string> dir = options_.writable_layer_dir(ctx, inspect);
    if (!dir.ok()) {
      // Not kept, so that a later sample asks again; the other figures stand.
      LOG_DEBUG << "stats: cannot find container " << id << "'s writable layer: " << dir.status().message();
      facts.upper_dir.clear();
      return facts;
    }
    facts.upper_dir = *std::move(dir);
  }
  const absl::Time now = Now();
  std::lock_guard lock(mu_);
  Tracked& tracked = tracked_[id];
  tracked.facts = facts;
  tracked.running = running;
  tracked.used_at = now;
  Prune(now);
  return facts;
}

std::optional<stats::CgroupDirs> StatsSampler::DirsOfRunning(const common::Context& ctx, const std::string& id,
                                                              Facts& facts) {
  for (int attempt = 0;; ++attempt) {
    if (facts.pid > 0) {
      absl::StatusOr<stats::CgroupDirs> dirs = layout_->DirsOfProcess(facts.pid);
      if (dirs.ok() && NamesContainer(*dirs, id)) return *dirs;
    }
    if (attempt > 0) return std::nullopt;
    Forget(id);
    absl::StatusOr<Facts> fresh = FactsOf(ctx, id, true);
    if (!fresh.ok()) return std::nullopt;
    facts = *fresh;
  }
}

std::optional<stats::CgroupDirs> StatsSampler::CgroupOfRunning(const common::Context& ctx, const std::string& id,
                                                                Facts& facts) {
  if (!facts.cgroup) {
    std::optional<stats::CgroupDirs> dirs = DirsOfRunning(ctx, id, facts);
    if (!dirs) return dirs;
    facts.cgroup = dirs;
  } else if (facts.cgroup_files) {
    return facts.cgroup;
  }
  facts.cgroup_files = std::make_shared<KeptCgroupFiles>();
  std::lock_guard lock(mu_);
  // Unless the entry was forgotten or inspected again meanwhile.
  if (auto it = tracked_.find(id); it != tracked_.end() && it->second.facts && it->second.facts->pid == facts.pid) {
    it->second.facts->cgroup = facts.cgroup;
    it->second.facts->cgroup_files = facts.cgroup_files;
  }
  return facts.cgroup;
}

CgroupReading StatsSampler::Read(const std::string& id, const stats::CgroupDirs& dirs, KeptCgroupFiles* kept) {
  CgroupReading reading;
  if (kept) {
    std::lock_guard lock(kept->mu);
    reading.figures = layout_->Read(dirs, kept->files);
  } else {
    reading.figures = layout_->Read(dirs);
  }
  reading.at = Now();
  if (!reading.figures.cpu_usage_ns) return reading;
  std::lock_guard lock(mu_);
  Tracked& tracked = tracked_[id];
  tracked.used_at = reading.at;
  reading.nano_cores = tracked.cpu.Update({*reading.figures.cpu_usage_ns, reading.at});
  Prune(reading.at);
  return reading;
}

void StatsSampler::CloseCgroupFiles(const std::string& id) {
  std::lock_guard lock(mu_);
  if (auto it = tracked_.find(id); it != tracked_.end() && it->second.facts) it->second.facts->cgroup_files.reset();
}

void StatsSampler::Forget(const std::string& id) {
  std::lock_guard lock(mu_);
  if (auto it = tracked_.find(id); it != tracked_.end()) it->second.facts.reset();
}

void StatsSampler::Prune(absl::Time now) {
  if (now - pruned_at_ < kPruneEvery && tracked_.size() <= kMaxTracked) return;
  pruned_at_ = now;
  std::erase_if(tracked_, [&](const auto& entry) { return now - entry.second.used_at > kForgetAfter; });
  for (auto& [id, tracked] : tracked_) {
    if (tracked.facts && now - tracked.used_at > kCloseFilesAfter) tracked.facts->cgroup_files.reset();
  }
  while (tracked_.size() > kMaxTracked) {
    tracked_.erase(std::min_element(tracked_.begin(), tracked_.end(), [](const auto& a, const auto& b) {
      return a.second.used_at < b.second.used_at;
    }));
  }
}

}  // namespace shim
