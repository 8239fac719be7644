#include "observability/rpc_scope.h"

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/strings.h"
#include "observability/families.h"

namespace observability {

RpcScope::RpcScope(const char* method, std::string pod, std::string container)
    : method_(method),
      start_(std::chrono::steady_clock::now()),
      log_(common::LogContext{method, std::move(pod), std::move(container)}) {
  if (common::TraceCalls()) trace_.emplace();
}

void RpcScope::Finish(int code, std::string_view message) {
  const auto elapsed = std::chrono::steady_clock::now() - start_;
  Metrics().cri_requests.With({method_, GrpcCodeName(code)}).Inc();
  Metrics().cri_duration.With({method_}).Observe(std::chrono::duration<double>(elapsed).count());
  if (!trace_) return;
  std::string header = absl::StrCat("trace: ", method_, " ", common::Av(GrpcCodeName(code)));
  if (!message.empty()) absl::StrAppend(&header, " (", common::Av(message), ")");
  absl::StrAppend(&header, " in ", absl::FormatDuration(absl::Trunc(absl::FromChrono(elapsed), absl::Microseconds(1))),
                  ", ", trace_->size(), trace_->size() == 1 ? " call:" : " calls:");
  LOG_DEBUG << trace_->Format(header);
}

std::string_view GrpcCodeName(int code) {
  static constexpr std::string_view kNames[] = {
      "OK",           "CANCELLED",         "UNKNOWN",          "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
      "NOT_FOUND",    "ALREADY_EXISTS",    "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED",      "OUT_OF_RANGE",      "UNIMPLEMENTED",    "INTERNAL",          "UNAVAILABLE",
      "DATA_LOSS",    "UNAUTHENTICATED"};
  if (code < 0 || code >= static_cast<int>(std::size(kNames))) return "UNKNOWN";
  return kNames[code];
}

}  // namespace observability
