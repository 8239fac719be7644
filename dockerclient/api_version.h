#pragma once
// Docker Engine API version strings ("1.41") as comparable numbers.
#include <optional>
#include <string_view>
#include <utility>

namespace dockerclient {

// {1, 41} for "1.41"; nullopt for anything else.
std::optional<std::pair<int, int>> ParseApiVersion(std::string_view version);

// True when `version` parses and is at least major.minor.
bool ApiAtLeast(std::string_view version, int major, int minor);

}  // namespace dockerclient
