#pragma once
// Polls a condition that another thread makes true (a hub's listener, a log copier's
// stream): every 5 ms, up to `wait`.
#include <functional>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace testutil {

inline bool Eventually(const std::function<bool()>& done, absl::Duration wait = absl::Seconds(10)) {
  const absl::Time until = absl::Now() + wait;
  while (absl::Now() < until) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return done();
}

}  // namespace testutil
