#include "dockerclient/body_stream.h"

#include <utility>

#include <boost/asio/post.hpp>

#include "absl/strings/str_cat.h"
#include "dockerclient/errors.h"

namespace dockerclient {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using ErrorCode = boost::system::error_code;

namespace {

constexpr std::size_t kChunkSize = 64 << 10;
constexpr std::size_t kMaxErrorBody = 64 << 10;

}  // namespace

BodyStream::BodyStream(asio::any_io_executor executor, std::string socket_path, std::string target, std::string what,
                       OnData on_data, OnEnd on_end)
    : socket_path_(std::move(socket_path)),
      what_(std::move(what)),
      on_data_(std::move(on_data)),
      on_end_(std::move(on_end)),
      socket_(std::move(executor)),
      request_(http::verb::get, target, 11),
      chunk_(kChunkSize) {
  request_.set(http::field::host, "docker");
  request_.set(http::field::user_agent, "dockershim");
  parser_.body_limit(boost::none);  // a followed stream has no end
}

void BodyStream::Start() {
  socket_.async_connect(asio::local::stream_protocol::endpoint(socket_path_),
                        [self = shared_from_this()](ErrorCode ec) { self->OnConnected(ec); });
}

void BodyStream::OnConnected(ErrorCode ec) {
  if (ended_) return;
  if (ec) return End(ConnectError(absl::StrCat("unix://", socket_path_), ec.message()));
  http::async_write(socket_, request_, [self = shared_from_this()](ErrorCode ec, std::size_t) {
    if (self->ended_) return;
    if (ec) return self->End(absl::UnavailableError(absl::StrCat("send request to ", self->what_, ": ", ec.message())));
    http::async_read_header(self->socket_, self->buffer_, self->parser_,
                            [self](ErrorCode ec, std::size_t) { self->OnHeader(ec); });
  });
}

void BodyStream::OnHeader(ErrorCode ec) {
  if (ended_) return;
  if (ec) return End(absl::UnavailableError(absl::StrCat("read response to ", what_, ": ", ec.message())));
  if (parser_.get().result_int() != 200) return ReadErrorBody();
  if (on_open_) on_open_();
  ReadBody();
}

void BodyStream::ReadBody() {
  if (parser_.is_done()) return End(absl::OkStatus());
  parser_.get().body().data = chunk_.data();
  parser_.get().body().size = chunk_.size();
  http::async_read_some(socket_, buffer_, parser_, [self = shared_from_this()](ErrorCode ec, std::size_t) {
    if (self->ended_) return;
    if (ec == http::error::need_buffer) ec = {};
    if (ec) {
      // dockerd ends a followed stream by ending the chunked body; a dropped
      // connection is dockerd going away.
      if (ec == http::error::end_of_stream && self->parser_.is_done()) return self->End(absl::OkStatus());
      return self->End(absl::UnavailableError(absl::StrCat("read stream of ", self->what_, ": ", ec.message())));
    }
    if (absl::Status parsed = self->ParseBuffered(); !parsed.ok()) return self->End(std::move(parsed));
    const std::size_t n = self->chunk_.size() - self->parser_.get().body().size;
    if (n > 0) self->on_data_(std::string_view(self->chunk_.data(), n));
    self->ReadBody();
  });
}

// dockerd sends each log message (or event) as a chunk of its own, and a read returns
// after one chunk: the chunks already read are parsed too, without waiting for more
// bytes, so a fast writer is handed on in pieces of up to kChunkSize.
absl::Status BodyStream::ParseBuffered() {
  while (!parser_.is_done() && parser_.get().body().size > 0 && buffer_.size() > 0) {
    ErrorCode ec;
    const std::size_t used = parser_.put(buffer_.data(), ec);
    buffer_.consume(used);
    if (ec == http::error::need_more || ec == http::error::need_buffer || (!ec && used == 0)) break;
    if (ec) return absl::UnavailableError(absl::StrCat("read stream of ", what_, ": ", ec.message()));
  }
  return absl::OkStatus();
}

void BodyStream::ReadErrorBody() {
  if (parser_.is_done() || error_body_.size() >= kMaxErrorBody) {
    return End(HttpError(static_cast<int>(parser_.get().result_int()), error_body_, what_));
  }
  parser_.get().body().data = chunk_.data();
  parser_.get().body().size = chunk_.size();
  http::async_read_some(socket_, buffer_, parser_, [self = shared_from_this()](ErrorCode ec, std::size_t) {
    if (self->ended_) return;
    if (ec == http::error::need_buffer) ec = {};
    self->error_body_.append(self->chunk_.data(), self->chunk_.size() - self->parser_.get().body().size);
    if (ec) {
      return self->End(HttpError(static_cast<int>(self->parser_.get().result_int()), self->error_body_, self->what_));
    }
    self->ReadErrorBody();
  });
}

void BodyStream::Cancel() {
  asio::post(socket_.get_executor(),
             [self = shared_from_this()] { self->End(absl::CancelledError(absl::StrCat(self->what_, ": stopped"))); });
}

void BodyStream::End(absl::Status status) {
  if (ended_) return;
  ended_ = true;
  ErrorCode ignored;
  socket_.close(ignored);
  if (auto on_end = std::move(on_end_)) on_end(std::move(status));
}

}  // namespace dockerclient
