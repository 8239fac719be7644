#include "streaming/websocket/channel_session.h"

#include <utility>

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/websocket/error.hpp>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace streaming::websocket {

namespace beast = boost::beast;

namespace {

// x/net's limit for one message.
constexpr std::size_t kMaxMessage = 32 << 20;
constexpr absl::Duration kCloseTimeout = absl::Seconds(5);

}  // namespace

class ChannelSession::In final : public InChannel {
 public:
  In(std::shared_ptr<ChannelSession> session, uint8_t channel) : session_(std::move(session)), channel_(channel) {}
  void AsyncRead(std::function<void(ErrorCode, std::string)> handler) override {
    session_->Read(channel_, std::move(handler));
  }

 private:
  std::shared_ptr<ChannelSession> session_;
  const uint8_t channel_;
};

class ChannelSession::Out final : public OutChannel {
 public:
  Out(std::shared_ptr<ChannelSession> session, uint8_t channel) : session_(std::move(session)), channel_(channel) {}
  void AsyncWrite(std::string data, std::function<void(ErrorCode)> ready) override {
    session_->Write(channel_, std::move(data), std::move(ready));
  }
  // The channel protocols have no way to end one channel from the server side.
  void CloseWrite() override {}

 private:
  std::shared_ptr<ChannelSession> session_;
  const uint8_t channel_;
};

ChannelSession::ChannelSession(std::unique_ptr<WebSocket> ws, Subprotocol protocol, ChannelSessionOptions options)
    : ws_(std::move(ws)), protocol_(std::move(protocol)), options_(options), executor_(ws_->get_executor()) {
  beast::websocket::stream_base::timeout timeout;
  timeout.handshake_timeout = absl::ToChronoSeconds(kCloseTimeout);
  timeout.idle_timeout = options_.idle_timeout > absl::ZeroDuration()
                             ? std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                   absl::ToChronoNanoseconds(options_.idle_timeout))
                             : beast::websocket::stream_base::none();
  // Beast restarts its idle timer only on what it reads, so a client that only listens
  // (a v4 exec with no stdin) would be cut off; a ping at half the timeout makes any
  // live client answer, as client-go's SPDY pings keep those sessions alive.
  timeout.keep_alive_pings = true;
  ws_->set_option(timeout);
  ws_->read_message_max(kMaxMessage);
  ws_->auto_fragment(false);
}

std::shared_ptr<InChannel> ChannelSession::Input(uint8_t channel) {
  channels_[channel].readable = true;
  return std::make_shared<In>(shared_from_this(), channel);
}

std::shared_ptr<OutChannel> ChannelSession::Output(uint8_t channel) {
  return std::make_shared<Out>(shared_from_this(), channel);
}

ChannelSession::Channel& ChannelSession::At(uint8_t channel) { return channels_[channel]; }

void ChannelSession::Start(std::function<void(const absl::Status&)> on_closed) {
  on_closed_ = std::move(on_closed);
  ReadMore();
}

void ChannelSession::Read(uint8_t channel, std::function<void(ErrorCode, std::string)> handler) {
  At(channel).pending_read = std::move(handler);
  Deliver(channel);
}

void ChannelSession::Deliver(uint8_t index) {
  Channel& c = At(index);
  if (!c.pending_read) return;
  ErrorCode ec;
  std::string data;
  if (!c.inbound.empty()) {
    data = std::move(c.inbound.front());
    c.inbound.pop_front();
    c.inbound_bytes -= data.size();
    if (c.throttling && c.inbound_bytes < options_.channel_buffer) {
      c.throttling = false;
      if (--throttled_ == 0) ReadMore();
    }
  } else if (c.eof) {
    ec = asio::error::eof;
  } else if (ended_) {
    ec = asio::error::operation_aborted;
  } else {
    return;
  }
  asio::post(executor_, [handler = std::exchange(c.pending_read, nullptr), ec, data = std::move(data)]() mutable {
    handler(ec, std::move(data));
  });
}

void ChannelSession::Write(uint8_t channel, std::string data, std::function<void(ErrorCode)> ready) {
  if (ended_ || finishing_) {
    asio::post(executor_, [ready = std::move(ready)] { ready(asio::error::operation_aborted); });
    return;
  }
  Channel& c = At(channel);
  c.unsent += data.size();
  out_.push_back(Outgoing{EncodeMessage(protocol_.encoding, channel, data), channel, data.size()});
  if (c.unsent < options_.channel_buffer) {
    asio::post(executor_, [ready = std::move(ready)] { ready({}); });
  } else {
    c.pending_ready = std::move(ready);
  }
  Flush();
}

void ChannelSession::ReadMore() {
  if (reading_ || ended_ || throttled_ > 0) return;
  reading_ = true;
  ws_->async_read(read_buffer_, [self = shared_from_this()](ErrorCode ec, std::size_t) {
    self->reading_ = false;
    if (self->ended_) return;
    if (ec) {
      if (self->finishing_) return self->End(self->finish_status_);
      if (ec == beast::websocket::error::closed || ec == asio::error::eof) {
        return self->End(absl::UnavailableError("the client closed the connection"));
      }
      return self->End(absl::UnavailableError(absl::StrCat("connection lost: ", ec.message())));
    }
    self->OnMessage();
    self->ReadMore();
  });
}

void ChannelSession::OnMessage() {
  const std::string data = beast::buffers_to_string(read_buffer_.data());
  read_buffer_.consume(read_buffer_.size());
  absl::StatusOr<std::optional<Message>> decoded = DecodeMessage(protocol_.encoding, data);
  if (!decoded.ok()) {
    LOG_DEBUG << "WebSocket session: dropping a message: " << decoded.status().message();
    return;
  }
  if (!decoded->has_value()) return;  // an empty message carries nothing
  Message& message = **decoded;
  if (message.channel == kCloseSignal && protocol_.version >= 5) {
    absl::StatusOr<uint8_t> closed = CloseSignalChannel(message);
    if (!closed.ok()) return Abort(absl::InvalidArgumentError(closed.status().message()));
    At(*closed).eof = true;
    return Deliver(*closed);
  }
  Channel& c = At(message.channel);
  if (!c.readable || c.eof) return;
  c.inbound_bytes += message.payload.size();
  c.inbound.push_back(std::move(message.payload));
  if (!c.throttling && c.inbound_bytes >= options_.channel_buffer) {
    c.throttling = true;
    ++throttled_;
  }
  Deliver(message.channel);
}

void ChannelSession::Flush() {
  if (writing_ || ended_ || out_.empty()) return;
  writing_ = true;
  ws_->text(protocol_.encoding == Encoding::kBase64);
  ws_->async_write(asio::buffer(out_.front().message),
                   [self = shared_from_this()](ErrorCode ec, std::size_t) { self->OnWritten(ec); });
}

void ChannelSession::OnWritten(ErrorCode ec) {
  writing_ = false;
  if (ended_) return;
  if (ec) return End(absl::UnavailableError(absl::StrCat("cannot write to the client: ", ec.message())));
  Outgoing done = std::move(out_.front());
  out_.pop_front();
  Channel& c = At(done.channel);
  c.unsent -= std::min(c.unsent, done.payload);
  if (c.pending_ready && c.unsent < options_.channel_buffer) {
    asio::post(executor_, [ready = std::exchange(c.pending_ready, nullptr)] { ready({}); });
  }
  Flush();
  MaybeClose();
}

void ChannelSession::Finish(absl::Status why) {
  if (finishing_ || ended_) return;
  finishing_ = true;
  finish_status_ = std::move(why);
  MaybeClose();
}

void ChannelSession::MaybeClose() {
  if (!finishing_ || closing_ || writing_ || !out_.empty() || ended_) return;
  closing_ = true;
  ws_->async_close(beast::websocket::close_code::normal, [self = shared_from_this()](ErrorCode) {
    // The pending read sees the client's close frame (or the timeout) and ends the session.
    if (!self->reading_) self->End(self->finish_status_);
  });
}

void ChannelSession::Abort(absl::Status why) { End(std::move(why)); }

void ChannelSession::End(absl::Status why) {
  if (ended_) return;
  ended_ = true;
  ws_->next_layer().stream().Close();
  out_.clear();
  for (int i = 0; i < static_cast<int>(channels_.size()); ++i) {
    Channel& c = channels_[i];
    Deliver(static_cast<uint8_t>(i));
    if (c.pending_ready) {
      asio::post(executor_, [ready = std::exchange(c.pending_ready, nullptr)] { ready(asio::error::operation_aborted); });
    }
  }
  if (auto on_closed = std::move(on_closed_)) on_closed(why);
}

}  // namespace streaming::websocket
