#pragma once
// What the log lines written while a CRI call is handled name: the RPC, and the pod
// and container its request names (set for the call on its thread, printed by
// LogLine). And whether --log-level=trace asked for each call's Docker and CNI calls.
#include <string>
#include <string_view>

namespace common {

struct LogContext {
  std::string_view rpc;  // a string literal
  std::string pod, container;
};

// Sets the calling thread's log context for its lifetime (restoring the previous one).
class ScopedLogContext {
 public:
  explicit ScopedLogContext(LogContext context);
  ~ScopedLogContext();
  ScopedLogContext(const ScopedLogContext&) = delete;
  ScopedLogContext& operator=(const ScopedLogContext&) = delete;

 private:
  LogContext context_;
  const LogContext* previous_;
};

// The calling thread's context, or null outside a CRI call.
const LogContext* CurrentLogContext();

// --log-level=trace: debug logging, plus one block per CRI call listing the Docker and
// CNI calls it made.
void SetTraceCalls(bool on);
bool TraceCalls();

}  // namespace common
