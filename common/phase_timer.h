#pragma once
// A measuring seam: where the time of a CRI call goes, phase by phase. The pod
// start-up bench (tests/bench/pod_startup_bench.cc) passes a sink through
// shim::Options::phase_sink and network::CniOptions::phase_sink; production passes
// none, and a ScopedPhase then costs one branch (no clock read, no call).
//
// Phase names are string literals at the call sites, "<rpc or component>: <step>"
// ("RunPodSandbox: infra create", "cni ADD bridge"); a sink must not keep the view
// beyond Record.
#include <chrono>
#include <string_view>

#include "absl/time/time.h"

namespace common {

class PhaseSink {
 public:
  virtual ~PhaseSink() = default;
  // Called on the thread that ran the phase; many threads may call at once.
  virtual void Record(std::string_view phase, absl::Duration elapsed) = 0;
};

// Times its scope (or until Stop) into `sink`, when there is one.
class ScopedPhase {
 public:
  ScopedPhase(PhaseSink* sink, std::string_view phase) : sink_(sink), phase_(phase) {
    if (sink_ != nullptr) start_ = std::chrono::steady_clock::now();
  }
  ~ScopedPhase() { Stop(); }
  ScopedPhase(const ScopedPhase&) = delete;
  ScopedPhase& operator=(const ScopedPhase&) = delete;

  // Records now instead of at the end of the scope; later calls do nothing.
  void Stop() {
    if (sink_ == nullptr) return;
    sink_->Record(phase_, absl::FromChrono(std::chrono::steady_clock::now() - start_));
    sink_ = nullptr;
  }

 private:
  PhaseSink* sink_;
  std::string_view phase_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace common
