#pragma once
// The one place that turns Docker Engine answers and socket failures into
// absl::Status codes. Messages name what failed so a node operator can act.
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace dockerclient {

// How a 409 Conflict reads for an operation: creating something whose name is
// taken, or acting on something in the wrong state (e.g. removing an image in use).
enum class ConflictMeans { kAlreadyExists, kFailedPrecondition };

// Extracts Docker's {"message": "..."} or returns the trimmed body.
std::string DockerErrorMessage(std::string_view body);

absl::StatusCode CodeForHttpStatus(int http_status, ConflictMeans conflict);

// The code for an error answer, from its HTTP status and, where the status misleads,
// Docker's message: Docker 20.10 answers 500 "unrecognized image ID ..." for an image
// that a concurrent delete removed first, where 26.1 and later answer 404.
absl::StatusCode CodeForDockerError(int http_status, std::string_view message, ConflictMeans conflict);

// Docker refusing a container's removal because another removal of it is under way (409,
// "removal of container <id> is already in progress", 20.10 to 29).
bool IsRemovalInProgress(const absl::Status& status);

// `operation` reads like "inspect image busybox:latest".
absl::Status HttpError(int http_status, std::string_view body, std::string_view operation,
                       ConflictMeans conflict = ConflictMeans::kFailedPrecondition);

// The code for a failed pull, from Docker's message and HTTP status (0 when the error
// came as a line in a 200 progress stream).
absl::StatusCode PullErrorCode(std::string_view message, int http_status);

// A failed pull of `reference` (normalized, "docker.io/library/busybox:latest") as Docker
// reported it. A registry that cannot be reached (DNS, refused, timeout, TLS) is
// UNAVAILABLE and named in the message.
absl::Status PullError(std::string_view reference, std::string_view message, int http_status);

// The daemon cannot be reached (refused, socket missing, reset): UNAVAILABLE naming the endpoint.
absl::Status ConnectError(std::string_view endpoint, std::string_view reason);
absl::Status DeadlineError(std::string_view operation);
absl::Status CancelledError(std::string_view operation);

}  // namespace dockerclient
