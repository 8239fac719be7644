#pragma once
// The bytes of one client connection, whatever carries them: TCP, TLS, SPDY frames
// tunnelled inside WebSocket messages, or a socket pair in tests. Sessions are
// written once against this interface. Calls and completions run on the executor
// the stream was made with (the connection's strand).
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/ssl/stream.hpp>

#include "streaming/channel.h"

namespace streaming {

namespace asio = boost::asio;
using IoHandler = std::function<void(ErrorCode, std::size_t)>;

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  virtual asio::any_io_executor executor() = 0;
  // Reads at least one byte into `buffer`; asio::error::eof at the end.
  virtual void AsyncReadSome(asio::mutable_buffer buffer, IoHandler handler) = 0;
  // Writes all of `buffers`; the memory they point to must live until `handler` runs.
  virtual void AsyncWrite(std::vector<asio::const_buffer> buffers, IoHandler handler) = 0;
  // Ends the sending direction after what was written (TCP FIN; TLS close_notify;
  // a WebSocket close frame); reading may go on.
  virtual void AsyncShutdownSend(std::function<void(ErrorCode)> handler) = 0;
  // Cancels pending operations and releases the connection. Idempotent.
  virtual void Close() = 0;
};

// `prefix` holds bytes already read past an HTTP request; reads return them first.
std::unique_ptr<ByteStream> MakeTcpStream(asio::ip::tcp::socket socket, std::string prefix);
std::unique_ptr<ByteStream> MakeTlsStream(std::unique_ptr<asio::ssl::stream<asio::ip::tcp::socket>> stream,
                                          std::string prefix);
std::unique_ptr<ByteStream> MakeUnixStream(asio::local::stream_protocol::socket socket, std::string prefix);

}  // namespace streaming
