#include "dockerclient/errors.h"

#include <algorithm>
#include <iterator>

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

namespace {

// Docker's own client of its containerd (gRPC) failing to connect or losing the
// connection: a dial of a unix socket, or gRPC's transport wording. Neither comes from a
// registry (Go's HTTP client says "dial tcp").
bool ContainerdUnreachable(std::string_view message) {
  return absl::StrContains(Av(message), "dial unix ") || absl::StrContains(Av(message), "connection error: desc = ");
}

}  // namespace

bool IsRemovalInProgress(const absl::Status& status) {
  return absl::IsFailedPrecondition(status) && absl::StrContains(status.message(), "is already in progress");
}

absl::Status HttpError(int http_status, std::string_view body, std::string_view operation,
                       ConflictMeans conflict) {
  std::string message = DockerErrorMessage(body);
  if (message.empty()) message = absl::StrCat("HTTP ", http_status);
  const std::string_view cause =
      http_status == 503 && ContainerdUnreachable(message) ? "Docker cannot reach its containerd: " : "";
  return absl::Status(CodeForDockerError(http_status, message, conflict),
                      absl::StrCat(Av(operation), ": ", Av(cause), message));
}

namespace {

// How Go's net, net/http and crypto/tls word a registry that cannot be reached. Each
// holds a space or a colon-space, which no image reference or host name can, so a
// reference named in a message cannot match one.
constexpr std::string_view kUnreachableWordings[] = {
    "dial tcp",                                   // every failed connect, with one of:
    "no such host",                               // DNS: "lookup r on 10.0.0.53:53: no such host"
    "connection refused", "no route to host", "network is unreachable", "i/o timeout",
    "connection reset by peer",                   // a peer that closes before answering
    "tls handshake timeout", "tls: ", "x509: ",   // "tls: first record does not look like a TLS handshake"
    "server gave http response to https client",
    "client.timeout exceeded",                    // "(Client.Timeout exceeded while awaiting headers)"
};

// The registry that `reference` names; normalized references always start with it.
std::string_view RegistryOf(std::string_view reference) {
  const size_t slash = reference.find('/');
  return slash == std::string_view::npos ? std::string_view("docker.io") : reference.substr(0, slash);
}

}  // namespace

absl::StatusCode PullErrorCode(std::string_view message, int http_status) {
  const std::string text = absl::AsciiStrToLower(Av(message));
  const auto has = [&text](std::string_view s) { return absl::StrContains(text, Av(s)); };
  // Checked first, as their wordings cannot come from a reference or a host name
  // (which could hold "denied").
  if (std::any_of(std::begin(kUnreachableWordings), std::end(kUnreachableWordings), has)) {
    return absl::StatusCode::kUnavailable;
  }
  // Docker Hub answers "pull access denied ..., repository does not exist or may require
  // 'docker login'" for unknown repositories: not found, not a refusal.
  if (has("not found") || has("manifest unknown") || has("repository does not exist") || has("no such image")) {
    return absl::StatusCode::kNotFound;
  }
  // The registry refused our credentials; the CRI caller itself is not unauthenticated.
  if (has("unauthorized") || has("authentication required") || has("no basic auth credentials") || has("denied")) {
    return absl::StatusCode::kPermissionDenied;
  }
  // Other registry trouble arrives as HTTP 500 or as a stream line; it is no fault of dockerd.
  if (http_status == 0 || http_status == 500) return absl::StatusCode::kUnknown;
  return CodeForHttpStatus(http_status, ConflictMeans::kFailedPrecondition);
}

absl::Status PullError(std::string_view reference, std::string_view message, int http_status) {
  // The containerd image store pulls through Docker's containerd: its failures are not
  // the registry's.
  if (ContainerdUnreachable(message)) {
    return absl::UnavailableError(absl::StrCat("pull image ", Av(reference),
                                               ": Docker cannot reach its containerd: ", Av(message)));
  }
  const absl::StatusCode code = PullErrorCode(message, http_status);
  if (code != absl::StatusCode::kUnavailable) {
    return absl::Status(code, absl::StrCat("pull image ", Av(reference), ": ", Av(message)));
  }
  const std::string_view registry = RegistryOf(reference);
  // Docker reaches Docker Hub at another host than the name in references.
  const std::string_view host = registry == "docker.io" ? " (registry-1.docker.io)" : "";
  return absl::UnavailableError(absl::StrCat("pull image ", Av(reference), ": registry ", Av(registry), Av(host),
                                             " cannot be reached: ", Av(message)));
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
