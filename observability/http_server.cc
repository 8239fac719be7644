#include "observability/http_server.h"

#include <boost/asio/post.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "observability/exposition.h"

namespace observability {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {
constexpr std::chrono::seconds kIdle{30};
constexpr int kMaxConnections = 64;
constexpr std::size_t kHeaderLimit = 8 * 1024;
}  // namespace

absl::StatusOr<tcp::endpoint> ParseMetricsAddress(std::string_view address) {
  const auto bad = [address](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("\"", absl::string_view(address.data(), address.size()),
                                                   "\" is not host:port (", absl::string_view(why.data(), why.size()),
                                                   ")"));
  };
  const std::size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) return bad("no port");
  std::string host(address.substr(0, colon));
  const std::string_view port_text = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return bad("an IPv6 address goes in brackets");
  }
  if (host.empty()) host = "127.0.0.1";
  uint32_t port = 0;
  if (!absl::SimpleAtoi(absl::string_view(port_text.data(), port_text.size()), &port) || port > 65535)
    return bad("bad port");
  boost::system::error_code ec;
  const asio::ip::address ip = asio::ip::make_address(host, ec);
  if (ec) return bad("the host must be an IP address");
  return tcp::endpoint(ip, static_cast<uint16_t>(port));
}

absl::Status Health::Check() const {
  if (!serving_) return absl::UnavailableError("the CRI server is not serving");
  if (absl::Status ping = ping_(); !ping.ok()) {
    return absl::UnavailableError(absl::StrCat("Docker does not answer: ", ping.message()));
  }
  return absl::OkStatus();
}

// One client connection: requests are answered one after the other.
class MetricsServer::Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(MetricsServer& server, tcp::socket socket) : server_(server), stream_(std::move(socket)) {
    ++server_.connections_;
  }
  ~Connection() { --server_.connections_; }

  void Read() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(0);
    stream_.expires_after(kIdle);
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec == http::error::header_limit || ec == http::error::body_limit) {
        return self->Reply(http::status::request_header_fields_too_large, "request too large\n", false);
      }
      if (!ec) self->OnRequest();
    });
  }

 private:
  void OnRequest() {
    const auto& req = parser_->get();
    const std::string_view target(req.target().data(), req.target().size());
    const std::string_view path = target.substr(0, target.find('?'));
    const bool keep_alive = req.keep_alive();
    if (path != "/metrics" && path != "/healthz") return Reply(http::status::not_found, "not found\n", keep_alive);
    if (req.method() != http::verb::get && req.method() != http::verb::head) {
      return Reply(http::status::method_not_allowed, "only GET and HEAD\n", keep_alive);
    }
    if (path == "/metrics") {
      return Reply(http::status::ok, server_.registry_.Render(), keep_alive, kTextContentType);
    }
    const absl::Status health = server_.health_();
    if (health.ok()) return Reply(http::status::ok, "ok\n", keep_alive);
    Reply(http::status::service_unavailable, absl::StrCat(health.message(), "\n"), keep_alive);
  }

  void Reply(http::status status, std::string body, bool keep_alive,
             std::string_view type = "text/plain; charset=utf-8") {
    const bool head = parser_->is_header_done() && parser_->get().method() == http::verb::head;
    auto res = std::make_shared<http::response<http::string_body>>(status, 11);
    res->set(http::field::content_type, beast::string_view(type.data(), type.size()));
    res->keep_alive(keep_alive);
    res->body() = std::move(body);
    res->prepare_payload();
    if (head) res->body().clear();  // Content-Length stays that of the GET answer
    stream_.expires_after(kIdle);
    http::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code ec, std::size_t) {
      if (ec) return;
      if (res->keep_alive()) return self->Read();
      beast::error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    });
  }

  MetricsServer& server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> parser_;
};

MetricsServer::MetricsServer(const Registry& registry, HealthCheck health)
    : registry_(registry), health_(std::move(health)) {}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(std::string_view address,
                                                                   const Registry& registry, HealthCheck health) {
  absl::StatusOr<tcp::endpoint> endpoint = ParseMetricsAddress(address);
  if (!endpoint.ok()) return endpoint.status();
  std::unique_ptr<MetricsServer> server(new MetricsServer(registry, std::move(health)));
  boost::system::error_code ec;
  server->acceptor_.open(endpoint->protocol(), ec);
  if (!ec) server->acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) server->acceptor_.bind(*endpoint, ec);
  if (!ec) server->acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", endpoint->address().to_string(), ":",
                                               endpoint->port(), ": ", ec.message()));
  }
  server->Accept();
  server->thread_ = std::thread([s = server.get()] { s->ioc_.run(); });
  return server;
}

MetricsServer::~MetricsServer() { Stop(); }

std::string MetricsServer::address() const {
  boost::system::error_code ec;
  const tcp::endpoint ep = acceptor_.local_endpoint(ec);
  const std::string host = ep.address().is_v6() ? absl::StrCat("[", ep.address().to_string(), "]")
                                                : ep.address().to_string();
  return absl::StrCat(host, ":", ep.port());
}

void MetricsServer::Accept() {
  acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) {
      // Out of fds, say: retrying at once would spin.
      LOG_WARN << "metrics: accept: " << ec.message();
      retry_.expires_after(std::chrono::milliseconds(100));
      retry_.async_wait([this](beast::error_code e) {
        if (!e) Accept();
      });
      return;
    }
    if (connections_ >= kMaxConnections) {
      LOG_DEBUG << "metrics: " << kMaxConnections << " connections open, refusing another";
    } else {
      std::make_shared<Connection>(*this, std::move(socket))->Read();
    }
    Accept();
  });
}

void MetricsServer::Stop() {
  if (!thread_.joinable()) return;
  asio::post(ioc_, [this] {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    retry_.cancel();
    ioc_.stop();
  });
  thread_.join();
}

}  // namespace observability
