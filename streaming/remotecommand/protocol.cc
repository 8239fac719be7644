#include "streaming/remotecommand/protocol.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status.h"
#include "common/strings.h"
#include "nlohmann/json.hpp"

namespace streaming::remotecommand {
namespace {

using Json = nlohmann::ordered_json;  // keeps keys in the order metav1.Status marshals them

constexpr std::size_t kMaxResizeObjectBytes = 4096;

// Invalid UTF-8 in a runtime's error text becomes U+FFFD, as Go's json.Marshal does,
// instead of nlohmann's default of throwing.
std::string Dump(const Json& json) { return json.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json FailureStatus(const std::string& message, const std::string& reason, const Json& cause) {
  return {{"metadata", Json::object()},
          {"status", "Failure"},
          {"message", message},
          {"reason", reason},
          {"details", {{"causes", Json::array({cause})}}}};
}

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// A TerminalSize field as Go's decoder fills a uint16: a non-negative integer
// literal (no fraction, no exponent) that fits.
absl::StatusOr<uint16_t> Dimension(const std::string& key, const Json& value) {
  if (!value.is_number_unsigned() || value.get<uint64_t>() > UINT16_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("resize event field \"", key, "\" is ", Dump(value), ", want an integer in 0..65535"));
  }
  return static_cast<uint16_t>(value.get<uint64_t>());
}

absl::StatusOr<TerminalSize> ParseSize(const std::string& text) {
  const Json object = Json::parse(text, nullptr, false);
  if (object.is_discarded()) return absl::InvalidArgumentError("resize event is not valid JSON");
  TerminalSize size;
  // Document order, so a repeated key's last value wins as in Go; unknown keys and
  // nulls leave the size alone, also as in Go.
  for (const auto& item : object.items()) {
    const absl::string_view key = item.key();
    uint16_t* field = absl::EqualsIgnoreCase(key, "width")    ? &size.width
                      : absl::EqualsIgnoreCase(key, "height") ? &size.height
                                                              : nullptr;
    if (field == nullptr || item.value().is_null()) continue;
    ASSIGN_OR_RETURN(*field, Dimension(item.key(), item.value()));
  }
  return size;
}

}  // namespace

std::optional<std::string> NegotiateProtocol(const std::vector<std::string>& offered,
                                             const std::vector<std::string_view>& supported) {
  for (const std::string& line : offered) {
    for (absl::string_view entry : absl::StrSplit(line, ',')) {
      const std::string_view name = common::Sv(absl::StripAsciiWhitespace(entry));
      if (std::ranges::find(supported, name) != supported.end()) return std::string(name);
    }
  }
  return std::nullopt;
}

std::optional<Version> VersionOf(std::string_view protocol) {
  if (protocol == "channel.k8s.io") return Version::kV1;
  if (protocol == "v2.channel.k8s.io") return Version::kV2;
  if (protocol == "v3.channel.k8s.io") return Version::kV3;
  if (protocol == "v4.channel.k8s.io") return Version::kV4;
  if (protocol == "v5.channel.k8s.io") return Version::kV5;
  return std::nullopt;
}

std::string SuccessStatus() { return Dump({{"metadata", Json::object()}, {"status", "Success"}}); }

std::string ExitCodeStatus(int exit_code, std::string_view error) {
  return Dump(FailureStatus(absl::StrCat("command terminated with non-zero exit code: ", common::Av(error)),
                            "NonZeroExitCode", {{"reason", "ExitCode"}, {"message", std::to_string(exit_code)}}));
}

std::string InternalErrorStatus(std::string_view message) {
  const std::string text(message);
  Json status = FailureStatus(absl::StrCat("Internal error occurred: ", text), "InternalError", {{"message", text}});
  status["code"] = 500;
  return Dump(status);
}

absl::Status ResizeDecoder::Feed(std::string_view bytes, std::vector<TerminalSize>& out) {
  if (error_.ok()) error_ = Scan(bytes, out);
  return error_;
}

absl::Status ResizeDecoder::Scan(std::string_view bytes, std::vector<TerminalSize>& out) {
  for (const char c : bytes) {
    if (pending_.empty()) {
      if (IsJsonSpace(c)) continue;  // between objects (json.Encoder ends each with '\n')
      if (c != '{') return absl::InvalidArgumentError("resize event is not a JSON object");
    }
    pending_ += c;
    if (pending_.size() > kMaxResizeObjectBytes) {
      return absl::InvalidArgumentError(absl::StrCat("resize event longer than ", kMaxResizeObjectBytes, " bytes"));
    }
    if (!ClosesObject(c)) continue;
    ASSIGN_OR_RETURN(const TerminalSize size, ParseSize(pending_));
    out.push_back(size);
    pending_.clear();
  }
  return absl::OkStatus();
}

bool ResizeDecoder::ClosesObject(char c) {
  if (in_string_) {
    if (escaped_) {
      escaped_ = false;
    } else if (c == '\\') {
      escaped_ = true;
    } else if (c == '"') {
      in_string_ = false;
    }
    return false;
  }
  if (c == '"') {
    in_string_ = true;
  } else if (c == '{') {
    ++depth_;
  } else if (c == '}') {
    return --depth_ == 0;
  }
  return false;
}

}  // namespace streaming::remotecommand
