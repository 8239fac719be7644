#pragma once
// A CRI call that memory can answer is answered on the gRPC thread that received it
// (shim/dispatch/dispatcher.h): no hand-over to a worker and back, which costs more than
// the answer. That thread must not wait, neither for Docker nor for another thread's
// work, so whatever would wait asks MayWait() first. Inside a NoWaitScope it answers
// false and the scope remembers it: what the attempt then returns is dropped (a caller
// may have made do without what it could not wait for) and the call runs again on a
// worker, where it may wait.
#include <string_view>

#include "absl/status/status.h"

namespace common {

class NoWaitScope {
 public:
  NoWaitScope();
  ~NoWaitScope();
  NoWaitScope(const NoWaitScope&) = delete;
  NoWaitScope& operator=(const NoWaitScope&) = delete;

  // Whether something in the scope would have waited.
  bool wanted_to_wait() const { return wanted_to_wait_; }

 private:
  friend bool MayWait();
  NoWaitScope* const outer_;
  bool wanted_to_wait_ = false;
};

// True outside a NoWaitScope; inside one false, and noted there.
bool MayWait();

// What a refused wait answers in place of its result; no client sees it.
absl::Status WouldWait(std::string_view what);

}  // namespace common
