#include "dockerclient/api_version.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/strings.h"

namespace dockerclient {

std::optional<std::pair<int, int>> ParseApiVersion(std::string_view version) {
  std::pair<absl::string_view, absl::string_view> parts =
      absl::StrSplit(common::Av(version), absl::MaxSplits('.', 1));
  int major = 0, minor = 0;
  if (!absl::SimpleAtoi(parts.first, &major) || !absl::SimpleAtoi(parts.second, &minor)) return std::nullopt;
  return std::make_pair(major, minor);
}

bool ApiAtLeast(std::string_view version, int major, int minor) {
  const auto parsed = ParseApiVersion(version);
  return parsed && *parsed >= std::make_pair(major, minor);
}

}  // namespace dockerclient
