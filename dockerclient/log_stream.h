#pragma once
// Follows one container's output through Docker's logs API (a BodyStream):
//   GET /v<api>/containers/{id}/logs?follow=1&stdout=1&stderr=1&timestamps=1[&since=...]
// The body is Docker's multiplexed frames without a TTY (stdcopy.h; one frame per log
// message), raw bytes with one. Docker keeps the log on its side while the consumer is slow.
#include <memory>
#include <string>

#include "dockerclient/body_stream.h"

namespace dockerclient {

struct LogStreamOptions {
  std::string socket_path;   // dockerd's unix socket
  std::string api_version;   // negotiated, "1.41"
  std::string container_id;
  std::string since;         // "<seconds>.<nanoseconds>", empty for the beginning
  bool follow = true;        // false: what is logged so far, then the end
};

class LogStream final {
 public:
  using OnData = BodyStream::OnData;
  // OK when Docker ended the stream (the container stopped; without follow, once all
  // was sent); else why it broke (NOT_FOUND for a removed container, UNAVAILABLE when
  // dockerd is gone, CANCELLED after Cancel).
  using OnEnd = BodyStream::OnEnd;

  LogStream(boost::asio::any_io_executor executor, const LogStreamOptions& options, OnData on_data, OnEnd on_end);
  void Start() { body_->Start(); }
  // Closes the connection; on_end(CANCELLED) follows unless the stream already ended.
  void Cancel() { body_->Cancel(); }

 private:
  std::shared_ptr<BodyStream> body_;
};

}  // namespace dockerclient
