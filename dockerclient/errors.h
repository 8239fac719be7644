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

// `operation` reads like "inspect image busybox:latest".
absl::Status HttpError(int http_status, std::string_view body, std::string_view operation,
                       ConflictMeans conflict = ConflictMeans::kFailedPrecondition);

// The daemon cannot be reached (refused, socket missing, reset): UNAVAILABLE naming the endpoint.
absl::Status ConnectError(std::string_view endpoint, std::string_view reason);
absl::Status DeadlineError(std::string_view operation);
absl::Status CancelledError(std::string_view operation);

}  // namespace dockerclient
