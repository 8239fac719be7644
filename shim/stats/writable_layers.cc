#include "shim/stats/writable_layers.h"

#include <algorithm>

#include "absl/time/clock.h"
#include "common/log.h"

namespace shim::stats {

WritableLayerCollector::WritableLayerCollector(LayerCollectorOptions options)
    : options_(options), thread_([this] { Run(); }) {}

WritableLayerCollector::~WritableLayerCollector() { Stop(); }

void WritableLayerCollector::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::optional<LayerUsage> WritableLayerCollector::Get(const std::string& id, const std::string& upper_dir) {
  const absl::Time now = absl::Now();
  std::lock_guard lock(mu_);
  auto [it, added] = layers_.try_emplace(id);
  Layer& layer = it->second;
  layer.asked_at = now;
  if (added || layer.upper_dir != upper_dir) {
    layer = Layer{upper_dir, now, now, std::nullopt, options_.interval};
    wake_.notify_one();
  }
  return layer.last;
}

std::map<std::string, WritableLayerCollector::Layer>::iterator WritableLayerCollector::Next(absl::Time now) {
  auto next = layers_.end();
  for (auto it = layers_.begin(); it != layers_.end();) {
    if (now - it->second.asked_at > options_.forget_after) {
      it = layers_.erase(it);
      continue;
    }
    if (next == layers_.end() || it->second.due < next->second.due) next = it;
    ++it;
  }
  return next;
}

void WritableLayerCollector::Run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const absl::Time now = absl::Now();
    auto next = Next(now);
    if (next == layers_.end()) {
      wake_.wait(lock);
      continue;
    }
    if (next->second.due > now) {
      wake_.wait_for(lock, absl::ToChronoNanoseconds(next->second.due - now));
      continue;
    }
    const std::string id = next->first, dir = next->second.upper_dir;
    next->second.due = now + next->second.every;
    lock.unlock();
    absl::StatusOr<DiskUsage> usage = MeasureTree(dir);
    const absl::Time measured_at = absl::Now();
    lock.lock();
    // The layer may have been forgotten, or replaced, while the walk ran.
    auto it = layers_.find(id);
    if (it == layers_.end() || it->second.upper_dir != dir) continue;
    if (usage.ok()) {
      Layer& layer = it->second;
      const bool same = layer.last && layer.last->usage == *usage;
      layer.every = same ? std::min(layer.every * 2, std::max(options_.max_interval, options_.interval)) : options_.interval;
      layer.due = now + layer.every;
      layer.last = LayerUsage{*usage, measured_at};
    } else {
      LOG_DEBUG << "writable layer of " << id << ": " << usage.status().message();
    }
  }
}

}  // namespace shim::stats
