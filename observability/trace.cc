#include "observability/trace.h"

#include "absl/strings/str_cat.h"

namespace observability {

namespace {
constexpr std::size_t kMaxCalls = 200;
thread_local CallTrace* t_trace = nullptr;
}  // namespace

CallTrace::CallTrace() : previous_(t_trace) { t_trace = this; }
CallTrace::~CallTrace() { t_trace = previous_; }

CallTrace* CallTrace::Current() { return t_trace; }

void CallTrace::Add(TracedCall call) {
  if (calls_.size() >= kMaxCalls) {
    ++dropped_;
    return;
  }
  calls_.push_back(std::move(call));
}

std::string CallTrace::Format(std::string_view header) const {
  std::string out(header);
  for (const TracedCall& c : calls_) {
    absl::StrAppend(&out, "\n  ", c.what, " -> ", c.outcome, " in ",
                    absl::FormatDuration(absl::Trunc(c.duration, absl::Microseconds(1))));
    if (!c.request.empty()) absl::StrAppend(&out, "\n      > ", c.request);
    if (!c.response.empty()) absl::StrAppend(&out, "\n      < ", c.response);
  }
  if (dropped_ > 0) absl::StrAppend(&out, "\n  ... and ", dropped_, " more calls");
  return out;
}

}  // namespace observability
