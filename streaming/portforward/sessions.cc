#include "streaming/portforward/sessions.h"

#include <map>
#include <utility>

#include <boost/asio/steady_timer.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/strings.h"
#include "streaming/blocking.h"
#include "streaming/portforward/forward.h"
#include "streaming/spdy/session.h"

namespace streaming::portforward {

namespace {

using common::Av;

// Finds the sandbox's namespace, connects there and starts the forward, then hands
// it to `on_started` (which may cancel it at once: its session may be gone by now);
// `on_done` gets OK or why the connection failed.
void Connect(const SessionEnv& env, asio::any_io_executor strand, const std::string& sandbox_id, uint16_t port,
             Forward::Ends ends, std::function<void(std::shared_ptr<Forward>)> on_started,
             std::function<void(absl::Status)> on_done) {
  Runtime* runtime = env.runtime;
  NetnsDialer* dialer = env.dialer;
  RunBlocking(
      env.workers, strand, [runtime, sandbox_id] { return runtime->PortForwardNetns(sandbox_id); },
      [dialer, strand, port, ends = std::move(ends), on_started = std::move(on_started),
       on_done = std::move(on_done)](absl::StatusOr<std::string> netns) mutable {
        if (!netns.ok()) return on_done(netns.status());
        dialer->AsyncConnect(strand, *netns, port,
                             [ends = std::move(ends), on_started = std::move(on_started),
                              on_done = std::move(on_done)](absl::StatusOr<asio::ip::tcp::socket> socket) mutable {
                               if (!socket.ok()) return on_done(socket.status());
                               auto forward = std::make_shared<Forward>(std::move(*socket), std::move(ends),
                                                                        std::move(on_done));
                               forward->Start();
                               on_started(std::move(forward));
                             });
      });
}

// The text the Go server writes on a failed forward's error stream.
std::string ForwardError(uint16_t port, const std::string& sandbox_id, const absl::Status& status) {
  return absl::StrCat("error forwarding port ", port, " to pod ", sandbox_id, ", uid : ", status.message());
}

class SpdyPortForwardSession final : public spdy::Session::Handler,
                                     public std::enable_shared_from_this<SpdyPortForwardSession> {
 public:
  SpdyPortForwardSession(const SessionEnv& env, std::shared_ptr<spdy::Session> session, PortForwardRequest request)
      : env_(env), session_(std::move(session)), request_(std::move(request)) {}

  void Begin() {
    std::weak_ptr<SpdyPortForwardSession> weak = weak_from_this();
    registry_id_ = env_.registry->Add(session_->executor(), [weak] {
      if (auto self = weak.lock(); self && self->session_) {
        self->session_->Finish(absl::CancelledError("the streaming server is shutting down"));
      }
    }, "portforward");
    session_->Start(shared_from_this());
  }

  void OnStream(std::shared_ptr<spdy::Stream> stream) override {
    const spdy::Headers& headers = stream->headers();
    const std::optional<std::string_view> type = spdy::FindHeader(headers, "streamtype");
    const std::optional<std::string_view> port_text = spdy::FindHeader(headers, "port");
    uint32_t port = 0;
    if (!port_text || !absl::SimpleAtoi(Av(*port_text), &port) || port == 0 || port > 65535 || !type ||
        (*type != "data" && *type != "error")) {
      LOG_DEBUG << "port-forward: refusing stream " << stream->id() << " (streamtype "
                << type.value_or("missing") << ", port " << port_text.value_or("missing") << ")";
      return stream->Reset();
    }
    const bool is_error = *type == "error";
    // Old clients send no requestid: the error stream's id names the pair, and the
    // data stream follows it.
    std::string request_id;
    if (const std::optional<std::string_view> id = spdy::FindHeader(headers, "requestid")) {
      request_id = *id;
    } else {
      request_id = absl::StrCat(is_error ? stream->id() : stream->id() - 2);
    }
    auto [it, fresh] = pairs_.try_emplace(request_id);
    Pair& pair = it->second;
    std::shared_ptr<spdy::Stream>& slot = is_error ? pair.error : pair.data;
    if (slot || pair.forward) return stream->Reset();
    stream->Accept();
    slot = std::move(stream);
    pair.port = static_cast<uint16_t>(port);
    if (fresh) StartPairTimer(request_id);
    if (pair.error && pair.data) Launch(request_id);
  }

  void OnClosed(const absl::Status& why) override {
    for (auto& [id, pair] : pairs_) {
      if (pair.timer) pair.timer->cancel();
      if (pair.forward) pair.forward->Cancel();
    }
    pairs_.clear();
    if (!why.ok()) LOG_DEBUG << "SPDY port-forward session ended: " << why.message();
    env_.registry->Remove(registry_id_);
    session_.reset();
  }

 private:
  struct Pair {
    std::shared_ptr<spdy::Stream> error, data;
    uint16_t port = 0;
    std::unique_ptr<asio::steady_timer> timer;
    std::shared_ptr<Forward> forward;
  };

  void StartPairTimer(const std::string& request_id) {
    Pair& pair = pairs_[request_id];
    pair.timer = std::make_unique<asio::steady_timer>(session_->executor());
    pair.timer->expires_after(absl::ToChronoNanoseconds(env_.stream_creation_timeout));
    pair.timer->async_wait([weak = weak_from_this(), request_id](ErrorCode ec) {
      auto self = weak.lock();
      if (ec || !self) return;
      auto it = self->pairs_.find(request_id);
      if (it == self->pairs_.end() || (it->second.error && it->second.data)) return;
      if (it->second.error) {
        it->second.error->AsyncWrite(absl::StrCat("request ", request_id, ": timed out waiting for streams"),
                                     [](ErrorCode) {});
        it->second.error->Reset();
      }
      if (it->second.data) it->second.data->Reset();
      self->pairs_.erase(it);
    });
  }

  void Launch(const std::string& request_id) {
    Pair& pair = pairs_[request_id];
    pair.timer->cancel();
    // The port comes from the data stream's header, as the Go server takes it.
    const std::optional<std::string_view> data_port = spdy::FindHeader(pair.data->headers(), "port");
    uint32_t port = pair.port;
    if (data_port) (void)absl::SimpleAtoi(Av(*data_port), &port);
    std::weak_ptr<SpdyPortForwardSession> weak = weak_from_this();
    Connect(
        env_, session_->executor(), request_.pod_sandbox_id, static_cast<uint16_t>(port),
        Forward::Ends{pair.data, pair.data},
        [weak, request_id](std::shared_ptr<Forward> forward) {
          auto self = weak.lock();
          if (!self) return forward->Cancel();
          auto it = self->pairs_.find(request_id);
          if (it == self->pairs_.end()) return forward->Cancel();
          it->second.forward = std::move(forward);
        },
        [weak, request_id, port](absl::Status status) {
          auto self = weak.lock();
          if (!self) return;
          auto it = self->pairs_.find(request_id);
          if (it == self->pairs_.end()) return;
          Pair pair = std::move(it->second);
          self->pairs_.erase(it);
          if (status.ok()) {
            pair.error->CloseWrite();
            return;
          }
          // The text goes first, then both streams are reset: the client logs it and
          // closes the whole session.
          LOG_INFO << "port-forward to " << self->request_.pod_sandbox_id << ":" << port << ": " << status.message();
          pair.error->AsyncWrite(ForwardError(static_cast<uint16_t>(port), self->request_.pod_sandbox_id, status),
                                 [](ErrorCode) {});
          pair.data->Reset();
          pair.error->Reset();
        });
  }

  const SessionEnv& env_;
  std::shared_ptr<spdy::Session> session_;
  const PortForwardRequest request_;
  std::map<std::string, Pair> pairs_;
  uint64_t registry_id_ = 0;
};

class WebSocketPortForwardSession final : public std::enable_shared_from_this<WebSocketPortForwardSession> {
 public:
  WebSocketPortForwardSession(const SessionEnv& env, std::shared_ptr<websocket::ChannelSession> session,
                              PortForwardRequest request)
      : env_(env), session_(std::move(session)), request_(std::move(request)) {}

  void Begin() {
    std::weak_ptr<WebSocketPortForwardSession> weak = weak_from_this();
    registry_id_ = env_.registry->Add(session_->executor(), [weak] {
      if (auto self = weak.lock()) self->End(absl::CancelledError("the streaming server is shutting down"));
    }, "portforward");
    // The session keeps this alive until it closes.
    session_->Start([self = shared_from_this()](const absl::Status& why) { self->OnClosed(why); });
    remaining_ = request_.ports.size();
    if (remaining_ == 0) return End(absl::InvalidArgumentError("no ports to forward"));
    for (std::size_t i = 0; i < request_.ports.size(); ++i) StartPort(i);
  }

 private:
  void StartPort(std::size_t index) {
    const uint16_t port = request_.ports[index];
    const auto data_channel = static_cast<uint8_t>(2 * index), error_channel = static_cast<uint8_t>(2 * index + 1);
    auto data = session_->Output(data_channel);
    auto error = session_->Output(error_channel);
    // Each channel starts with its port, so the client knows which is which.
    data->AsyncWrite(websocket::EncodePortPrefix(port), [](ErrorCode) {});
    error->AsyncWrite(websocket::EncodePortPrefix(port), [](ErrorCode) {});
    std::weak_ptr<WebSocketPortForwardSession> weak = weak_from_this();
    Connect(
        env_, session_->executor(), request_.pod_sandbox_id, port,
        Forward::Ends{session_->Input(data_channel), data},
        [weak](std::shared_ptr<Forward> forward) {
          auto self = weak.lock();
          if (!self || self->ended_) return forward->Cancel();
          self->forwards_.push_back(std::move(forward));
        },
        [weak, port, error](absl::Status status) {
          auto self = weak.lock();
          if (!self) return;
          if (!status.ok()) {
            LOG_INFO << "port-forward to " << self->request_.pod_sandbox_id << ":" << port << ": " << status.message();
            error->AsyncWrite(ForwardError(port, self->request_.pod_sandbox_id, status), [](ErrorCode) {});
          }
          // The connection ends when every port's forward has.
          if (--self->remaining_ == 0) self->End(absl::OkStatus());
        });
  }

  void End(absl::Status why) {
    if (ended_) return;
    ended_ = true;
    for (auto& forward : forwards_) forward->Cancel();
    forwards_.clear();
    session_->Finish(std::move(why));
  }

  void OnClosed(const absl::Status& why) {
    ended_ = true;
    for (auto& forward : forwards_) forward->Cancel();
    forwards_.clear();
    if (!why.ok()) LOG_DEBUG << "WebSocket port-forward session ended: " << why.message();
    env_.registry->Remove(registry_id_);
  }

  const SessionEnv& env_;
  std::shared_ptr<websocket::ChannelSession> session_;
  const PortForwardRequest request_;
  std::vector<std::shared_ptr<Forward>> forwards_;
  std::size_t remaining_ = 0;
  bool ended_ = false;
  uint64_t registry_id_ = 0;
};

}  // namespace

void ServeSpdy(const SessionEnv& env, std::unique_ptr<ByteStream> connection, PortForwardRequest request) {
  auto session = std::make_shared<spdy::Session>(
      std::move(connection), spdy::SessionOptions{.idle_timeout = env.idle_timeout});
  std::make_shared<SpdyPortForwardSession>(env, std::move(session), std::move(request))->Begin();
}

void ServeWebSocket(const SessionEnv& env, std::unique_ptr<websocket::WebSocket> ws, websocket::Subprotocol protocol,
                    PortForwardRequest request) {
  auto session = std::make_shared<websocket::ChannelSession>(
      std::move(ws), std::move(protocol), websocket::ChannelSessionOptions{.idle_timeout = env.idle_timeout});
  std::make_shared<WebSocketPortForwardSession>(env, std::move(session), std::move(request))->Begin();
}

}  // namespace streaming::portforward
