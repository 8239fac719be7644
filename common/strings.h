#pragma once
// Debian's abseil is built with its own string_view type (not std::string_view);
// these convert at the boundary without copying.
#include <string_view>

#include "absl/strings/string_view.h"

namespace common {

inline absl::string_view Av(std::string_view s) { return {s.data(), s.size()}; }
inline std::string_view Sv(absl::string_view s) { return {s.data(), s.size()}; }

}  // namespace common
