#pragma once
// The server side of a SPDY/3.1 session as the Go peers (moby/spdystream, client-go)
// expect it:
// - each SYN_STREAM goes to the handler, which replies (Accept) or resets it;
// - PINGs with the client's (odd) ids are echoed, SETTINGS and WINDOW_UPDATE are
//   ignored, and no send window is enforced: the Go peers never grant one;
// - nothing is sent before the client's first frame: the server only answers;
// - GOAWAY goes last: Finish() sends what is queued, then GOAWAY, then half-closes
//   the connection and drains it until the client closes (bounded).
// Back-pressure: a stream holds at most `stream_buffer` bytes the client sent and
// nobody read yet; past that the session stops reading the connection (TCP is the
// only flow control, as with the Go server). A writer waits while its stream has
// more than `stream_buffer` bytes unsent.
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/steady_timer.hpp>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "streaming/byte_stream.h"
#include "streaming/channel.h"
#include "streaming/spdy/frame.h"

namespace streaming::spdy {

struct SessionOptions {
  absl::Duration idle_timeout = absl::Hours(4);  // no frame either way this long; zero disables
  std::size_t max_streams = 1024;                // open at once; more are refused
  std::size_t stream_buffer = 1 << 20;
  absl::Duration drain_timeout = absl::Seconds(2);  // after GOAWAY, for the client to close
};

class Session;

// One client-opened stream: a channel in each direction.
class Stream final : public InChannel, public OutChannel, public std::enable_shared_from_this<Stream> {
 public:
  Stream(std::weak_ptr<Session> session, uint32_t id, Headers headers, std::size_t buffer_limit);

  uint32_t id() const { return id_; }
  const Headers& headers() const { return headers_; }

  // Sends SYN_REPLY; client data that came before it is kept for the reader.
  void Accept();
  // Sends RST_STREAM unless this side already finished; ends both directions.
  void Reset(RstStatus status = RstStatus::kCancel);

  void AsyncRead(std::function<void(ErrorCode, std::string)> handler) override;
  void AsyncWrite(std::string data, std::function<void(ErrorCode)> ready) override;
  void CloseWrite() override;

 private:
  friend class Session;
  // Session-side events.
  void OnData(std::string_view piece, bool fin);
  void OnPeerReset();
  void OnSent(std::size_t bytes);
  void OnSessionEnd();
  bool Done() const { return reset_ || (local_fin_ && remote_fin_); }
  void DeliverRead();
  void Post(std::function<void()> fn);

  std::weak_ptr<Session> session_;
  const uint32_t id_;
  const Headers headers_;
  const std::size_t buffer_limit_;
  bool replied_ = false, local_fin_ = false, remote_fin_ = false, reset_ = false;
  bool peer_reset_ = false, session_ended_ = false;
  std::deque<std::string> inbound_;
  std::size_t inbound_bytes_ = 0;
  bool throttling_ = false;  // counted in the session's throttle while over the limit
  std::function<void(ErrorCode, std::string)> pending_read_;
  std::size_t unsent_ = 0;
  std::function<void(ErrorCode)> pending_ready_;
};

class Session final : public std::enable_shared_from_this<Session> {
 public:
  class Handler {
   public:
    virtual ~Handler() = default;
    // A stream the client opened; the handler accepts or resets it, now or later.
    virtual void OnStream(std::shared_ptr<Stream> stream) = 0;
    // The session is over: OK after Finish(OK), else why (client gone, idle, a
    // protocol error, Abort). Called once; the session then drops the handler.
    virtual void OnClosed(const absl::Status& why) = 0;
  };

  Session(std::unique_ptr<ByteStream> transport, SessionOptions options);
  ~Session();

  void Start(std::shared_ptr<Handler> handler);
  // Sends what is queued, then GOAWAY, half-closes and drains; OnClosed(`why`) follows.
  void Finish(absl::Status why = absl::OkStatus());
  // Closes the connection now.
  void Abort(absl::Status why);
  asio::any_io_executor executor() const { return executor_; }

 private:
  friend class Stream;
  class FrameSink;
  struct Outgoing {
    std::string head;     // a whole control frame, or a data frame's 8-byte header
    std::string payload;  // data frames only
    std::shared_ptr<Stream> stream;  // data frames: told once the payload is written
  };

  void ReadMore();
  void OnRead(ErrorCode ec, std::size_t n);
  void OnControl(ControlFrame frame);
  void OnSynStream(SynStream& frame);
  void OnData(uint32_t stream_id, std::string_view piece, bool fin);

  void EnqueueControl(std::string frame);
  void EnqueueData(std::shared_ptr<Stream> stream, std::string payload, bool fin);
  void Flush();
  void OnWritten(ErrorCode ec, std::size_t frames);
  void MaybeSendGoAway();
  void StartDrain();

  void Throttle(int delta);
  void ForgetIfDone(const Stream& stream);
  void Touch() { last_activity_ = std::chrono::steady_clock::now(); }
  void ArmIdleTimer();
  void End(absl::Status why);

  std::unique_ptr<ByteStream> transport_;
  const SessionOptions options_;
  const asio::any_io_executor executor_;
  std::shared_ptr<Handler> handler_;
  FrameParser parser_;
  FrameWriter writer_;
  std::vector<char> read_buffer_;
  bool reading_ = false;
  int throttled_streams_ = 0;

  std::map<uint32_t, std::shared_ptr<Stream>> streams_;
  uint32_t next_stream_id_ = 1;  // the lowest id a new client stream may have
  uint32_t last_good_stream_id_ = 0;

  std::deque<Outgoing> out_;
  bool writing_ = false;

  bool finishing_ = false, goaway_queued_ = false, draining_ = false, ended_ = false;
  absl::Status finish_status_;
  asio::steady_timer idle_timer_;
  asio::steady_timer drain_timer_;
  std::chrono::steady_clock::time_point last_activity_;
};

}  // namespace streaming::spdy
