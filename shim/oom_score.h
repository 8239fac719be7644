#pragma once
// Restricted hosts (no CAP_SYS_RESOURCE, e.g. nested or sandboxed nodes) refuse
// to lower oom_score_adj below the current value, and runc then fails every
// container that asks for it. OomScoreClamp finds the lowest value this host
// permits once and raises lower requests to it, logging that once.
#include <atomic>
#include <optional>

namespace shim {

class OomScoreClamp {
 public:
  // Without `fixed_floor`, probes the host: the lowest permitted value is -1000
  // when lowering works, else this process's current oom_score_adj.
  explicit OomScoreClamp(std::optional<int> fixed_floor = std::nullopt);

  int Clamp(int desired);
  int lowest_permitted() const { return lowest_; }

 private:
  int lowest_;
  std::atomic<bool> logged_{false};
};

}  // namespace shim
