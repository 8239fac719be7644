#include "common/no_wait.h"

#include "absl/strings/str_cat.h"
#include "common/strings.h"

namespace common {

namespace {
thread_local NoWaitScope* current = nullptr;
}  // namespace

NoWaitScope::NoWaitScope() : outer_(current) { current = this; }

NoWaitScope::~NoWaitScope() { current = outer_; }

bool MayWait() {
  if (current == nullptr) return true;
  current->wanted_to_wait_ = true;
  return false;
}

absl::Status WouldWait(std::string_view what) {
  return absl::UnavailableError(absl::StrCat(Av(what), ": not waited for on a gRPC thread"));
}

}  // namespace common
