#include "streaming/portforward/forward.h"

#include <utility>

#include <boost/asio/error.hpp>
#include <boost/asio/write.hpp>

#include "absl/strings/str_cat.h"

namespace streaming::portforward {

namespace {

constexpr std::size_t kChunk = 128 << 10;

}  // namespace

Forward::Forward(asio::ip::tcp::socket target, Ends ends, std::function<void(absl::Status)> on_done)
    : target_(std::move(target)), ends_(std::move(ends)), on_done_(std::move(on_done)), buffer_(kChunk) {}

void Forward::Start() {
  ReadClient();
  ReadTarget();
}

void Forward::ReadClient() {
  ends_.from_client->AsyncRead([self = shared_from_this()](ErrorCode ec, std::string data) {
    if (self->over_) return;
    if (ec == asio::error::eof) {
      ErrorCode ignored;
      self->target_.shutdown(asio::socket_base::shutdown_send, ignored);
      return;
    }
    if (ec) return self->Done(absl::OkStatus());  // the client reset the stream or left
    auto held = std::make_shared<std::string>(std::move(data));
    asio::async_write(self->target_, asio::buffer(*held), [self, held](ErrorCode ec, std::size_t) {
      if (self->over_) return;
      if (ec) return self->Done(absl::UnavailableError(absl::StrCat("write to the port: ", ec.message())));
      self->ReadClient();
    });
  });
}

void Forward::ReadTarget() {
  target_.async_read_some(asio::buffer(buffer_), [self = shared_from_this()](ErrorCode ec, std::size_t n) {
    if (self->over_) return;
    if (ec == asio::error::eof) {
      self->ends_.to_client->CloseWrite();
      return self->Done(absl::OkStatus());
    }
    if (ec) return self->Done(absl::UnavailableError(absl::StrCat("read from the port: ", ec.message())));
    self->ends_.to_client->AsyncWrite(std::string(self->buffer_.data(), n), [self](ErrorCode ec) {
      if (self->over_) return;
      if (ec) return self->Done(absl::OkStatus());  // the client is gone
      self->ReadTarget();
    });
  });
}

void Forward::Done(absl::Status status) {
  if (over_) return;
  over_ = true;
  ErrorCode ignored;
  target_.close(ignored);
  ends_ = {};
  if (auto done = std::move(on_done_)) done(std::move(status));
}

void Forward::Cancel() {
  on_done_ = nullptr;
  Done(absl::OkStatus());
}

}  // namespace streaming::portforward
