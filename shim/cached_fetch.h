#pragma once
// A value asked of Docker that changes rarely (its /info, its version), kept for a
// while and asked by one caller at a time: a burst of calls asks dockerd once. While
// it is asked again, callers get the answer from before, or wait for this one when
// there is none yet. After a failed fetch the next caller asks again; the answer from
// before stays known (Last), for callers that would rather have an old answer than
// none.
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/context.h"
#include "common/no_wait.h"
#include "dockerclient/errors.h"

namespace shim {

template <typename T>
class CachedFetch {
 public:
  // `what` names the request in the DEADLINE_EXCEEDED of a caller that waited for
  // another's fetch ("GET /info"); `clock` is absl::Now when empty.
  CachedFetch(std::string what, absl::Duration ttl, std::function<absl::Time()> clock)
      : what_(std::move(what)), ttl_(ttl), clock_(std::move(clock)) {}

  absl::StatusOr<std::shared_ptr<const T>> Get(const common::Context& ctx,
                                               const std::function<absl::StatusOr<T>(const common::Context&)>& fetch) {
    absl::MutexLock lock(&mu_);
    while (fetching_ && !value_) {  // the first answer is being asked: wait for it
      if (!common::MayWait()) return common::WouldWait(what_);
      if (fetched_.WaitWithDeadline(&mu_, ctx.deadline) && fetching_ && !value_) {
        return dockerclient::DeadlineError(what_);
      }
    }
    if (value_ && (fetching_ || Now() - time_ < ttl_)) return value_;
    fetching_ = true;
    mu_.Unlock();
    absl::StatusOr<T> fetched = fetch(ctx);
    mu_.Lock();
    fetching_ = false;
    fetched_.SignalAll();
    if (!fetched.ok()) return fetched.status();
    value_ = std::make_shared<const T>(*std::move(fetched));
    time_ = Now();
    return value_;
  }

  // The last answer, however old; null when none came yet.
  std::shared_ptr<const T> Last() {
    absl::MutexLock lock(&mu_);
    return value_;
  }

 private:
  absl::Time Now() const { return clock_ ? clock_() : absl::Now(); }

  const std::string what_;
  const absl::Duration ttl_;
  const std::function<absl::Time()> clock_;
  absl::Mutex mu_;
  absl::CondVar fetched_;
  std::shared_ptr<const T> value_ ABSL_GUARDED_BY(mu_);
  absl::Time time_ ABSL_GUARDED_BY(mu_);
  bool fetching_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace shim
