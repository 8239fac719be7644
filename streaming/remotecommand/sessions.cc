#include "streaming/remotecommand/sessions.h"

#include <array>
#include <string_view>
#include <utility>

#include <boost/asio/steady_timer.hpp>

#include "common/log.h"
#include "streaming/spdy/session.h"

namespace streaming::remotecommand {

namespace {

struct Flags {
  bool tty = false, stdin = false, stdout = false, stderr = false;
};

Flags FlagsOf(const Request& request) {
  if (const auto* exec = std::get_if<ExecRequest>(&request)) {
    return {exec->tty, exec->stdin, exec->stdout, exec->stderr};
  }
  const auto& attach = std::get<AttachRequest>(request);
  return {attach.tty, attach.stdin, attach.stdout, attach.stderr};
}

// The session's kind in the metrics.
const char* KindOf(const Request& request) { return std::holds_alternative<ExecRequest>(request) ? "exec" : "attach"; }

enum Slot { kError, kStdin, kStdout, kStderr, kResize, kSlots };
constexpr std::array<std::string_view, kSlots> kStreamTypes = {"error", "stdin", "stdout", "stderr", "resize"};

class SpdyCommandSession final : public spdy::Session::Handler,
                                 public std::enable_shared_from_this<SpdyCommandSession> {
 public:
  SpdyCommandSession(const SessionEnv& env, std::shared_ptr<spdy::Session> session, Request request, Version version)
      : env_(env),
        session_(std::move(session)),
        request_(std::move(request)),
        version_(version),
        timer_(session_->executor()) {
    // The streams the client must open, counted from the request as the Go server
    // does: resize only for a TTY from v3 on, stderr never with a TTY.
    const Flags f = FlagsOf(request_);
    wanted_ = {true, f.stdin, f.stdout, f.stderr && !f.tty, f.tty && version_ >= Version::kV3};
  }

  void Begin() {
    std::weak_ptr<SpdyCommandSession> weak = weak_from_this();
    registry_id_ = env_.registry->Add(session_->executor(), [weak] {
      if (auto self = weak.lock()) self->Shutdown();
    }, KindOf(request_));
    timer_.expires_after(absl::ToChronoNanoseconds(env_.stream_creation_timeout));
    timer_.async_wait([self = shared_from_this()](ErrorCode ec) {
      if (ec || self->command_ || !self->session_) return;
      LOG_INFO << "SPDY session: timed out waiting for the client to create streams";
      self->session_->Finish(absl::DeadlineExceededError("timed out waiting for client to create streams"));
    });
    session_->Start(shared_from_this());
  }

  void OnStream(std::shared_ptr<spdy::Stream> stream) override {
    const std::optional<std::string_view> type = spdy::FindHeader(stream->headers(), "streamtype");
    int slot = kSlots;
    for (int i = 0; type && i < kSlots; ++i) {
      if (*type == kStreamTypes[i]) slot = i;
    }
    // Unknown, unwanted or repeated streams, and any after the start, are refused
    // at once (the Go server would leave the client waiting 30 s for a reply).
    if (command_ || slot == kSlots || !wanted_[slot] || streams_[slot]) {
      stream->Reset(spdy::RstStatus::kRefusedStream);
      return;
    }
    stream->Accept();
    streams_[slot] = std::move(stream);
    for (int i = 0; i < kSlots; ++i) {
      if (wanted_[i] && !streams_[i]) return;
    }
    timer_.cancel();
    Channels channels{streams_[kStdin], streams_[kResize], streams_[kStdout], streams_[kStderr], streams_[kError]};
    std::weak_ptr<SpdyCommandSession> weak = weak_from_this();
    command_ = std::make_shared<Command>(env_.command, session_->executor(), request_, version_, std::move(channels),
                                         [weak] {
                                           if (auto self = weak.lock(); self && self->session_) self->session_->Finish();
                                         });
    command_->Start();
  }

  void OnClosed(const absl::Status& why) override {
    timer_.cancel();
    if (command_) command_->Cancel();
    if (!why.ok()) LOG_DEBUG << "SPDY exec/attach session ended: " << why.message();
    env_.registry->Remove(registry_id_);
    session_.reset();
    streams_ = {};
  }

 private:
  void Shutdown() {
    if (command_) command_->Cancel();
    if (session_) session_->Finish(absl::CancelledError("the streaming server is shutting down"));
  }

  const SessionEnv& env_;
  std::shared_ptr<spdy::Session> session_;
  const Request request_;
  const Version version_;
  boost::asio::steady_timer timer_;
  std::array<bool, kSlots> wanted_{};
  std::array<std::shared_ptr<spdy::Stream>, kSlots> streams_;
  std::shared_ptr<Command> command_;
  uint64_t registry_id_ = 0;
};

// WebSocket channel numbers (k8s.io/apimachinery remotecommand).
constexpr uint8_t kWsStdin = 0, kWsStdout = 1, kWsStderr = 2, kWsError = 3, kWsResize = 4;

Version VersionOfSubprotocol(const websocket::Subprotocol& protocol) {
  if (protocol.version >= 5) return Version::kV5;
  return protocol.version >= 4 ? Version::kV4 : Version::kV1;
}

}  // namespace

void ServeSpdy(const SessionEnv& env, std::unique_ptr<ByteStream> connection, Request request, Version version) {
  auto session = std::make_shared<spdy::Session>(
      std::move(connection), spdy::SessionOptions{.idle_timeout = env.idle_timeout});
  std::make_shared<SpdyCommandSession>(env, std::move(session), std::move(request), version)->Begin();
}

void ServeWebSocket(const SessionEnv& env, std::unique_ptr<websocket::WebSocket> ws, websocket::Subprotocol protocol,
                    Request request) {
  auto session = std::make_shared<websocket::ChannelSession>(
      std::move(ws), protocol, websocket::ChannelSessionOptions{.idle_timeout = env.idle_timeout});
  const Flags f = FlagsOf(request);
  Channels channels;
  if (f.stdin) channels.stdin = session->Input(kWsStdin);
  if (f.stdout) channels.stdout = session->Output(kWsStdout);
  if (f.stderr && !f.tty) channels.stderr = session->Output(kWsStderr);
  channels.error = session->Output(kWsError);
  if (f.tty) channels.resize = session->Input(kWsResize);

  // The client's cue that the connection is up: an empty message on the lowest
  // channel it reads.
  const uint8_t first = channels.stdout ? kWsStdout : channels.stderr ? kWsStderr : kWsError;
  session->Output(first)->AsyncWrite({}, [](ErrorCode) {});

  const char* kind = KindOf(request);
  auto command = std::make_shared<Command>(env.command, session->executor(), std::move(request),
                                           VersionOfSubprotocol(protocol), std::move(channels),
                                           [weak = std::weak_ptr(session)] {
                                             if (auto s = weak.lock()) s->Finish();
                                           });
  const uint64_t id = env.registry->Add(session->executor(), [command, weak = std::weak_ptr(session)] {
    command->Cancel();
    if (auto s = weak.lock()) s->Finish(absl::CancelledError("the streaming server is shutting down"));
  }, kind);
  SessionRegistry* registry = env.registry;
  session->Start([command, registry, id](const absl::Status& why) {
    command->Cancel();
    if (!why.ok()) LOG_DEBUG << "WebSocket exec/attach session ended: " << why.message();
    registry->Remove(id);
  });
  command->Start();
}

}  // namespace streaming::remotecommand
