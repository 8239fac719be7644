#include "streaming/byte_stream.h"

#include <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

namespace streaming {

namespace {

using Tls = asio::ssl::stream<asio::ip::tcp::socket>;

// A socket, or a TLS stream held by pointer; Lowest() is the socket under either.
template <typename Socket>
Socket& Lowest(Socket& socket) {
  return socket;
}
asio::ip::tcp::socket& Lowest(std::unique_ptr<Tls>& tls) { return tls->next_layer(); }
template <typename Socket>
Socket& Stream(Socket& socket) {
  return socket;
}
Tls& Stream(std::unique_ptr<Tls>& tls) { return *tls; }

template <typename Held>
class BasicByteStream final : public ByteStream {
 public:
  BasicByteStream(Held held, std::string prefix) : held_(std::move(held)), prefix_(std::move(prefix)) {}

  asio::any_io_executor executor() override { return Lowest(held_).get_executor(); }

  void AsyncReadSome(asio::mutable_buffer buffer, IoHandler handler) override {
    if (!prefix_.empty()) {
      const std::size_t n = asio::buffer_copy(buffer, asio::buffer(prefix_));
      prefix_.erase(0, n);
      // Never complete inside the call: callers may start the next read from the handler.
      asio::post(executor(), [handler = std::move(handler), n] { handler({}, n); });
      return;
    }
    Stream(held_).async_read_some(buffer, std::move(handler));
  }

  void AsyncWrite(std::vector<asio::const_buffer> buffers, IoHandler handler) override {
    auto held_buffers = std::make_shared<std::vector<asio::const_buffer>>(std::move(buffers));
    asio::async_write(Stream(held_), *held_buffers,
                      [held_buffers, handler = std::move(handler)](ErrorCode ec, std::size_t n) { handler(ec, n); });
  }

  // TLS too ends with a TCP FIN and no close_notify: a concurrent read and the TLS
  // shutdown cannot share the stream, and Go's TLS reads a FIN at a record boundary
  // as a clean EOF.
  void AsyncShutdownSend(std::function<void(ErrorCode)> handler) override {
    ErrorCode ec;
    Lowest(held_).shutdown(asio::socket_base::shutdown_send, ec);
    asio::post(executor(), [handler = std::move(handler), ec] { handler(ec); });
  }

  void Close() override {
    ErrorCode ignored;
    Lowest(held_).close(ignored);
  }

 private:
  Held held_;
  std::string prefix_;
};

}  // namespace

std::unique_ptr<ByteStream> MakeTcpStream(asio::ip::tcp::socket socket, std::string prefix) {
  return std::make_unique<BasicByteStream<asio::ip::tcp::socket>>(std::move(socket), std::move(prefix));
}

std::unique_ptr<ByteStream> MakeTlsStream(std::unique_ptr<Tls> stream, std::string prefix) {
  return std::make_unique<BasicByteStream<std::unique_ptr<Tls>>>(std::move(stream), std::move(prefix));
}

std::unique_ptr<ByteStream> MakeUnixStream(asio::local::stream_protocol::socket socket, std::string prefix) {
  return std::make_unique<BasicByteStream<asio::local::stream_protocol::socket>>(std::move(socket),
                                                                                std::move(prefix));
}

}  // namespace streaming
