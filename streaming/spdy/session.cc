#include "streaming/spdy/session.h"

#include <algorithm>
#include <utility>

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace streaming::spdy {

namespace {

constexpr std::size_t kReadBufferSize = 64 << 10;
// Client data waiting for its reader is kept in pieces of up to this size.
constexpr std::size_t kCoalesceBytes = 256 << 10;
// One write gathers at most this many frames / bytes.
constexpr std::size_t kMaxFramesPerWrite = 64;
constexpr std::size_t kMaxBytesPerWrite = 4 << 20;

std::chrono::steady_clock::duration ToChrono(absl::Duration d) { return absl::ToChronoNanoseconds(d); }

}  // namespace

// ---- Stream ---------------------------------------------------------------------------

Stream::Stream(std::weak_ptr<Session> session, uint32_t id, Headers headers, std::size_t buffer_limit)
    : session_(std::move(session)), id_(id), headers_(std::move(headers)), buffer_limit_(buffer_limit) {}

void Stream::Post(std::function<void()> fn) {
  if (auto session = session_.lock()) asio::post(session->executor(), std::move(fn));
}

void Stream::Accept() {
  auto session = session_.lock();
  if (!session || replied_ || reset_ || session_ended_) return;
  replied_ = true;
  session->EnqueueControl(session->writer_.SynReply(id_, 0, {}));
  DeliverRead();
}

void Stream::Reset(RstStatus status) {
  if (reset_) return;
  auto session = session_.lock();
  const bool send = !local_fin_ && !session_ended_;
  reset_ = true;
  inbound_.clear();
  inbound_bytes_ = 0;
  if (session) {
    if (throttling_) {
      throttling_ = false;
      session->Throttle(-1);
    }
    if (send) session->EnqueueControl(FrameWriter::RstStream(id_, status));
  }
  DeliverRead();
  if (pending_ready_) {
    Post([ready = std::exchange(pending_ready_, nullptr)] { ready(asio::error::connection_reset); });
  }
  if (session) session->ForgetIfDone(*this);
}

void Stream::AsyncRead(std::function<void(ErrorCode, std::string)> handler) {
  pending_read_ = std::move(handler);
  DeliverRead();
}

// Completes the pending read if there is something to report: data first, then the end.
void Stream::DeliverRead() {
  if (!pending_read_ || (!replied_ && !reset_ && !session_ended_)) return;
  ErrorCode ec;
  std::string data;
  if (!inbound_.empty() && !reset_) {
    data = std::move(inbound_.front());
    inbound_.pop_front();
    inbound_bytes_ -= data.size();
    if (throttling_ && inbound_bytes_ < buffer_limit_) {
      throttling_ = false;
      if (auto session = session_.lock()) session->Throttle(-1);
    }
  } else if (peer_reset_ || reset_) {
    ec = asio::error::connection_reset;
  } else if (remote_fin_) {
    ec = asio::error::eof;
  } else if (session_ended_) {
    ec = asio::error::operation_aborted;
  } else {
    return;
  }
  Post([handler = std::exchange(pending_read_, nullptr), ec, data = std::move(data)]() mutable {
    handler(ec, std::move(data));
  });
}

void Stream::AsyncWrite(std::string data, std::function<void(ErrorCode)> ready) {
  auto session = session_.lock();
  if (!session || session_ended_ || reset_ || local_fin_) {
    const ErrorCode ec = reset_ ? asio::error::connection_reset : asio::error::operation_aborted;
    if (session) asio::post(session->executor(), [ready = std::move(ready), ec] { ready(ec); });
    return;
  }
  unsent_ += data.size();
  if (!data.empty()) session->EnqueueData(shared_from_this(), std::move(data), false);
  if (unsent_ < buffer_limit_) {
    Post([ready = std::move(ready)] { ready({}); });
  } else {
    pending_ready_ = std::move(ready);
  }
}

void Stream::CloseWrite() {
  auto session = session_.lock();
  if (!session || session_ended_ || reset_ || local_fin_) return;
  local_fin_ = true;
  session->EnqueueData(shared_from_this(), {}, true);
  session->ForgetIfDone(*this);
}

void Stream::OnData(std::string_view piece, bool fin) {
  if (reset_ || remote_fin_) return;
  if (!piece.empty()) {
    // Small pieces join the last one, so a reader forwards them in one write.
    if (!inbound_.empty() && inbound_.back().size() + piece.size() <= kCoalesceBytes) {
      inbound_.back().append(piece);
    } else {
      inbound_.emplace_back(piece);
    }
    inbound_bytes_ += piece.size();
    if (!throttling_ && inbound_bytes_ >= buffer_limit_) {
      throttling_ = true;
      if (auto session = session_.lock()) session->Throttle(+1);
    }
  }
  if (fin) remote_fin_ = true;
  DeliverRead();
}

void Stream::OnPeerReset() {
  peer_reset_ = true;
  remote_fin_ = true;
  local_fin_ = true;  // nothing more may be sent on it
  if (!reset_) {
    reset_ = true;
    inbound_.clear();
    inbound_bytes_ = 0;
    if (throttling_) {
      throttling_ = false;
      if (auto session = session_.lock()) session->Throttle(-1);
    }
  }
  DeliverRead();
  if (pending_ready_) {
    Post([ready = std::exchange(pending_ready_, nullptr)] { ready(asio::error::connection_reset); });
  }
}

void Stream::OnSent(std::size_t bytes) {
  unsent_ -= std::min(unsent_, bytes);
  if (pending_ready_ && unsent_ < buffer_limit_) {
    Post([ready = std::exchange(pending_ready_, nullptr)] { ready({}); });
  }
}

void Stream::OnSessionEnd() {
  session_ended_ = true;
  throttling_ = false;
  DeliverRead();
  if (pending_ready_) {
    Post([ready = std::exchange(pending_ready_, nullptr)] { ready(asio::error::operation_aborted); });
  }
}

// ---- Session --------------------------------------------------------------------------

class Session::FrameSink final : public FrameParser::Handler {
 public:
  explicit FrameSink(Session& session) : session_(session) {}
  void OnControl(ControlFrame frame) override { session_.OnControl(std::move(frame)); }
  void OnData(uint32_t stream_id, std::string_view piece, bool fin) override {
    session_.OnData(stream_id, piece, fin);
  }

 private:
  Session& session_;
};

Session::Session(std::unique_ptr<ByteStream> transport, SessionOptions options)
    : transport_(std::move(transport)),
      options_(options),
      executor_(transport_->executor()),
      read_buffer_(kReadBufferSize),
      idle_timer_(executor_),
      drain_timer_(executor_) {}

Session::~Session() = default;

void Session::Start(std::shared_ptr<Handler> handler) {
  handler_ = std::move(handler);
  Touch();
  ArmIdleTimer();
  ReadMore();
}

void Session::ReadMore() {
  if (reading_ || ended_ || (throttled_streams_ > 0 && !draining_)) return;
  reading_ = true;
  transport_->AsyncReadSome(asio::buffer(read_buffer_),
                            [self = shared_from_this()](ErrorCode ec, std::size_t n) { self->OnRead(ec, n); });
}

void Session::OnRead(ErrorCode ec, std::size_t n) {
  if (ended_) return;
  if (ec) {
    reading_ = false;
    if (draining_) return End(finish_status_);
    return End(absl::UnavailableError(
        ec == asio::error::eof ? "the client closed the connection" : absl::StrCat("connection lost: ", ec.message())));
  }
  Touch();
  // After GOAWAY nothing the client says can be answered; its bytes are only drained.
  // reading_ stays set while read_buffer_ is parsed: a frame that lifts a throttle
  // (a stream's reset) must not start the next read into the bytes still unparsed.
  if (!goaway_queued_) {
    FrameSink sink(*this);
    if (absl::Status parsed = parser_.Feed(std::string_view(read_buffer_.data(), n), sink); !parsed.ok()) {
      LOG_WARN << "SPDY session: " << parsed.message() << "; ending it";
      EnqueueControl(FrameWriter::GoAway(last_good_stream_id_, GoAwayStatus::kProtocolError));
      goaway_queued_ = true;
      Finish(absl::InvalidArgumentError(absl::StrCat("SPDY protocol error: ", parsed.message())));
    }
  }
  reading_ = false;
  ReadMore();
}

void Session::OnControl(ControlFrame frame) {
  if (auto* syn = std::get_if<SynStream>(&frame)) return OnSynStream(*syn);
  if (auto* rst = std::get_if<RstStream>(&frame)) {
    if (auto it = streams_.find(rst->stream_id); it != streams_.end()) {
      std::shared_ptr<Stream> stream = it->second;
      stream->OnPeerReset();
      ForgetIfDone(*stream);
    }
    return;
  }
  if (auto* ping = std::get_if<Ping>(&frame)) {
    // Odd ids are the client's; even ones would answer pings this server never sends.
    if (ping->id % 2 == 1) EnqueueControl(FrameWriter::Ping(ping->id));
    return;
  }
  if (auto* headers = std::get_if<HeadersFrame>(&frame)) {
    if (headers->flags & kFlagFin) OnData(headers->stream_id, {}, true);
    return;
  }
  // GOAWAY: the client opens no more streams, and the ones it has go on until it
  // closes the connection. SYN_REPLY (this side opens no streams), SETTINGS,
  // WINDOW_UPDATE and unknown types need nothing.
}

void Session::OnSynStream(SynStream& frame) {
  if (finishing_) return;  // as spdystream after GOAWAY: dropped without a reset
  if (frame.stream_id < next_stream_id_) {
    EnqueueControl(FrameWriter::RstStream(frame.stream_id, RstStatus::kProtocolError));
    return;
  }
  next_stream_id_ = frame.stream_id + 2;
  last_good_stream_id_ = frame.stream_id;
  if (streams_.size() >= options_.max_streams) {
    EnqueueControl(FrameWriter::RstStream(frame.stream_id, RstStatus::kRefusedStream));
    return;
  }
  auto stream = std::make_shared<Stream>(weak_from_this(), frame.stream_id, std::move(frame.headers),
                                         options_.stream_buffer);
  streams_.emplace(frame.stream_id, stream);
  if (frame.flags & kFlagFin) stream->OnData({}, true);
  if (handler_) handler_->OnStream(stream);
}

void Session::OnData(uint32_t stream_id, std::string_view piece, bool fin) {
  auto it = streams_.find(stream_id);
  if (it == streams_.end()) return;  // unknown or finished: ignored, as spdystream does
  std::shared_ptr<Stream> stream = it->second;
  stream->OnData(piece, fin);
  ForgetIfDone(*stream);
}

void Session::EnqueueControl(std::string frame) {
  if (ended_) return;
  out_.push_back(Outgoing{std::move(frame), {}, nullptr});
  Flush();
}

void Session::EnqueueData(std::shared_ptr<Stream> stream, std::string payload, bool fin) {
  if (ended_) return;
  const uint32_t id = stream->id();
  // Payloads above the frame limit are split; FIN rides on the last piece.
  std::size_t offset = 0;
  do {
    const std::size_t length = std::min<std::size_t>(payload.size() - offset, kMaxDataLength);
    const bool last = offset + length == payload.size();
    const auto header = FrameWriter::DataHeader(id, last && fin ? kFlagFin : 0, static_cast<uint32_t>(length));
    std::string piece = (offset == 0 && last) ? std::move(payload) : payload.substr(offset, length);
    out_.push_back(Outgoing{std::string(header.begin(), header.end()), std::move(piece), stream});
    offset += length;
  } while (offset < payload.size());
  Flush();
}

void Session::Flush() {
  if (writing_ || ended_ || out_.empty()) return;
  std::vector<asio::const_buffer> buffers;
  std::size_t frames = 0, bytes = 0;
  for (const Outgoing& o : out_) {
    if (frames == kMaxFramesPerWrite || (frames > 0 && bytes >= kMaxBytesPerWrite)) break;
    buffers.emplace_back(asio::buffer(o.head));
    if (!o.payload.empty()) buffers.emplace_back(asio::buffer(o.payload));
    bytes += o.head.size() + o.payload.size();
    ++frames;
  }
  writing_ = true;
  transport_->AsyncWrite(std::move(buffers), [self = shared_from_this(), frames](ErrorCode ec, std::size_t) {
    self->OnWritten(ec, frames);
  });
}

void Session::OnWritten(ErrorCode ec, std::size_t frames) {
  writing_ = false;
  if (ended_) return;
  if (ec) return End(absl::UnavailableError(absl::StrCat("cannot write to the client: ", ec.message())));
  Touch();
  for (std::size_t i = 0; i < frames; ++i) {
    Outgoing done = std::move(out_.front());
    out_.pop_front();
    if (done.stream) done.stream->OnSent(done.payload.size());
  }
  if (!out_.empty()) return Flush();
  if (goaway_queued_ && finishing_) return StartDrain();
  MaybeSendGoAway();
}

void Session::Finish(absl::Status why) {
  if (finishing_ || ended_) return;
  finishing_ = true;
  finish_status_ = std::move(why);
  MaybeSendGoAway();
}

// GOAWAY is queued once everything before it has been written.
void Session::MaybeSendGoAway() {
  if (!finishing_ || writing_ || !out_.empty() || ended_) return;
  if (goaway_queued_) return StartDrain();
  goaway_queued_ = true;
  EnqueueControl(FrameWriter::GoAway(last_good_stream_id_, GoAwayStatus::kOk));
}

// Half-closes and reads until the client closes: closing with its frames unread
// would make the kernel answer with a TCP RST, which can destroy output in flight.
void Session::StartDrain() {
  if (draining_ || ended_) return;
  draining_ = true;
  transport_->AsyncShutdownSend([](ErrorCode) {});
  drain_timer_.expires_after(ToChrono(options_.drain_timeout));
  drain_timer_.async_wait([self = shared_from_this()](ErrorCode ec) {
    if (!ec) self->End(self->finish_status_);
  });
  ReadMore();
}

void Session::Abort(absl::Status why) { End(std::move(why)); }

void Session::Throttle(int delta) {
  throttled_streams_ += delta;
  if (throttled_streams_ == 0) ReadMore();
}

void Session::ForgetIfDone(const Stream& stream) {
  if (!stream.Done()) return;
  auto it = streams_.find(stream.id());
  if (it != streams_.end() && it->second.get() == &stream) streams_.erase(it);
}

void Session::ArmIdleTimer() {
  if (options_.idle_timeout <= absl::ZeroDuration() || ended_) return;
  idle_timer_.expires_at(last_activity_ + ToChrono(options_.idle_timeout));
  idle_timer_.async_wait([self = shared_from_this()](ErrorCode ec) {
    if (ec || self->ended_) return;
    if (std::chrono::steady_clock::now() - self->last_activity_ < ToChrono(self->options_.idle_timeout)) {
      return self->ArmIdleTimer();
    }
    LOG_INFO << "SPDY session idle for " << self->options_.idle_timeout << "; closing it";
    // As spdystream: every open stream is reset, then GOAWAY.
    std::vector<std::shared_ptr<Stream>> open;
    for (auto& [id, stream] : self->streams_) open.push_back(stream);
    for (auto& stream : open) stream->Reset();
    self->Finish(absl::DeadlineExceededError("the session was idle too long"));
  });
}

void Session::End(absl::Status why) {
  if (ended_) return;
  ended_ = true;
  transport_->Close();
  idle_timer_.cancel();
  drain_timer_.cancel();
  std::map<uint32_t, std::shared_ptr<Stream>> streams = std::move(streams_);
  streams_.clear();
  for (auto& [id, stream] : streams) stream->OnSessionEnd();
  out_.clear();
  if (std::shared_ptr<Handler> handler = std::move(handler_)) handler->OnClosed(why);
}

}  // namespace streaming::spdy
