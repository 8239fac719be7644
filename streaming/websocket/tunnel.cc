#include "streaming/websocket/tunnel.h"

#include <utility>

#include <boost/asio/error.hpp>

namespace streaming::websocket {

namespace {

constexpr std::size_t kMaxMessage = 32 << 20;

class TunnelStream final : public ByteStream {
 public:
  explicit TunnelStream(std::unique_ptr<WebSocket> ws) : ws_(std::move(ws)) {
    ws_->read_message_max(kMaxMessage);
    ws_->auto_fragment(false);
    ws_->binary(true);
  }

  asio::any_io_executor executor() override { return ws_->get_executor(); }

  void AsyncReadSome(asio::mutable_buffer buffer, IoHandler handler) override {
    ws_->async_read_some(buffer, [this, buffer, handler = std::move(handler)](ErrorCode ec, std::size_t n) mutable {
      if (!ec && ws_->got_text()) ec = asio::error::invalid_argument;
      // A message boundary (or an empty message) reads nothing: go on to the next.
      if (!ec && n == 0) return AsyncReadSome(buffer, std::move(handler));
      handler(ec, n);
    });
  }

  void AsyncWrite(std::vector<asio::const_buffer> buffers, IoHandler handler) override {
    auto held = std::make_shared<std::vector<asio::const_buffer>>(std::move(buffers));
    ws_->async_write(*held, [held, handler = std::move(handler)](ErrorCode ec, std::size_t n) { handler(ec, n); });
  }

  // The close frame ends the sending side; the client's answer ends reading.
  void AsyncShutdownSend(std::function<void(ErrorCode)> handler) override {
    ws_->async_close(boost::beast::websocket::close_code::normal, std::move(handler));
  }

  void Close() override { ws_->next_layer().stream().Close(); }

 private:
  std::unique_ptr<WebSocket> ws_;
};

}  // namespace

std::unique_ptr<ByteStream> MakeTunnelStream(std::unique_ptr<WebSocket> ws) {
  return std::make_unique<TunnelStream>(std::move(ws));
}

}  // namespace streaming::websocket
