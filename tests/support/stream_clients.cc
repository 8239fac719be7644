#include "tests/support/stream_clients.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <future>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/strings.h"

namespace streamtest {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace spdy = streaming::spdy;
using common::Av;
using ErrorCode = boost::system::error_code;

absl::StatusOr<Url> ParseUrl(std::string_view url) {
  const std::size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return absl::InvalidArgumentError(absl::StrCat("no scheme in ", Av(url)));
  std::string_view rest = url.substr(scheme + 3);
  const std::size_t slash = rest.find('/');
  std::string_view hostport = rest.substr(0, slash);
  Url out;
  out.target = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  const std::size_t colon = hostport.rfind(':');
  if (colon == std::string_view::npos) return absl::InvalidArgumentError(absl::StrCat("no port in ", Av(url)));
  std::string_view host = hostport.substr(0, colon);
  if (absl::StartsWith(Av(host), "[")) host = host.substr(1, host.size() - 2);
  out.host = std::string(host);
  uint32_t port = 0;
  if (!absl::SimpleAtoi(Av(hostport.substr(colon + 1)), &port)) return absl::InvalidArgumentError("bad port");
  out.port = static_cast<uint16_t>(port);
  return out;
}

std::string UpgradeResponse::Header(const std::string& name) const {
  auto it = headers.find(absl::AsciiStrToLower(name));
  return it == headers.end() || it->second.empty() ? "" : it->second.front();
}

std::vector<std::string> UpgradeResponse::Values(const std::string& name) const {
  auto it = headers.find(absl::AsciiStrToLower(name));
  return it == headers.end() ? std::vector<std::string>() : it->second;
}

absl::StatusOr<common::UniqueFd> Dial(const Url& url) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  int family = AF_INET;
  if (url.host.find(':') != std::string::npos) {
    family = AF_INET6;
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&addr);
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(url.port);
    if (inet_pton(AF_INET6, url.host.c_str(), &a6->sin6_addr) != 1) return absl::InvalidArgumentError("bad host");
    len = sizeof(*a6);
  } else {
    auto* a4 = reinterpret_cast<sockaddr_in*>(&addr);
    a4->sin_family = AF_INET;
    a4->sin_port = htons(url.port);
    if (inet_pton(AF_INET, url.host.c_str(), &a4->sin_addr) != 1) return absl::InvalidArgumentError("bad host");
    len = sizeof(*a4);
  }
  common::UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return absl::InternalError(std::strerror(errno));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    return absl::UnavailableError(absl::StrCat("connect ", url.host, ":", url.port, ": ", std::strerror(errno)));
  }
  const int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

namespace {

// Waits until `fd` is readable (or at its end); false at `deadline`.
bool WaitReadable(int fd, absl::Time deadline) {
  pollfd p{fd, POLLIN, 0};
  const absl::Duration left = std::max(deadline - absl::Now(), absl::ZeroDuration());
  return ::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left))) > 0;
}

}  // namespace

absl::StatusOr<std::string> ReadFdExactly(int fd, std::size_t n, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::string out;
  while (out.size() < n) {
    if (!WaitReadable(fd, deadline)) {
      return absl::DeadlineExceededError(absl::StrCat("got ", out.size(), " of ", n, " bytes: \"", out, "\""));
    }
    // Never reads past `n`: what follows belongs to the next call.
    std::string chunk(std::min<std::size_t>(n - out.size(), 64 << 10), '\0');
    const ssize_t got = ::read(fd, chunk.data(), chunk.size());
    if (got <= 0) break;
    out.append(chunk, 0, static_cast<std::size_t>(got));
  }
  return out;
}

absl::StatusOr<std::string> ReadFdToEof(int fd, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::string out;
  char chunk[64 << 10];
  for (;;) {
    if (!WaitReadable(fd, deadline)) return absl::DeadlineExceededError(absl::StrCat("no EOF; got \"", out, "\""));
    const ssize_t got = ::read(fd, chunk, sizeof(chunk));
    if (got <= 0) return out;
    out.append(chunk, static_cast<std::size_t>(got));
  }
}

// ---- TlsBridge ------------------------------------------------------------------------

class TlsBridge::Impl {
 public:
  Impl() : context_(asio::ssl::context::tls_client), tls_(ioc_, context_), near_(ioc_) {
    context_.set_verify_mode(asio::ssl::verify_none);
  }
  ~Impl() {
    ioc_.stop();
    if (thread_.joinable()) thread_.join();
  }

  absl::Status Connect(const Url& url, common::UniqueFd* plain) {
    ErrorCode ec;
    const asio::ip::tcp::endpoint endpoint(asio::ip::make_address(url.host, ec), url.port);
    if (ec) return absl::InvalidArgumentError("bad host");
    if (tls_.next_layer().connect(endpoint, ec); ec) return absl::UnavailableError(ec.message());
    tls_.next_layer().set_option(asio::ip::tcp::no_delay(true));
    if (tls_.handshake(asio::ssl::stream_base::client, ec); ec) {
      return absl::UnavailableError(absl::StrCat("TLS handshake: ", ec.message()));
    }
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return absl::InternalError("socketpair");
    near_.assign(asio::local::stream_protocol(), pair[1]);
    *plain = common::UniqueFd(pair[0]);
    FromServer();
    ToServer();
    thread_ = std::thread([this] { ioc_.run(); });
    return absl::OkStatus();
  }

 private:
  void FromServer() {
    tls_.async_read_some(asio::buffer(from_server_), [this](ErrorCode ec, std::size_t n) {
      ErrorCode ignored;
      if (ec) return (void)near_.shutdown(asio::socket_base::shutdown_send, ignored);
      asio::async_write(near_, asio::buffer(from_server_.data(), n), [this](ErrorCode ec, std::size_t) {
        if (!ec) FromServer();
      });
    });
  }

  // The client's end becomes a TCP FIN, as the server ends its own TLS side.
  void ToServer() {
    near_.async_read_some(asio::buffer(to_server_), [this](ErrorCode ec, std::size_t n) {
      ErrorCode ignored;
      if (ec) return (void)tls_.next_layer().shutdown(asio::socket_base::shutdown_send, ignored);
      asio::async_write(tls_, asio::buffer(to_server_.data(), n), [this](ErrorCode ec, std::size_t) {
        if (!ec) ToServer();
      });
    });
  }

  asio::io_context ioc_;
  asio::ssl::context context_;
  asio::ssl::stream<asio::ip::tcp::socket> tls_;
  asio::local::stream_protocol::socket near_;
  std::array<char, 64 << 10> from_server_{}, to_server_{};
  std::thread thread_;
};

absl::StatusOr<std::unique_ptr<TlsBridge>> TlsBridge::Connect(const Url& url, common::UniqueFd* plain) {
  auto impl = std::make_unique<Impl>();
  if (absl::Status s = impl->Connect(url, plain); !s.ok()) return s;
  return std::unique_ptr<TlsBridge>(new TlsBridge(std::move(impl)));
}

TlsBridge::TlsBridge(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TlsBridge::~TlsBridge() = default;

absl::StatusOr<UpgradeResponse> Upgrade(int fd, const std::string& request_head, std::string* leftover) {
  if (!WriteAll(fd, request_head)) return absl::UnavailableError("cannot send the request");
  std::string buffer;
  char chunk[4096];
  std::size_t end;
  while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n <= 0) return absl::UnavailableError("connection closed before the response");
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
  UpgradeResponse response;
  const std::vector<std::string> lines = absl::StrSplit(buffer.substr(0, end), "\r\n");
  const std::vector<std::string> status_line = absl::StrSplit(lines[0], ' ');
  if (status_line.size() < 2 || !absl::SimpleAtoi(status_line[1], &response.status)) {
    return absl::InternalError(absl::StrCat("bad status line: ", lines[0]));
  }
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::size_t colon = lines[i].find(':');
    if (colon == std::string::npos) continue;
    response.headers[absl::AsciiStrToLower(lines[i].substr(0, colon))].push_back(
        std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1))));
  }
  std::string rest = buffer.substr(end + 4);
  if (response.status != 101) {
    std::size_t length = 0;
    (void)absl::SimpleAtoi(response.Header("content-length"), &length);
    while (rest.size() < length) {
      const ssize_t n = ::read(fd, chunk, sizeof(chunk));
      if (n <= 0) break;
      rest.append(chunk, static_cast<std::size_t>(n));
    }
    response.body = rest;
    rest.clear();
  }
  if (leftover) *leftover = std::move(rest);
  return response;
}

// ---- SpdyClient -----------------------------------------------------------------------

class SpdyClient::Sink final : public spdy::FrameParser::Handler {
 public:
  explicit Sink(SpdyClient& client) : client_(client) {}
  void OnControl(spdy::ControlFrame frame) override {
    if (auto* reply = std::get_if<spdy::SynReply>(&frame)) {
      auto& s = client_.streams_[reply->stream_id];
      s.replied = true;
      Log("syn_reply", reply->stream_id);
      if (reply->flags & spdy::kFlagFin) {
        s.fin = true;
        Log("fin", reply->stream_id);
      }
    } else if (auto* rst = std::get_if<spdy::RstStream>(&frame)) {
      client_.streams_[rst->stream_id].reset = true;
      Log("rst", rst->stream_id);
    } else if (auto* ping = std::get_if<spdy::Ping>(&frame)) {
      client_.ping_echoes_.push_back(ping->id);
      Log("ping", ping->id);
    } else if (std::holds_alternative<spdy::GoAway>(frame)) {
      client_.goaway_ = true;
      client_.frame_log_.push_back("goaway");
    } else {
      client_.frame_log_.push_back(absl::StrCat("control type ", frame.index()));
    }
  }
  void OnData(uint32_t stream_id, std::string_view piece, bool fin) override {
    auto& s = client_.streams_[stream_id];
    s.data.append(piece);
    // Data in a row on one stream makes one entry, however it was framed.
    const std::string entry = Entry("data", stream_id);
    if (!piece.empty() && (client_.frame_log_.empty() || client_.frame_log_.back() != entry)) {
      client_.frame_log_.push_back(entry);
    }
    if (fin) {
      s.fin = true;
      Log("fin", stream_id);
    }
  }

 private:
  static std::string Entry(std::string_view what, uint32_t id) { return absl::StrCat(Av(what), " ", id); }
  void Log(std::string_view what, uint32_t id) { client_.frame_log_.push_back(Entry(what, id)); }

  SpdyClient& client_;
};

absl::StatusOr<std::unique_ptr<SpdyClient>> SpdyClient::Connect(const std::string& url,
                                                                const std::vector<std::string>& protocols,
                                                                UpgradeResponse* response_out,
                                                                const std::string& method) {
  absl::StatusOr<Url> parsed = ParseUrl(url);
  if (!parsed.ok()) return parsed.status();
  std::unique_ptr<TlsBridge> tls;
  common::UniqueFd fd;
  if (absl::StartsWith(Av(url), "https://")) {
    absl::StatusOr<std::unique_ptr<TlsBridge>> bridge = TlsBridge::Connect(*parsed, &fd);
    if (!bridge.ok()) return bridge.status();
    tls = std::move(*bridge);
  } else {
    absl::StatusOr<common::UniqueFd> dialed = Dial(*parsed);
    if (!dialed.ok()) return dialed.status();
    fd = std::move(*dialed);
  }
  std::string head = absl::StrCat(method, " ", parsed->target, " HTTP/1.1\r\nHost: ", parsed->host, ":", parsed->port,
                                  "\r\nUser-Agent: streamtest\r\nContent-Length: 0\r\nConnection: Upgrade\r\n"
                                  "Upgrade: SPDY/3.1\r\n");
  for (const std::string& p : protocols) absl::StrAppend(&head, "X-Stream-Protocol-Version: ", p, "\r\n");
  head += "\r\n";
  std::string leftover;
  absl::StatusOr<UpgradeResponse> response = Upgrade(fd.get(), head, &leftover);
  if (!response.ok()) return response.status();
  if (response_out) *response_out = *response;
  if (response->status != 101) {
    return absl::FailedPreconditionError(absl::StrCat("upgrade refused: ", response->status, " ", response->body));
  }
  auto client = std::make_unique<SpdyClient>(std::move(fd), std::move(leftover));
  client->tls_ = std::move(tls);
  client->protocol_ = response->Header("x-stream-protocol-version");
  return client;
}

SpdyClient::SpdyClient(common::UniqueFd fd, std::string leftover)
    : fd_(std::move(fd)), leftover_(std::move(leftover)), reader_([this] { ReadLoop(); }) {}

SpdyClient::~SpdyClient() {
  ::shutdown(fd_.get(), SHUT_RDWR);
  PauseReading(false);
  reader_.join();
}

void SpdyClient::ReadLoop() {
  spdy::FrameParser parser;
  Sink sink(*this);
  std::string first = std::exchange(leftover_, {});
  std::vector<char> buffer(256 << 10);
  for (;;) {
    std::string_view bytes;
    ssize_t n = 0;
    if (!first.empty()) {
      bytes = first;
    } else {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return !paused_; });
      }
      n = ::read(fd_.get(), buffer.data(), buffer.size());
      if (n <= 0) break;
      bytes = std::string_view(buffer.data(), static_cast<std::size_t>(n));
    }
    std::lock_guard<std::mutex> lock(mu_);
    const bool ok = parser.Feed(bytes, sink).ok();
    first.clear();
    cv_.notify_all();
    if (!ok) break;
  }
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

absl::Status SpdyClient::Send(const std::string& bytes) {
  if (!WriteAll(fd_.get(), bytes)) return absl::UnavailableError("connection closed");
  return absl::OkStatus();
}

absl::Status SpdyClient::SendSynStream(uint32_t id, const spdy::Headers& headers) {
  std::lock_guard<std::mutex> lock(write_mu_);
  spdy::SynStream syn;
  syn.stream_id = id;
  syn.headers = headers;
  return Send(writer_.SynStream(syn));
}

absl::StatusOr<uint32_t> SpdyClient::OpenStream(const spdy::Headers& headers, absl::Duration timeout) {
  uint32_t id;
  {
    std::lock_guard<std::mutex> lock(write_mu_);
    id = next_id_;
    next_id_ += 2;
  }
  if (absl::Status s = SendSynStream(id, headers); !s.ok()) return s;
  std::unique_lock<std::mutex> lock(mu_);
  const bool answered = cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [&] {
    const auto& s = streams_[id];
    return s.replied || s.reset || closed_;
  });
  if (!answered) return absl::DeadlineExceededError(absl::StrCat("no SYN_REPLY for stream ", id));
  if (!streams_[id].replied) return absl::UnavailableError(absl::StrCat("stream ", id, " was reset"));
  return id;
}

absl::Status SpdyClient::Write(uint32_t id, std::string_view data) {
  const auto header = spdy::FrameWriter::DataHeader(id, 0, static_cast<uint32_t>(data.size()));
  std::lock_guard<std::mutex> lock(write_mu_);
  std::string frame(header.begin(), header.end());
  frame.append(data);
  return Send(frame);
}

absl::Status SpdyClient::CloseStream(uint32_t id) {
  const auto header = spdy::FrameWriter::DataHeader(id, spdy::kFlagFin, 0);
  std::lock_guard<std::mutex> lock(write_mu_);
  return Send(std::string(header.begin(), header.end()));
}

absl::Status SpdyClient::ResetStream(uint32_t id) {
  std::lock_guard<std::mutex> lock(write_mu_);
  return Send(spdy::FrameWriter::RstStream(id, spdy::RstStatus::kCancel));
}

absl::Status SpdyClient::SendPing(uint32_t id) {
  std::lock_guard<std::mutex> lock(write_mu_);
  return Send(spdy::FrameWriter::Ping(id));
}

absl::Status SpdyClient::SendRaw(std::string_view bytes) {
  std::lock_guard<std::mutex> lock(write_mu_);
  return Send(std::string(bytes));
}

absl::StatusOr<std::string> SpdyClient::ReadSome(uint32_t id, absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const bool ready = cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [&] {
    const auto& s = streams_[id];
    return !s.data.empty() || s.fin || s.reset || closed_;
  });
  if (!ready) return absl::DeadlineExceededError(absl::StrCat("nothing on stream ", id));
  return std::exchange(streams_[id].data, {});
}

absl::StatusOr<std::string> SpdyClient::ReadAll(uint32_t id, absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const bool ended = cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [&] {
    const auto& s = streams_[id];
    return s.fin || s.reset || closed_;
  });
  if (!ended) {
    return absl::DeadlineExceededError(absl::StrCat("stream ", id, " did not end; got \"", streams_[id].data, "\""));
  }
  return std::exchange(streams_[id].data, {});
}

bool SpdyClient::WasReset(uint32_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  return streams_[id].reset;
}

std::vector<std::string> SpdyClient::FrameLog() {
  std::lock_guard<std::mutex> lock(mu_);
  return frame_log_;
}

void SpdyClient::PauseReading(bool paused) {
  std::lock_guard<std::mutex> lock(mu_);
  paused_ = paused;
  cv_.notify_all();
}

bool SpdyClient::WaitGoAway(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [&] { return goaway_; });
}

bool SpdyClient::WaitPingEcho(uint32_t id, absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [&] {
    return std::find(ping_echoes_.begin(), ping_echoes_.end(), id) != ping_echoes_.end();
  });
}

bool SpdyClient::WaitClosed(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [&] { return closed_; });
}

void SpdyClient::Close() {
  {
    std::lock_guard<std::mutex> lock(write_mu_);
    (void)Send(spdy::FrameWriter::GoAway(0, spdy::GoAwayStatus::kOk));
  }
  ::shutdown(fd_.get(), SHUT_RDWR);
}

// ---- WsClient -------------------------------------------------------------------------

// The WebSocket runs on its own io_context thread: one read always pending (so pings
// and the close frame are handled), writes queued one at a time.
class WsClient::Impl {
 public:
  using Ws = beast::websocket::stream<asio::ip::tcp::socket>;

  Impl() : ws_(ioc_) {}
  ~Impl() { Stop(); }

  absl::Status Handshake(const Url& url, const std::vector<std::string>& protocols, UpgradeResponse* response,
                         std::string* chosen) {
    ErrorCode ec;
    asio::ip::tcp::endpoint endpoint(asio::ip::make_address(url.host, ec), url.port);
    if (ec) return absl::InvalidArgumentError("bad host");
    ws_.next_layer().connect(endpoint, ec);
    if (ec) return absl::UnavailableError(ec.message());
    ws_.next_layer().set_option(asio::ip::tcp::no_delay(true));
    const std::string offer = absl::StrJoin(protocols, ", ");
    ws_.set_option(beast::websocket::stream_base::decorator([offer](beast::websocket::request_type& req) {
      if (!offer.empty()) req.set(beast::http::field::sec_websocket_protocol, offer);
    }));
    ws_.read_message_max(64 << 20);
    ws_.auto_fragment(false);
    beast::websocket::response_type res;
    ws_.handshake(res, absl::StrCat(url.host, ":", url.port), url.target, ec);
    if (response) {
      response->status = static_cast<int>(res.result_int());
      for (const auto& f : res) {
        response->headers[absl::AsciiStrToLower(std::string(f.name_string()))].push_back(std::string(f.value()));
      }
      response->body = res.body();
    }
    if (ec) return absl::FailedPreconditionError(absl::StrCat("handshake refused: ", res.result_int()));
    *chosen = std::string(res[beast::http::field::sec_websocket_protocol]);
    thread_ = std::thread([this] {
      ReadLoop();
      ioc_.run();
    });
    return absl::OkStatus();
  }

  // On the io thread, as every use of ws_.
  void ReadLoop() {
    reading_ = true;
    ws_.async_read(read_buffer_, [this](ErrorCode ec, std::size_t) {
      reading_ = false;
      std::lock_guard<std::mutex> lock(mu_);
      if (ec) {
        closed_ = true;
        close_code_ = ws_.reason().code;
        cv_.notify_all();
        return;
      }
      WsMessage m{ws_.got_text(), beast::buffers_to_string(read_buffer_.data())};
      read_buffer_.consume(read_buffer_.size());
      if (tunnel_) {
        auto data = std::make_shared<std::string>(std::move(m.data));
        asio::async_write(*tunnel_, asio::buffer(*data), [this, data](ErrorCode ec, std::size_t) {
          if (!ec) ReadLoop();
        });
        return;
      }
      messages_.push_back(std::move(m));
      cv_.notify_all();
      if (!paused_) ReadLoop();
    });
  }

  void PauseReading(bool paused) {
    asio::post(ioc_, [this, paused] {
      paused_ = paused;
      if (!paused_ && !reading_) ReadLoop();
    });
  }

  absl::Status Send(std::string message, bool binary) {
    std::promise<ErrorCode> done;
    asio::post(ioc_, [&] {
      ws_.binary(binary);
      ws_.async_write(asio::buffer(message), [&](ErrorCode ec, std::size_t) { done.set_value(ec); });
    });
    const ErrorCode ec = done.get_future().get();
    if (ec) return absl::UnavailableError(ec.message());
    return absl::OkStatus();
  }

  absl::StatusOr<WsMessage> Receive(absl::Duration timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [&] { return !messages_.empty() || closed_; })) {
      return absl::DeadlineExceededError("no message");
    }
    if (messages_.empty()) return absl::UnavailableError(absl::StrCat("closed with code ", close_code_));
    WsMessage m = std::move(messages_.front());
    messages_.pop_front();
    return m;
  }

  int close_code() {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_ ? close_code_ : -1;
  }

  void Ping() {
    asio::post(ioc_, [this] {
      ws_.control_callback([this](beast::websocket::frame_type kind, beast::string_view) {
        if (kind != beast::websocket::frame_type::pong) return;
        std::lock_guard<std::mutex> lock(mu_);
        pongs_++;
        cv_.notify_all();
      });
      ws_.async_ping({}, [](ErrorCode) {});
    });
  }

  bool WaitPong(absl::Duration timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [&] { return pongs_ > 0; });
  }

  void Close() {
    std::promise<void> done;
    asio::post(ioc_, [&] {
      ws_.async_close(beast::websocket::close_code::normal, [&](ErrorCode) { done.set_value(); });
    });
    done.get_future().wait_for(std::chrono::seconds(5));
  }

  // Carries the bytes of `near`'s peer as binary messages, both ways.
  common::UniqueFd StartTunnel() {
    int pair[2];
    ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair);
    std::promise<void> done;
    asio::post(ioc_, [&] {
      tunnel_ = std::make_unique<asio::local::stream_protocol::socket>(ioc_);
      tunnel_->assign(asio::local::stream_protocol(), pair[1]);
      ForwardTunnel();
      done.set_value();
    });
    done.get_future().wait();
    return common::UniqueFd(pair[0]);
  }

  void ForwardTunnel() {
    tunnel_->async_read_some(asio::buffer(tunnel_buffer_), [this](ErrorCode ec, std::size_t n) {
      if (ec) {
        ws_.async_close(beast::websocket::close_code::normal, [](ErrorCode) {});
        return;
      }
      auto data = std::make_shared<std::string>(tunnel_buffer_.data(), n);
      ws_.binary(true);
      ws_.async_write(asio::buffer(*data), [this, data](ErrorCode ec, std::size_t) {
        if (!ec) ForwardTunnel();
      });
    });
  }

  void Stop() {
    ioc_.stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  asio::io_context ioc_;
  // Keeps the thread up while no read is pending (paused).
  asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(ioc_);
  Ws ws_;
  beast::flat_buffer read_buffer_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<WsMessage> messages_;
  bool closed_ = false;
  int close_code_ = 0;
  int pongs_ = 0;
  bool reading_ = false, paused_ = false;  // io thread only
  std::unique_ptr<asio::local::stream_protocol::socket> tunnel_;
  std::array<char, 64 << 10> tunnel_buffer_{};
};

absl::StatusOr<std::unique_ptr<WsClient>> WsClient::Connect(const std::string& url,
                                                            const std::vector<std::string>& protocols,
                                                            UpgradeResponse* response) {
  absl::StatusOr<Url> parsed = ParseUrl(url);
  if (!parsed.ok()) return parsed.status();
  auto impl = std::make_unique<Impl>();
  std::string chosen;
  if (absl::Status s = impl->Handshake(*parsed, protocols, response, &chosen); !s.ok()) return s;
  auto client = std::unique_ptr<WsClient>(new WsClient(std::move(impl)));
  client->protocol_ = chosen;
  return client;
}

WsClient::WsClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WsClient::~WsClient() = default;
absl::Status WsClient::Send(std::string_view message, bool binary) { return impl_->Send(std::string(message), binary); }
absl::StatusOr<WsMessage> WsClient::Receive(absl::Duration timeout) { return impl_->Receive(timeout); }
int WsClient::close_code() { return impl_->close_code(); }
void WsClient::Ping() { impl_->Ping(); }
void WsClient::PauseReading(bool paused) { impl_->PauseReading(paused); }
bool WsClient::WaitPong(absl::Duration timeout) { return impl_->WaitPong(timeout); }
void WsClient::Close() { impl_->Close(); }

common::UniqueFd WsClient::StartTunnel() { return impl_->StartTunnel(); }

}  // namespace streamtest
