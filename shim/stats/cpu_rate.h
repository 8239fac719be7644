#pragma once
// usage_nano_cores: how fast a cumulative CPU counter grew between two samples of the
// same container or pod cgroup.
#include <cstdint>
#include <optional>

#include "absl/time/time.h"

namespace shim::stats {

struct CpuSample {
  uint64_t usage_ns = 0;  // cumulative CPU time
  absl::Time at;
};

// The rate of one cgroup's counter, from the sample before. As containerd's CRI
// (getUsageNanoCores): no rate on the first sample, nor when the counter went backwards
// (a restarted container's new cgroup) or the clock did: never a negative rate; such a
// sample is the next baseline. Unlike it, a sample less than kMinInterval after the
// baseline gets the last rate and leaves the baseline alone: the kubelet (every 10 s),
// crictl and metrics scrapes share one series, and a rate over a few milliseconds is
// noise. containerd's background stats collector answers such callers alike, with the
// rate of its own last interval.
class CpuRate {
 public:
  static constexpr absl::Duration kMinInterval = absl::Seconds(1);

  // Nanoseconds of CPU per second (1e9 is one core busy).
  std::optional<uint64_t> Update(CpuSample sample);

 private:
  std::optional<CpuSample> baseline_;
  std::optional<uint64_t> rate_;
};

}  // namespace shim::stats
