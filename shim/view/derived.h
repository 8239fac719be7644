#pragma once
// A value made from the container view's lists (the CRI relists, converted), kept while
// the view stays at the version it was made at: the kubelet relists every second and
// the node rarely changes in between. Made again when the view moves on, when older
// than the bound the caller gives (what it read beside the view, image facts, ages
// too), or when the last one was incomplete.
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace shim::view {

template <typename T>
struct Made {
  T value;
  // False when part of it is a fallback (Docker did not answer for an image): served
  // once, never kept.
  bool complete = true;
};

template <typename T>
class Derived {
 public:
  // `version` unset (the view is not live): what `make_now` makes (from Docker), for this
  // caller alone.
  absl::StatusOr<std::shared_ptr<const T>> Get(std::optional<uint64_t> version, absl::Time now,
                                               absl::Duration max_age,
                                               absl::FunctionRef<absl::StatusOr<Made<T>>()> make_kept,
                                               absl::FunctionRef<absl::StatusOr<Made<T>>()> make_now) {
    if (version) return Get(*version, now, max_age, make_kept);
    absl::StatusOr<Made<T>> made = make_now();
    if (!made.ok()) return made.status();
    return std::make_shared<const T>(std::move(made->value));
  }

  // `version` is ContainerView::Version(), read before `make` lists the view: a list
  // made meanwhile is newer than the version it is kept under, never older.
  absl::StatusOr<std::shared_ptr<const T>> Get(uint64_t version, absl::Time now, absl::Duration max_age,
                                               absl::FunctionRef<absl::StatusOr<Made<T>>()> make) {
    {
      std::lock_guard lock(mu_);
      if (value_ && version_ == version && now - made_at_ < max_age) return value_;
    }
    absl::StatusOr<Made<T>> made = make();
    if (!made.ok()) return made.status();
    auto value = std::make_shared<const T>(std::move(made->value));
    if (made->complete) {
      std::lock_guard lock(mu_);
      if (!value_ || version >= version_) {
        value_ = value;
        version_ = version;
        made_at_ = now;
      }
    }
    return value;
  }

 private:
  std::mutex mu_;
  std::shared_ptr<const T> value_;  // guarded by mu_
  uint64_t version_ = 0;            // guarded by mu_
  absl::Time made_at_;              // guarded by mu_
};

}  // namespace shim::view
