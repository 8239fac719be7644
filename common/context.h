#pragma once
// The caller's deadline and cancellation, carried into every Docker call.
#include <functional>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace common {

struct Context {
  absl::Time deadline = absl::InfiniteFuture();
  // Returns true once the caller has gone away; may be empty.
  std::function<bool()> is_cancelled;

  bool Cancelled() const { return is_cancelled && is_cancelled(); }
  bool Expired() const { return absl::Now() >= deadline; }

  static Context WithTimeout(absl::Duration timeout) {
    return Context{absl::Now() + timeout, nullptr};
  }
  // A copy whose deadline is no later than `limit` from now.
  Context Bounded(absl::Duration limit) const {
    Context c = *this;
    c.deadline = std::min(deadline, absl::Now() + limit);
    return c;
  }
};

}  // namespace common
