#pragma once
// Containers' writable-layer sizes, measured on a thread of their own: MeasureTree reads
// every inode of a layer, far too slow for a request path (the kubelet lists stats every
// 10 s). Requests only read the last measurement and say which layers are wanted; a layer
// nobody asks about any more (its container is gone, or nothing reads stats) stops being
// measured, so an idle node does no background I/O.
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/time/time.h"
#include "shim/stats/disk_usage.h"

namespace shim::stats {

struct LayerUsage {
  DiskUsage usage;
  absl::Time measured_at;
};

struct LayerCollectorOptions {
  // How often a wanted layer is measured again (containerd's CRI refreshes its
  // snapshot sizes every 10 s, its stats_collect_period)...
  absl::Duration interval = absl::Seconds(10);
  // A layer not asked about for this long is dropped.
  absl::Duration forget_after = absl::Minutes(5);
  // ...and, while its size stays the same, twice as long after each measurement up to
  // this (cAdvisor measured Docker's layers every minute): most containers write
  // nothing, and a node of 100 spent a tenth of the shim's CPU walking them.
  absl::Duration max_interval = absl::Minutes(1);
};

class WritableLayerCollector {
 public:
  // Starts the measuring thread.
  explicit WritableLayerCollector(LayerCollectorOptions options = {});
  ~WritableLayerCollector();  // Stop()
  WritableLayerCollector(const WritableLayerCollector&) = delete;
  WritableLayerCollector& operator=(const WritableLayerCollector&) = delete;

  // The last measurement of container `id`'s writable layer, unset until the first one
  // is done; from now on `upper_dir` is measured every interval (a new layer at once).
  std::optional<LayerUsage> Get(const std::string& id, const std::string& upper_dir);
  // Stops measuring and joins the thread (after the walk in progress). Idempotent.
  void Stop();

 private:
  struct Layer {
    std::string upper_dir;
    absl::Time asked_at;
    absl::Time due;  // of the next measurement
    std::optional<LayerUsage> last;
    absl::Duration every;  // the interval, grown while the size stays the same
  };

  void Run();
  // The layer to measure next, dropping forgotten ones; mu_ held.
  std::map<std::string, Layer>::iterator Next(absl::Time now);

  const LayerCollectorOptions options_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::map<std::string, Layer> layers_;  // by container ID; guarded by mu_
  bool stopping_ = false;                // guarded by mu_
  std::thread thread_;
};

}  // namespace shim::stats
