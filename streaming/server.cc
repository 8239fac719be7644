#include "streaming/server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/stream.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/log.h"
#include "common/strings.h"
#include "streaming/portforward/dialer.h"
#include "streaming/portforward/sessions.h"
#include "streaming/remotecommand/protocol.h"
#include "streaming/remotecommand/sessions.h"
#include "streaming/session_env.h"
#include "streaming/websocket/channel.h"
#include "streaming/websocket/channel_session.h"
#include "streaming/websocket/tunnel.h"

namespace streaming {

namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using common::Av;

namespace {

// Go's server allows 1 MiB of headers; no client of this server needs more than a few KiB.
constexpr std::size_t kHeaderLimit = 64 << 10;
constexpr std::size_t kBodyLimit = 64 << 10;
constexpr absl::Duration kShutdownGrace = absl::Seconds(5);
constexpr int kKeepAliveSeconds = 15;  // as Go's listeners

std::string_view Sv(beast::string_view s) { return {s.data(), s.size()}; }

std::string Lower(beast::string_view s) { return absl::AsciiStrToLower(Av(Sv(s))); }

enum class Kind { kExec, kAttach, kPortForward };

const char* KindPath(Kind kind) {
  switch (kind) {
    case Kind::kExec: return "exec";
    case Kind::kAttach: return "attach";
    case Kind::kPortForward: return "portforward";
  }
  return "";
}

Kind KindOf(const Request& request) {
  if (std::holds_alternative<ExecRequest>(request)) return Kind::kExec;
  if (std::holds_alternative<AttachRequest>(request)) return Kind::kAttach;
  return Kind::kPortForward;
}

// "/exec/<token>" and the like; nullopt for any other path.
std::optional<std::pair<Kind, std::string>> ParsePath(std::string_view path) {
  const std::vector<absl::string_view> parts = absl::StrSplit(Av(path), '/');
  if (parts.size() != 3 || !parts[0].empty() || parts[2].empty()) return std::nullopt;
  for (Kind kind : {Kind::kExec, Kind::kAttach, Kind::kPortForward}) {
    if (parts[1] == KindPath(kind)) return std::make_pair(kind, std::string(parts[2]));
  }
  return std::nullopt;
}

void SetSocketOptions(tcp::socket& socket) {
  ErrorCode ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  socket.set_option(asio::socket_base::keep_alive(true), ignored);
  const int fd = socket.native_handle();
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &kKeepAliveSeconds, sizeof(kKeepAliveSeconds));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &kKeepAliveSeconds, sizeof(kKeepAliveSeconds));
}

}  // namespace

absl::StatusOr<tcp::endpoint> ParseBindAddress(std::string_view address) {
  const auto bad = [address](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("\"", Av(address), "\" is not host:port (", Av(why), ")"));
  };
  std::string_view host = address, port_text;
  if (absl::StartsWith(Av(address), "[")) {
    const std::size_t close = address.find(']');
    if (close == std::string_view::npos) return bad("no ] after the IPv6 address");
    host = address.substr(1, close - 1);
    const std::string_view rest = address.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return bad("expected : after ]");
      port_text = rest.substr(1);
    }
  } else if (const std::size_t colon = address.rfind(':');
             colon != std::string_view::npos && address.find(':') == colon) {
    host = address.substr(0, colon);
    port_text = address.substr(colon + 1);
  }
  uint32_t port = 0;
  if (!port_text.empty() && (!absl::SimpleAtoi(Av(port_text), &port) || port > 65535)) return bad("bad port");
  ErrorCode ec;
  // Like Go's ":port", no host means every (IPv4) interface.
  const asio::ip::address ip = asio::ip::make_address(host.empty() ? "0.0.0.0" : std::string(host), ec);
  if (ec) return bad("the host must be an IP address");
  return tcp::endpoint(ip, static_cast<uint16_t>(port));
}

std::string BaseUrlFor(const tcp::endpoint& endpoint, bool tls) {
  asio::ip::address ip = endpoint.address();
  if (ip.is_unspecified()) {
    ip = ip.is_v6() ? asio::ip::address(asio::ip::address_v6::loopback())
                    : asio::ip::address(asio::ip::address_v4::loopback());
  }
  const std::string host = ip.is_v6() ? absl::StrCat("[", ip.to_string(), "]") : ip.to_string();
  return absl::StrCat(tls ? "https" : "http", "://", host, ":", endpoint.port());
}

absl::StatusOr<std::vector<uint16_t>> PortsFromQuery(std::string_view query) {
  std::vector<uint16_t> ports;
  for (absl::string_view pair : absl::StrSplit(Av(query), '&', absl::SkipEmpty())) {
    if (!absl::StartsWith(pair, "port=")) continue;
    for (absl::string_view text : absl::StrSplit(pair.substr(5), ',', absl::SkipEmpty())) {
      uint32_t port = 0;
      if (!absl::SimpleAtoi(text, &port) || port == 0 || port > 65535) {
        return absl::InvalidArgumentError(absl::StrCat("invalid port \"", text, "\""));
      }
      ports.push_back(static_cast<uint16_t>(port));
    }
  }
  return ports;
}

// ---- Impl -----------------------------------------------------------------------------

class Server::Impl {
 public:
  Impl(ServerOptions options, Runtime& runtime)
      : options_(std::move(options)),
        cache_(options_.cache),
        io_contexts_(MakeIoContexts(options_.io_threads)),
        workers_(std::max(1, options_.worker_threads)),
        acceptor_(asio::make_strand(io_contexts_.front()->ioc)) {
    env_.runtime = &runtime;
    env_.workers = workers_.get_executor();
    env_.dialer = &dialer_;
    env_.registry = &registry_;
    env_.command.runtime = &runtime;
    env_.command.workers = workers_.get_executor();
    env_.idle_timeout = options_.idle_timeout;
    env_.stream_creation_timeout = options_.stream_creation_timeout;
  }

  absl::Status Listen();
  void Run();
  void Stop();
  absl::StatusOr<std::string> IssueUrl(Request req);

  const ServerOptions& options() const { return options_; }
  const SessionEnv& env() const { return env_; }
  SessionRegistry& registry() { return registry_; }
  RequestCache& cache() { return cache_; }
  ssl::context* tls() { return tls_ ? &*tls_ : nullptr; }
  const std::string& base_url() const { return base_url_; }

 private:
  void Accept();

  ServerOptions options_;
  RequestCache cache_;
  SessionRegistry registry_;
  SessionEnv env_;
  std::optional<ssl::context> tls_;
  // One io_context per io thread, each connection on one of them: a session's
  // handlers then always run on the same thread (with one context shared by several
  // threads, a session's strand hops between them, at the cost of a context switch per
  // hop). Each keeps running until Stop has joined the workers, even once no connection
  // is left: a runtime call finishing then still gets its result handled. Declared
  // after everything their handlers refer to: destroyed first among them.
  struct IoContext {
    asio::io_context ioc{1};
    asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(ioc);
  };
  static std::vector<std::unique_ptr<IoContext>> MakeIoContexts(int count) {
    std::vector<std::unique_ptr<IoContext>> contexts;
    for (int i = 0; i < std::max(1, count); ++i) contexts.push_back(std::make_unique<IoContext>());
    return contexts;
  }
  std::vector<std::unique_ptr<IoContext>> io_contexts_;
  std::size_t next_context_ = 0;  // on the acceptor's strand
  // Its queue holds executors of the sessions' strands on the io_contexts: joined and
  // emptied before they go.
  portforward::NetnsDialer dialer_;
  asio::thread_pool workers_;
  tcp::acceptor acceptor_;
  std::vector<std::thread> threads_;
  std::string base_url_;
  std::mutex stop_mu_;
  bool stopped_ = false;
};

namespace {

// One connection until its upgrade: reads the request, checks the token and the
// protocol, and hands the connection to a session (or answers with an error).
class HttpConnection final : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(Server::Impl& server, tcp::socket socket)
      : server_(server), socket_(std::move(socket)), timer_(socket_.get_executor()) {}

  ~HttpConnection() { server_.registry().Remove(registry_id_); }

  void Start() {
    std::weak_ptr<HttpConnection> weak = weak_from_this();
    registry_id_ = server_.registry().Add(socket_.get_executor(), [weak] {
      if (auto self = weak.lock()) self->Abort();
    });
    timer_.expires_after(absl::ToChronoNanoseconds(server_.options().request_timeout));
    timer_.async_wait([weak](ErrorCode ec) {
      if (auto self = weak.lock(); self && !ec) self->Abort();
    });
    if (ssl::context* context = server_.tls()) {
      tls_ = std::make_unique<ssl::stream<tcp::socket>>(std::move(socket_), *context);
      tls_->async_handshake(ssl::stream_base::server, [self = shared_from_this()](ErrorCode ec) {
        if (ec) {
          LOG_DEBUG << "streaming: TLS handshake failed: " << ec.message();
          return;
        }
        self->ReadRequest();
      });
      return;
    }
    ReadRequest();
  }

 private:
  template <typename Fn>
  void WithStream(Fn&& fn) {
    if (tls_) {
      fn(*tls_);
    } else {
      fn(socket_);
    }
  }
  tcp::socket& Lowest() { return tls_ ? tls_->next_layer() : socket_; }

  void Abort() {
    ErrorCode ignored;
    if (!handed_over_) Lowest().close(ignored);
  }

  void ReadRequest() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(kBodyLimit);
    WithStream([this](auto& stream) {
      http::async_read(stream, buffer_, *parser_, [self = shared_from_this()](ErrorCode ec, std::size_t) {
        if (ec == http::error::header_limit || ec == http::error::body_limit) {
          return self->Reply(http::status::request_header_fields_too_large, "request too large\n");
        }
        if (ec) {
          LOG_DEBUG << "streaming: reading a request: " << ec.message();
          return;
        }
        self->OnRequest();
      });
    });
  }

  void OnRequest() {
    const auto& req = parser_->get();
    const std::string_view target = Sv(req.target());
    const std::size_t q = target.find('?');
    const std::string_view path = target.substr(0, q), query = q == std::string_view::npos ? "" : target.substr(q + 1);
    const auto route = ParsePath(path);
    if (!route) return Reply(http::status::not_found, "404 page not found\n");
    if (req.method() != http::verb::get && req.method() != http::verb::post) {
      return Reply(http::status::method_not_allowed, "405: Method Not Allowed", {{"Allow", "GET, POST"}});
    }
    std::optional<Request> request = server_.cache().Consume(route->second);
    // A token is spent even when it is used on the wrong endpoint.
    if (!request || KindOf(*request) != route->first) return Reply(http::status::not_found, "404 page not found\n");

    const bool websocket = absl::EqualsIgnoreCase(Av(Sv(req[http::field::upgrade])), "websocket") &&
                           absl::StrContains(Lower(req[http::field::connection]), "upgrade");
    if (websocket) return OnWebSocket(std::move(*request), query);
    OnSpdy(std::move(*request));
  }

  void OnSpdy(Request request) {
    const auto& req = parser_->get();
    std::vector<std::string> offered;
    for (const auto& field : req) {
      if (absl::EqualsIgnoreCase(Av(Sv(field.name_string())), "X-Stream-Protocol-Version")) {
        offered.emplace_back(Sv(field.value()));
      }
    }
    const bool port_forward = KindOf(request) == Kind::kPortForward;
    const std::vector<std::string_view> supported =
        port_forward ? std::vector<std::string_view>{remotecommand::kPortForwardProtocol}
                     : std::vector<std::string_view>(std::begin(remotecommand::kSpdyRemoteCommandProtocols),
                                                     std::end(remotecommand::kSpdyRemoteCommandProtocols));
    const std::vector<std::string> supported_names(supported.begin(), supported.end());
    if (offered.empty()) {
      return Reply(http::status::bad_request, "unable to upgrade: X-Stream-Protocol-Version is required");
    }
    const std::optional<std::string> chosen = remotecommand::NegotiateProtocol(offered, supported);
    if (!chosen) {
      std::vector<std::pair<std::string, std::string>> accepted;
      for (const std::string& p : supported_names) accepted.emplace_back("X-Accepted-Stream-Protocol-Versions", p);
      return Reply(http::status::forbidden,
                   absl::StrCat("unable to upgrade: unable to negotiate protocol: client supports [",
                                absl::StrJoin(offered, " "), "], server accepts [", absl::StrJoin(supported_names, " "), "]"),
                   accepted);
    }
    if (!absl::StrContains(Lower(req[http::field::connection]), "upgrade") ||
        !absl::StrContains(Lower(req[http::field::upgrade]), "spdy/3.1")) {
      return Reply(http::status::bad_request,
                   absl::StrCat("unable to upgrade: missing upgrade headers in request: Connection: ",
                                Av(Sv(req[http::field::connection])), ", Upgrade: ",
                                Av(Sv(req[http::field::upgrade]))));
    }
    auto response = std::make_shared<std::string>(absl::StrCat(
        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: ",
        *chosen, "\r\n\r\n"));
    // std::function needs a copyable handler: the stream travels in a shared holder.
    auto stream = std::make_shared<std::unique_ptr<ByteStream>>(TakeStream());
    ByteStream& raw = **stream;
    const SessionEnv& env = server_.env();
    raw.AsyncWrite({asio::buffer(*response)}, [&env, stream, response, request = std::move(request),
                                               chosen = *chosen](ErrorCode ec, std::size_t) mutable {
      if (ec) {
          LOG_DEBUG << "streaming: writing the upgrade response: " << ec.message();
          return;
        }
      if (auto* pf = std::get_if<PortForwardRequest>(&request)) {
        return portforward::ServeSpdy(env, std::move(*stream), std::move(*pf));
      }
      remotecommand::ServeSpdy(env, std::move(*stream), std::move(request), *remotecommand::VersionOf(chosen));
    });
  }

  void OnWebSocket(Request request, std::string_view query);
  void Reply(http::status status, std::string body, std::vector<std::pair<std::string, std::string>> headers = {});
  std::unique_ptr<ByteStream> TakeStream();

  Server::Impl& server_;
  tcp::socket socket_;
  std::unique_ptr<ssl::stream<tcp::socket>> tls_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  asio::steady_timer timer_;
  uint64_t registry_id_ = 0;
  bool handed_over_ = false;
};

void HttpConnection::OnWebSocket(Request request, std::string_view query) {
  const auto& req = parser_->get();
  if (req.method() != http::verb::get) {
    return Reply(http::status::method_not_allowed, "405: Method Not Allowed", {{"Allow", "GET"}});
  }
  const std::string offered(Sv(req[http::field::sec_websocket_protocol]));
  auto* port_forward = std::get_if<PortForwardRequest>(&request);
  const std::optional<websocket::Subprotocol> protocol =
      port_forward ? websocket::NegotiatePortForward(offered) : websocket::NegotiateRemoteCommand(offered);
  // Refused with a non-101 answer, so that clients fall back to SPDY.
  if (!protocol) {
    return Reply(http::status::forbidden,
                 absl::StrCat("unable to upgrade: no supported WebSocket subprotocol in \"", offered, "\""));
  }
  if (port_forward && protocol->kind == websocket::Subprotocol::Kind::kChannels && port_forward->ports.empty()) {
    absl::StatusOr<std::vector<uint16_t>> ports = PortsFromQuery(query);
    if (!ports.ok()) return Reply(http::status::bad_request, std::string(ports.status().message()));
    if (ports->empty()) {
      return Reply(http::status::bad_request, "port-forward over WebSocket needs ports (the request's, or ?port=)");
    }
    port_forward->ports = std::move(*ports);
  }

  auto ws = std::make_shared<std::unique_ptr<websocket::WebSocket>>(std::make_unique<websocket::WebSocket>(TakeStream()));
  websocket::WebSocket& raw = **ws;
  raw.set_option(beast::websocket::stream_base::decorator([name = protocol->name](beast::websocket::response_type& res) {
    if (!name.empty()) res.set(http::field::sec_websocket_protocol, name);
  }));
  beast::websocket::stream_base::timeout timeout;
  timeout.handshake_timeout = absl::ToChronoSeconds(server_.options().request_timeout);
  timeout.idle_timeout = beast::websocket::stream_base::none();
  timeout.keep_alive_pings = false;
  raw.set_option(timeout);
  const SessionEnv& env = server_.env();
  raw.async_accept(req, [self = shared_from_this(), &env, ws, protocol = *protocol,
                         request = std::move(request)](ErrorCode ec) mutable {
    if (ec) {
      LOG_DEBUG << "streaming: WebSocket handshake failed: " << ec.message();
      return;
    }
    if (auto* pf = std::get_if<PortForwardRequest>(&request)) {
      if (protocol.kind == websocket::Subprotocol::Kind::kSpdyTunnel) {
        return portforward::ServeSpdy(env, websocket::MakeTunnelStream(std::move(*ws)), std::move(*pf));
      }
      return portforward::ServeWebSocket(env, std::move(*ws), std::move(protocol), std::move(*pf));
    }
    remotecommand::ServeWebSocket(env, std::move(*ws), std::move(protocol), std::move(request));
  });
}

// Error answers carry a Content-Length and close the connection: clients read the
// body to its end.
void HttpConnection::Reply(http::status status, std::string body,
                           std::vector<std::pair<std::string, std::string>> headers) {
  auto res = std::make_shared<http::response<http::string_body>>(status, 11);
  res->set(http::field::content_type, "text/plain; charset=utf-8");
  res->set("X-Content-Type-Options", "nosniff");
  for (const auto& [name, value] : headers) res->insert(name, value);
  res->keep_alive(false);
  res->body() = std::move(body);
  res->prepare_payload();
  WithStream([this, res](auto& stream) {
    http::async_write(stream, *res, [self = shared_from_this(), res](ErrorCode, std::size_t) {
      ErrorCode ignored;
      self->Lowest().shutdown(asio::socket_base::shutdown_send, ignored);
      self->Lowest().close(ignored);
    });
  });
}

// Bytes read past the request (a client may send its first frames early) stay first
// in line for the session.
std::unique_ptr<ByteStream> HttpConnection::TakeStream() {
  handed_over_ = true;
  timer_.cancel();
  std::string prefix = beast::buffers_to_string(buffer_.data());
  buffer_.consume(buffer_.size());
  if (tls_) return MakeTlsStream(std::move(tls_), std::move(prefix));
  return MakeTcpStream(std::move(socket_), std::move(prefix));
}

// Answers a connection beyond the limit without reading it.
void RefuseOverloaded(tcp::socket socket) {
  auto held = std::make_shared<tcp::socket>(std::move(socket));
  // The length is counted, not written by hand: a wrong one desynchronizes the client.
  static const std::string kBusy = [] {
    constexpr std::string_view kBody = "too many streaming connections, retry later\n";
    return absl::StrCat("HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n",
                        "Content-Length: ", kBody.size(), "\r\nConnection: close\r\n\r\n", Av(kBody));
  }();
  asio::async_write(*held, asio::buffer(kBusy), [held](ErrorCode, std::size_t) {
    ErrorCode ignored;
    held->close(ignored);
  });
}

}  // namespace

absl::Status Server::Impl::Listen() {
  if (options_.tls_cert_file.empty() != options_.tls_key_file.empty()) {
    return absl::InvalidArgumentError("TLS needs both a certificate and a key");
  }
  if (!options_.tls_cert_file.empty()) {
    tls_.emplace(ssl::context::tls_server);
    ErrorCode ec;
    tls_->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                          ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1,
                      ec);
    if (tls_->use_certificate_chain_file(options_.tls_cert_file, ec); ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot load the TLS certificate ", options_.tls_cert_file, ": ", ec.message()));
    }
    if (tls_->use_private_key_file(options_.tls_key_file, ssl::context::pem, ec); ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot load the TLS key ", options_.tls_key_file, ": ", ec.message()));
    }
  }
  absl::StatusOr<tcp::endpoint> endpoint = ParseBindAddress(options_.bind_address);
  if (!endpoint.ok()) return endpoint.status();
  ErrorCode ec;
  const auto fail = [&](std::string_view what) {
    return absl::UnavailableError(absl::StrCat("cannot ", Av(what), " ", options_.bind_address, ": ", ec.message()));
  };
  if (acceptor_.open(endpoint->protocol(), ec); ec) return fail("open");
  acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (acceptor_.bind(*endpoint, ec); ec) return fail("bind");
  if (acceptor_.listen(asio::socket_base::max_listen_connections, ec); ec) return fail("listen on");
  base_url_ = BaseUrlFor(acceptor_.local_endpoint(), tls_.has_value());
  return absl::OkStatus();
}

void Server::Impl::Run() {
  Accept();
  for (auto& context : io_contexts_) threads_.emplace_back([&ioc = context->ioc] { ioc.run(); });
}

void Server::Impl::Accept() {
  asio::io_context& next = io_contexts_[next_context_++ % io_contexts_.size()]->ioc;
  acceptor_.async_accept(asio::make_strand(next), [this](ErrorCode ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) {
      LOG_WARN << "streaming: accept: " << ec.message();
    } else if (registry_.size() >= options_.max_connections) {
      LOG_WARN << "streaming: " << options_.max_connections << " connections open; refusing another";
      RefuseOverloaded(std::move(socket));
    } else {
      SetSocketOptions(socket);
      std::make_shared<HttpConnection>(*this, std::move(socket))->Start();
    }
    Accept();
  });
}

void Server::Impl::Stop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  if (stopped_) return;
  stopped_ = true;
  // On the acceptor's strand, where its handler runs; and before the sessions are
  // told to end, so that none is accepted behind their back.
  std::promise<void> closed;
  asio::post(acceptor_.get_executor(), [this, &closed] {
    ErrorCode ignored;
    acceptor_.close(ignored);
    closed.set_value();
  });
  closed.get_future().wait();
  if (!registry_.ShutdownAll(kShutdownGrace)) {
    LOG_WARN << "streaming: " << registry_.size() << " sessions did not end within " << kShutdownGrace;
  }
  workers_.join();
  for (auto& context : io_contexts_) {
    context->work.reset();
    context->ioc.stop();
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

absl::StatusOr<std::string> Server::Impl::IssueUrl(Request req) {
  const Kind kind = KindOf(req);
  const std::string token = cache_.Insert(std::move(req));
  return absl::StrCat(base_url_, "/", KindPath(kind), "/", token);
}

// ---- Server ---------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<Server>> Server::Start(ServerOptions options, Runtime& runtime) {
  auto impl = std::make_unique<Impl>(std::move(options), runtime);
  if (absl::Status listening = impl->Listen(); !listening.ok()) return listening;
  impl->Run();
  LOG_INFO << "streaming server on " << impl->base_url();
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() { Stop(); }
void Server::Stop() { impl_->Stop(); }
const std::string& Server::base_url() const { return impl_->base_url(); }
absl::StatusOr<std::string> Server::IssueUrl(Request req) { return impl_->IssueUrl(std::move(req)); }
std::size_t Server::active_connections() const { return impl_->registry().size(); }

}  // namespace streaming
