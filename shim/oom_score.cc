#include "shim/oom_score.h"

#include <fstream>
#include <string>

#include "common/log.h"

namespace shim {
namespace {

constexpr char kOomScoreAdjPath[] = "/proc/self/oom_score_adj";

bool ReadOomScoreAdj(int* value) {
  std::ifstream in(kOomScoreAdjPath);
  return static_cast<bool>(in >> *value);
}

bool WriteOomScoreAdj(int value) {
  std::ofstream out(kOomScoreAdjPath);
  out << value;
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace

OomScoreClamp::OomScoreClamp(std::optional<int> fixed_floor) : lowest_(fixed_floor.value_or(-1000)) {
  if (fixed_floor) return;
  int current = 0;
  if (!ReadOomScoreAdj(&current)) return;
  // Lowering by one is enough to learn whether lowering is permitted; raising
  // back is always allowed.
  if (current > -1000 && WriteOomScoreAdj(current - 1)) {
    WriteOomScoreAdj(current);
    return;
  }
  lowest_ = current;
}

int OomScoreClamp::Clamp(int desired) {
  if (desired >= lowest_) return desired;
  if (!logged_.exchange(true)) {
    LOG_WARN << "this host does not permit lowering oom_score_adj (no CAP_SYS_RESOURCE); using " << lowest_
             << " instead of " << desired << " for pod infra and container processes";
  }
  return lowest_;
}

}  // namespace shim
