#pragma once
// One followed GET on dockerd's unix socket, asynchronously on the caller's executor
// and with no thread of its own: the (chunked, endless) body is handed over piece by
// piece. The next piece is read only after `on_data` returns, so a slow consumer slows
// the reading and nothing piles up in memory. The logs (log_stream.h) and events
// (event_stream.h) streams are built on it.
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

class BodyStream final : public std::enable_shared_from_this<BodyStream> {
 public:
  using OnData = std::function<void(std::string_view)>;
  // OK when Docker ended the body; else why it broke (Docker's HTTP errors mapped by
  // HttpError, UNAVAILABLE when dockerd is gone, CANCELLED after Cancel).
  using OnEnd = std::function<void(absl::Status)>;

  // `target` is the request target ("/v1.41/events?..."); `what` names the stream in
  // errors ("follow the log of container <id>").
  BodyStream(boost::asio::any_io_executor executor, std::string socket_path, std::string target, std::string what,
             OnData on_data, OnEnd on_end);
  // Called once Docker answered 200, before any of the body is read (a followed
  // stream is then registered: what happens from now on will come). Set before Start.
  void OnOpen(std::function<void()> on_open) { on_open_ = std::move(on_open); }
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

  const std::string socket_path_;
  const std::string what_;
  OnData on_data_;
  OnEnd on_end_;
  std::function<void()> on_open_;
  boost::asio::local::stream_protocol::socket socket_;
  boost::beast::flat_buffer buffer_;
  boost::beast::http::request<boost::beast::http::empty_body> request_;
  boost::beast::http::response_parser<boost::beast::http::buffer_body> parser_;
  std::vector<char> chunk_;
  std::string error_body_;
  bool ended_ = false;
};

}  // namespace dockerclient
