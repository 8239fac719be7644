#pragma once
// What the Docker client, the CNI runner, the streaming server and the log copier
// call to be measured (and traced at --log-level=trace). Each hook costs a few
// atomic updates; tracing work happens only inside a traced CRI call.
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace observability {

// The request path as a metric label: no API version prefix, no query, IDs and image
// names replaced: "/v1.41/containers/3f2a/json?size=1" -> "/containers/{id}/json",
// "/images/127.0.0.1:5000/busybox:latest/json" -> "/images/{name}/json".
std::string DockerEndpoint(std::string_view target);

// One Docker Engine request, from before it is sent to its answer.
class DockerCall {
 public:
  using Headers = std::span<const std::pair<std::string, std::string>>;
  DockerCall(std::string_view method, std::string_view target, std::string_view body, Headers headers);
  ~DockerCall();  // a call that ended without Done (could not connect) counts as "error"
  DockerCall(const DockerCall&) = delete;
  DockerCall& operator=(const DockerCall&) = delete;

  // Records the outcome and passes it on. `Result` is absl::StatusOr of a response
  // with `status` and `body`.
  template <typename Result>
  Result Done(Result result) {
    if (result.ok()) {
      Record(result->status, result->body, absl::OkStatus());
    } else {
      Record(0, {}, result.status());
    }
    return result;
  }

 private:
  void Record(int status, std::string_view body, const absl::Status& error);

  std::string_view method_, target_, body_;
  bool registry_auth_ = false;
  bool done_ = false;
  std::chrono::steady_clock::time_point start_;
};

// One CNI plugin run.
class CniCall {
 public:
  CniCall(std::string_view operation, std::string_view plugin, std::string_view network, std::string_view config);

  // Records the outcome (`Result`: absl::StatusOr<std::string> of the plugin's stdout)
  // and passes it on.
  template <typename Result>
  Result Done(Result result) {
    Record(result.ok() ? absl::OkStatus() : result.status(), result.ok() ? std::string_view(*result) : "");
    return result;
  }

 private:
  void Record(const absl::Status& status, std::string_view output);

  std::string_view operation_, plugin_, network_, config_;
  std::chrono::steady_clock::time_point start_;
};

// Exec, attach and port-forward sessions ("exec", "attach", "portforward").
void StreamingSessionStarted(std::string_view kind);
void StreamingSessionEnded(std::string_view kind);

// `bytes` written to a CRI log file, whose newest line Docker stamped `newest`.
void LogCopied(uint64_t bytes, absl::Time newest);

}  // namespace observability
