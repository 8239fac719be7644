#include "observability/redact.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace observability {

namespace {

constexpr std::string_view kRedacted = "<redacted>";

bool IsSecretName(std::string_view raw) {
  const std::string name = absl::AsciiStrToLower(absl::string_view(raw.data(), raw.size()));
  return name == "password" || name == "auth" || name == "identitytoken" || name == "registrytoken" ||
         name == "x-registry-auth" || name == "authorization" || absl::StrContains(name, "password") ||
         absl::StrContains(name, "secret") || absl::StrContains(name, "token");
}

// The end of the JSON string whose opening quote is at `open`: the index of its
// closing quote, or text.size() when the text ends first.
std::size_t StringEnd(std::string_view text, std::size_t open) {
  for (std::size_t i = open + 1; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == '"') {
      return i;
    }
  }
  return text.size();
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::size_t SkipSpace(std::string_view text, std::size_t i) {
  while (i < text.size() && absl::ascii_isspace(static_cast<unsigned char>(text[i]))) ++i;
  return i;
}

}  // namespace

std::string RedactSecrets(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] != '"') {
      out += text[i++];
      continue;
    }
    const std::size_t close = StringEnd(text, i);
    const std::string_view name = text.substr(i + 1, close - i - 1);
    out.append(text.substr(i, close + 1 - i));
    i = close + 1;
    std::size_t colon = SkipSpace(text, i);
    if (colon >= text.size() || text[colon] != ':') continue;
    std::size_t value = SkipSpace(text, colon + 1);
    if (value >= text.size()) continue;
    if (IsSecretName(name) && text[value] == '"') {
      out.append(text.substr(i, value - i)).append("\"").append(kRedacted).append("\"");
      i = StringEnd(text, value) + 1;
    } else if (absl::EqualsIgnoreCase(absl::string_view(name.data(), name.size()), "env") && text[value] == '[') {
      // Each "K=V" of the list keeps its K.
      out.append(text.substr(i, value + 1 - i));
      i = value + 1;
      while (i < text.size() && text[i] != ']') {
        if (text[i] != '"') {
          out += text[i++];
          continue;
        }
        const std::size_t end = StringEnd(text, i);
        const std::string_view entry = text.substr(i + 1, end - i - 1);
        const std::size_t eq = entry.find('=');
        out.append("\"").append(entry.substr(0, eq == std::string_view::npos ? 0 : eq + 1)).append(kRedacted).append("\"");
        i = end + 1;
      }
    }
  }
  return out;
}

std::string DecodeTarget(std::string_view target) {
  std::string out;
  for (std::size_t i = 0; i < target.size(); ++i) {
    int hi, lo;
    if (target[i] == '%' && i + 2 < target.size() && (hi = HexValue(target[i + 1])) >= 0 &&
        (lo = HexValue(target[i + 2])) >= 0) {
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += target[i];
    }
  }
  return out;
}

std::string Abbreviate(std::string_view text, std::size_t limit) {
  std::string out;
  const std::string_view kept = text.substr(0, limit);
  for (const char c : kept) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += c;
    }
  }
  if (kept.size() < text.size()) absl::StrAppend(&out, "... (", text.size(), " bytes)");
  return out;
}

}  // namespace observability
