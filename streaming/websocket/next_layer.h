#pragma once
// Lets Beast's websocket::stream run on any ByteStream (TCP, TLS, a socket pair in
// tests), so one WebSocket implementation serves them all.
#include <cstddef>
#include <memory>
#include <vector>

#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/role.hpp>

#include "streaming/byte_stream.h"

namespace streaming::websocket {

class ByteStreamLayer {
 public:
  using executor_type = asio::any_io_executor;

  explicit ByteStreamLayer(std::unique_ptr<ByteStream> stream) : stream_(std::move(stream)) {}

  executor_type get_executor() const noexcept { return stream_->executor(); }
  ByteStream& stream() { return *stream_; }

  // Beast's timeouts close the connection through this hook.
  friend void beast_close_socket(ByteStreamLayer& layer) { layer.stream().Close(); }

  template <typename MutableBuffers, typename Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return asio::async_initiate<Token, void(ErrorCode, std::size_t)>(
        [this](auto handler, const MutableBuffers& buffers) {
          auto held = std::make_shared<decltype(handler)>(std::move(handler));
          for (auto it = asio::buffer_sequence_begin(buffers); it != asio::buffer_sequence_end(buffers); ++it) {
            const asio::mutable_buffer b = *it;
            if (b.size() == 0) continue;
            stream_->AsyncReadSome(b, [held](ErrorCode ec, std::size_t n) { (*held)(ec, n); });
            return;
          }
          asio::post(stream_->executor(), [held] { (*held)(ErrorCode(), 0); });
        },
        token, buffers);
  }

  template <typename ConstBuffers, typename Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return asio::async_initiate<Token, void(ErrorCode, std::size_t)>(
        [this](auto handler, const ConstBuffers& buffers) {
          auto held = std::make_shared<decltype(handler)>(std::move(handler));
          std::vector<asio::const_buffer> list;
          for (auto it = asio::buffer_sequence_begin(buffers); it != asio::buffer_sequence_end(buffers); ++it) {
            list.emplace_back(*it);
          }
          stream_->AsyncWrite(std::move(list), [held](ErrorCode ec, std::size_t n) { (*held)(ec, n); });
        },
        token, buffers);
  }

 private:
  std::unique_ptr<ByteStream> stream_;
};

// Beast's teardown hooks, found by argument-dependent lookup: after the closing
// handshake the sending side is shut and the connection released.
inline void teardown(boost::beast::role_type, ByteStreamLayer& layer, ErrorCode& ec) {
  ec = {};
  layer.stream().Close();
}

template <typename Handler>
void async_teardown(boost::beast::role_type, ByteStreamLayer& layer, Handler&& handler) {
  auto held = std::make_shared<std::decay_t<Handler>>(std::forward<Handler>(handler));
  layer.stream().AsyncShutdownSend([&layer, held](ErrorCode) {
    layer.stream().Close();
    (*held)(ErrorCode());
  });
}

}  // namespace streaming::websocket
