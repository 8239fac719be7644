#pragma once
#include <string>
#include <string_view>

#include "absl/strings/ascii.h"

namespace dockerclient {

// Percent-encodes all but RFC 3986 unreserved characters and those in `keep`; for
// path segments and query values.
inline std::string Escape(std::string_view s, std::string_view keep = {}) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || keep.find(ch) != keep.npos) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace dockerclient
