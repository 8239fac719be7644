#include "dockerclient/errors.h"

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/strings.h"

using common::Av;

namespace dockerclient {

std::string DockerErrorMessage(std::string_view body) {
  auto parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object()) {
    auto it = parsed.find("message");
    if (it != parsed.end() && it->is_string()) return it->get<std::string>();
  }
  return std::string(absl::StripAsciiWhitespace(Av(body)));
}

absl::StatusCode CodeForHttpStatus(int http_status, ConflictMeans conflict) {
  switch (http_status) {
    case 400:
    // A name, ID or body too large for dockerd's HTTP server: only a request can make one.
    case 413:
    case 414:
    case 431: return absl::StatusCode::kInvalidArgument;
    case 401: return absl::StatusCode::kUnauthenticated;
    case 403: return absl::StatusCode::kPermissionDenied;
    case 404: return absl::StatusCode::kNotFound;
    case 409:
      return conflict == ConflictMeans::kAlreadyExists ? absl::StatusCode::kAlreadyExists
                                                       : absl::StatusCode::kFailedPrecondition;
    case 304: return absl::StatusCode::kFailedPrecondition;  // already started / stopped
    case 408:
    case 504: return absl::StatusCode::kDeadlineExceeded;
    case 501: return absl::StatusCode::kUnimplemented;
    case 503: return absl::StatusCode::kUnavailable;
    default: return absl::StatusCode::kInternal;
  }
}

absl::StatusCode CodeForDockerError(int http_status, std::string_view message, ConflictMeans conflict) {
  if (absl::StartsWith(Av(message), "unrecognized image ID ")) return absl::StatusCode::kNotFound;
  return CodeForHttpStatus(http_status, conflict);
}

absl::Status HttpError(int http_status, std::string_view body, std::string_view operation,
                       ConflictMeans conflict) {
  std::string message = DockerErrorMessage(body);
  if (message.empty()) message = absl::StrCat("HTTP ", http_status);
  return absl::Status(CodeForDockerError(http_status, message, conflict),
                      absl::StrCat(Av(operation), ": ", message));
}

absl::Status ConnectError(std::string_view endpoint, std::string_view reason) {
  return absl::UnavailableError(absl::StrCat("cannot connect to the Docker daemon at ", Av(endpoint), ": ",
                                             Av(reason), " (is dockerd running?)"));
}

absl::Status DeadlineError(std::string_view operation) {
  return absl::DeadlineExceededError(absl::StrCat(Av(operation), ": Docker did not answer before the deadline"));
}

absl::Status CancelledError(std::string_view operation) {
  return absl::CancelledError(absl::StrCat(Av(operation), ": cancelled by the caller"));
}

}  // namespace dockerclient
