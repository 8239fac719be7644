#pragma once
// Follows one container's output through Docker's logs API, asynchronously on the
// caller's executor, one connection per container and no thread of its own:
//   GET /v<api>/containers/{id}/logs?follow=1&stdout=1&stderr=1&timestamps=1[&since=...]
// The (chunked) body is handed over piece by piece: Docker's multiplexed frames
// without a TTY (stdcopy.h; one frame per log message), raw bytes with one. The next
// piece is read only after `on_data` returns, so a slow consumer slows the reading
// and nothing piles up in memory: Docker keeps the log on its side meanwhile.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "absl/status/status.h"

namespace dockerclient {

struct LogStreamOptions {
  std::string socket_path;   // dockerd's unix socket
  std::string api_version;   // negotiated, "1.41"
  std::string container_id;
  std::string since;         // "<seconds>.<nanoseconds>", empty for the beginning
  bool follow = true;        // false: what is logged so far, then the end
};

class LogStream final : public std::enable_shared_from_this<LogStream> {
 public:
  using OnData = std::function<void(std::string_view)>;
  // OK when Docker ended the stream (the container stopped; without follow, once all
  // was sent); else why it broke (NOT_FOUND for a removed container, UNAVAILABLE when
  // dockerd is gone, CANCELLED after Cancel).
  using OnEnd = std::function<void(absl::Status)>;

  LogStream(boost::asio::any_io_executor executor, LogStreamOptions options, OnData on_data, OnEnd on_end);
  void Start();
  // Closes the connection; on_end(CANCELLED) follows unless the stream already ended.
  void Cancel();

 private:
  void OnConnected(boost::system::error_code ec);
  void OnHeader(boost::system::error_code ec);
  void ReadBody();
  absl::Status ParseBuffered();
  void ReadErrorBody();
  void End(absl::Status status);

  const LogStreamOptions options_;
  OnData on_data_;
  OnEnd on_end_;
  boost::asio::local::stream_protocol::socket socket_;
  boost::beast::flat_buffer buffer_;
  boost::beast::http::request<boost::beast::http::empty_body> request_;
  boost::beast::http::response_parser<boost::beast::http::buffer_body> parser_;
  std::vector<char> chunk_;
  std::string error_body_;
  bool ended_ = false;
};

}  // namespace dockerclient
