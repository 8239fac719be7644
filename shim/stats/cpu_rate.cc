#include "shim/stats/cpu_rate.h"

namespace shim::stats {

std::optional<uint64_t> CpuRate::Update(CpuSample sample) {
  const bool restarted = baseline_ && (sample.usage_ns < baseline_->usage_ns || sample.at < baseline_->at);
  if (!baseline_ || restarted) {
    baseline_ = sample;
    rate_.reset();
    return rate_;
  }
  const absl::Duration interval = sample.at - baseline_->at;
  if (interval < kMinInterval) return rate_;
  const double used_ns = static_cast<double>(sample.usage_ns - baseline_->usage_ns);
  rate_ = static_cast<uint64_t>(used_ns / absl::ToDoubleSeconds(interval));
  baseline_ = sample;
  return rate_;
}

}  // namespace shim::stats
