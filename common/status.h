#pragma once
// absl::Status helpers shared by every component.
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define DS_CONCAT_INNER(a, b) a##b
#define DS_CONCAT(a, b) DS_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                  \
  do {                                         \
    ::absl::Status _ds_status = (expr);        \
    if (!_ds_status.ok()) return _ds_status;   \
  } while (0)

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(DS_CONCAT(_ds_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(*tmp)

namespace common {

// Prefixes the message of a failed status with context, keeping its code.
absl::Status Annotate(const absl::Status& status, std::string_view prefix);

}  // namespace common
