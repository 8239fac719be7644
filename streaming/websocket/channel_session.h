#pragma once
// A WebSocket connection speaking a Kubernetes channel protocol (channel.h): each
// channel becomes an InChannel and/or OutChannel for the process or port logic.
// Messages out are sent one WebSocket frame each; messages in may be fragmented
// (Beast reassembles them). PINGs are answered by Beast.
// Back-pressure as with SPDY: a channel holds at most `channel_buffer` unread bytes
// before the session stops reading the connection, and writers wait while more than
// that is unsent on their channel.
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket/stream.hpp>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "streaming/channel.h"
#include "streaming/websocket/channel.h"
#include "streaming/websocket/next_layer.h"

namespace streaming::websocket {

using WebSocket = boost::beast::websocket::stream<ByteStreamLayer>;

struct ChannelSessionOptions {
  absl::Duration idle_timeout = absl::Hours(4);  // nothing received this long; zero disables
  std::size_t channel_buffer = 1 << 20;
};

class ChannelSession final : public std::enable_shared_from_this<ChannelSession> {
 public:
  // `ws` has completed its handshake with `protocol`.
  ChannelSession(std::unique_ptr<WebSocket> ws, Subprotocol protocol, ChannelSessionOptions options);

  // Channel `channel` read from the client; messages for channels nobody asked for
  // are dropped, as the Go server does.
  std::shared_ptr<InChannel> Input(uint8_t channel);
  std::shared_ptr<OutChannel> Output(uint8_t channel);

  // `on_closed` runs once: OK after Finish(OK), else why the session ended.
  void Start(std::function<void(const absl::Status&)> on_closed);
  // Sends what is queued, then a close frame with status 1000.
  void Finish(absl::Status why = absl::OkStatus());
  void Abort(absl::Status why);
  asio::any_io_executor executor() const { return executor_; }
  const Subprotocol& protocol() const { return protocol_; }

 private:
  class In;
  class Out;
  struct Channel {
    bool readable = false;
    std::deque<std::string> inbound;
    std::size_t inbound_bytes = 0;
    bool eof = false, throttling = false;
    std::function<void(ErrorCode, std::string)> pending_read;
    std::size_t unsent = 0;
    std::function<void(ErrorCode)> pending_ready;
  };
  struct Outgoing {
    std::string message;
    uint8_t channel = 0;
    std::size_t payload = 0;
  };

  Channel& At(uint8_t channel);
  void Read(uint8_t channel, std::function<void(ErrorCode, std::string)> handler);
  void Write(uint8_t channel, std::string data, std::function<void(ErrorCode)> ready);
  void Deliver(uint8_t channel);
  void ReadMore();
  void OnMessage();
  void Flush();
  void OnWritten(ErrorCode ec);
  void MaybeClose();
  void End(absl::Status why);

  std::unique_ptr<WebSocket> ws_;
  const Subprotocol protocol_;
  const ChannelSessionOptions options_;
  const asio::any_io_executor executor_;
  std::function<void(const absl::Status&)> on_closed_;
  std::vector<Channel> channels_{256};
  boost::beast::flat_buffer read_buffer_;
  bool reading_ = false;
  int throttled_ = 0;
  std::deque<Outgoing> out_;
  bool writing_ = false;
  bool finishing_ = false, closing_ = false, ended_ = false;
  absl::Status finish_status_;
};

}  // namespace streaming::websocket
