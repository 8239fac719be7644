#pragma once
// --log-level=trace: what one CRI call asked of Docker and of CNI plugins. The call's
// thread records every Docker request and plugin run into its CallTrace, which the
// RPC's scope logs as one block when the call ends.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"

namespace observability {

// Bodies are cut to this many bytes in a trace.
inline constexpr std::size_t kTraceBodyLimit = 256;

struct TracedCall {
  std::string what;     // "docker GET /v1.41/containers/json?all=1", "cni ADD bridge (network cbr0)"
  std::string outcome;  // "200", "ok", or the error
  absl::Duration duration;
  std::string request, response;  // redacted and abbreviated; empty when there is none
};

// Installs itself as the calling thread's trace for its lifetime.
class CallTrace {
 public:
  CallTrace();
  ~CallTrace();
  CallTrace(const CallTrace&) = delete;
  CallTrace& operator=(const CallTrace&) = delete;

  // The trace recorded on this thread, or null (not tracing, or not in a CRI call).
  static CallTrace* Current();

  // Calls beyond the 200th are only counted.
  void Add(TracedCall call);
  // `header` on the first line, then one line per call and one per body.
  std::string Format(std::string_view header) const;
  std::size_t size() const { return calls_.size() + dropped_; }

 private:
  std::vector<TracedCall> calls_;
  std::size_t dropped_ = 0;
  CallTrace* previous_;
};

}  // namespace observability
