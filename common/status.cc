#include "common/status.h"

#include "absl/strings/str_cat.h"
#include "common/strings.h"

namespace common {

absl::Status Annotate(const absl::Status& status, std::string_view prefix) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(Av(prefix), ": ", status.message()));
}

}  // namespace common
