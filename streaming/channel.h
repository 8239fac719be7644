#pragma once
// One client-side channel of a session (stdin, stdout, a port-forward data stream,
// ...), whatever the transport: a SPDY stream or a WebSocket channel. The process
// and port logic is written once against these. Calls and completions run on the
// session's strand.
#include <functional>
#include <string>

#include <boost/system/error_code.hpp>

namespace streaming {

using ErrorCode = boost::system::error_code;

// Bytes from the client.
class InChannel {
 public:
  virtual ~InChannel() = default;
  // The next piece the client sent. At the end: asio::error::eof after the client
  // half-closed the channel, connection_reset when it reset it, operation_aborted
  // when the session ended. One read at a time.
  virtual void AsyncRead(std::function<void(ErrorCode, std::string)> handler) = 0;
};

// Bytes to the client.
class OutChannel {
 public:
  virtual ~OutChannel() = default;
  // Queues `data`; `ready` runs once the channel's unsent bytes are below its bound
  // (soon, when they already are): the producer's cue to read more from its source,
  // which is what bounds memory against a slow client. An error means the channel
  // or session is gone.
  virtual void AsyncWrite(std::string data, std::function<void(ErrorCode)> ready) = 0;
  // Ends the channel after what is queued (SPDY: FIN; WebSocket v5: nothing, the
  // session's close ends every channel).
  virtual void CloseWrite() = 0;
};

}  // namespace streaming
