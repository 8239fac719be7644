#pragma once
// Docker's container events, followed (a BodyStream):
//   GET /v<api>/events?filters={"type":["container"],"label":[...]}[&since=...]
// The body is one JSON object per line, without end. Lines that do not parse are
// skipped (a newer engine's odd event must not stop the stream).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "dockerclient/body_stream.h"
#include "dockerclient/types.h"

namespace dockerclient {

struct DockerEvent {
  std::string type;    // "container"
  std::string action;  // "create", "start", "die", "destroy", "exec_create: sh -c ...", ...
  std::string id;      // Actor.ID
  Labels attributes;   // Actor.Attributes: the container's labels, "name", "image", "exitCode"
  int64_t time_nano = 0;
};

// One line of the events body. INVALID_ARGUMENT when it is not an event object.
absl::StatusOr<DockerEvent> ParseEventLine(std::string_view line);

struct EventStreamOptions {
  std::string socket_path;          // dockerd's unix socket
  std::string api_version;          // negotiated, "1.41"
  std::vector<std::string> labels;  // only containers with these labels ("key" or "key=value")
  std::string since;                // "<seconds>.<nanoseconds>"; empty: from now on
};

class EventStream final {
 public:
  using OnEvent = std::function<void(DockerEvent)>;
  // Docker never ends the stream itself: UNAVAILABLE when dockerd went away,
  // CANCELLED after Cancel, Docker's mapped error when it refused the request.
  using OnEnd = BodyStream::OnEnd;

  EventStream(boost::asio::any_io_executor executor, const EventStreamOptions& options, OnEvent on_event,
              OnEnd on_end);
  // Called when Docker accepted the subscription, before any event is handed over.
  void OnOpen(std::function<void()> on_open) { body_->OnOpen(std::move(on_open)); }
  void Start() { body_->Start(); }
  // Closes the connection; on_end(CANCELLED) follows unless the stream already ended.
  void Cancel() { body_->Cancel(); }

 private:
  std::shared_ptr<BodyStream> body_;
};

}  // namespace dockerclient
