#include "dockerclient/http_transport.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/no_wait.h"
#include "common/status.h"
#include "common/strings.h"
#include "dockerclient/errors.h"
#include "observability/hooks.h"

namespace dockerclient {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using UnixSocket = asio::local::stream_protocol;

// A socket with its own io_context: the calling thread drives only its own I/O, in
// slices, so it can give up at any slice boundary without touching other calls.
// A hijack (attach/exec) reads the response header the same way, then moves the
// socket and the bytes already read into `buffer` out of the connection.
struct HttpConnection {
  asio::io_context ioc{1};
  UnixSocket::socket socket{ioc};
  beast::flat_buffer buffer;
};

namespace {

using OnData = std::function<void(std::string_view)>;

enum class Wait { kDone, kCancelled, kDeadline, kIdle };

constexpr absl::Duration kSlice = absl::Milliseconds(50);
constexpr std::size_t kChunkSize = 16 * 1024;

using common::Av;

// Beast's string_view is a third type, next to std's and Debian abseil's.
beast::string_view Bv(std::string_view s) { return {s.data(), s.size()}; }
std::string_view Sv(beast::string_view s) { return {s.data(), s.size()}; }

// Go's time.Duration format ("1m0s", "1.5s", "200ms"), as cri-dockerd's flags print it.
std::string GoDuration(absl::Duration d) {
  if (d < absl::Seconds(1)) return absl::FormatDuration(d);
  const int64_t ms = absl::ToInt64Milliseconds(d);
  const int64_t hours = ms / 3'600'000, minutes = ms / 60'000 % 60;
  std::string out;
  if (hours > 0) absl::StrAppend(&out, hours, "h");
  if (hours > 0 || minutes > 0) absl::StrAppend(&out, minutes, "m");
  absl::StrAppend(&out, static_cast<double>(ms % 60'000) / 1000.0, "s");
  return out;
}

// Drives the connection's I/O until `done`, in short slices so that cancellation and the
// deadlines are noticed within ~50ms. On anything but kDone the socket is closed and the
// aborted operation drained (its handler has run), so the connection must be discarded.
Wait Await(HttpConnection& c, const common::Context& ctx, absl::Time idle_deadline, const bool& done) {
  while (!done) {
    const absl::Time now = absl::Now();
    Wait why = Wait::kDone;
    if (ctx.Cancelled()) {
      why = Wait::kCancelled;
    } else if (now >= ctx.deadline) {
      why = Wait::kDeadline;
    } else if (now >= idle_deadline) {
      why = Wait::kIdle;
    }
    if (why != Wait::kDone) {
      boost::system::error_code ignored;
      c.socket.close(ignored);
      c.ioc.restart();
      c.ioc.run();
      return why;
    }
    const absl::Duration slice =
        std::max(absl::Milliseconds(1), std::min({kSlice, ctx.deadline - now, idle_deadline - now}));
    c.ioc.run_for(absl::ToChronoMicroseconds(slice));
  }
  return Wait::kDone;
}

// Starts one asynchronous operation through `start(handler)` and waits for it.
template <typename Start>
Wait RunOp(HttpConnection& c, const common::Context& ctx, absl::Time idle_deadline, beast::error_code& ec,
           Start&& start) {
  bool done = false;
  c.ioc.restart();
  start([&ec, &done](beast::error_code e, auto&&...) {
    ec = e;
    done = true;
  });
  return Await(c, ctx, idle_deadline, done);
}

absl::Status WaitError(Wait why, std::string_view operation, absl::Duration idle_timeout) {
  switch (why) {
    case Wait::kCancelled: return CancelledError(operation);
    case Wait::kIdle:
      return absl::DeadlineExceededError(
          absl::StrCat(Av(operation), ": no progress for ", GoDuration(idle_timeout), ", cancelled"));
    default: return DeadlineError(operation);
  }
}

bool IsConnectionLoss(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == http::error::partial_message || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe || ec == asio::error::connection_aborted;
}

absl::Status ReadError(const beast::error_code& ec, std::string_view endpoint, std::string_view operation) {
  if (!IsConnectionLoss(ec) && ec.category() == http::make_error_code(http::error::bad_version).category()) {
    return absl::InternalError(absl::StrCat(Av(operation), ": malformed HTTP response from dockerd: ", ec.message()));
  }
  return ConnectError(endpoint, absl::StrCat(Av(operation), ": ", ec.message()));
}

// Whether a pooled connection can carry a new request: a peer that closed it while
// idle makes it readable (EOF), and stray bytes would corrupt the next response.
bool StillOpen(HttpConnection& c) {
  if (c.buffer.size() != 0) return false;
  char byte;
  const ssize_t n = ::recv(c.socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

// Whether dockerd handed the connection over: "101 UPGRADED", or a 2xx raw stream that
// runs until EOF.
template <typename Parser>
bool HandsOver(int status, const Parser& parser) {
  return status == 101 || (status / 100 == 2 && parser.need_eof());
}

// Moves the socket out of `c` into `hijack`, with the bytes read past the header. The
// socket goes back to blocking mode (asio set it non-blocking for its own use).
absl::Status TakeSocket(HttpConnection& c, HijackResponse& hijack, std::string_view operation) {
  boost::system::error_code ec;
  c.socket.non_blocking(false, ec);
  if (!ec) hijack.fd.Reset(c.socket.release(ec));
  if (ec) return absl::InternalError(absl::StrCat(Av(operation), ": cannot take over the connection: ", ec.message()));
  hijack.buffered = beast::buffers_to_string(c.buffer.data());
  return absl::OkStatus();
}

struct Outcome {
  absl::StatusOr<HttpResponse> response;
  bool keep_alive = false;  // the connection may serve another request
  bool retryable = false;   // failed before dockerd could have acted on the request
};

Outcome Exchange(HttpConnection& c, std::string_view endpoint, const common::Context& ctx,
                 const http::request<http::string_body>& req, std::string_view operation, absl::Duration idle_timeout,
                 const OnData* on_data, HijackResponse* hijack) {
  Outcome out;
  beast::error_code ec;
  Wait why = RunOp(c, ctx, absl::InfiniteFuture(), ec,
                   [&](auto handler) { http::async_write(c.socket, req, std::move(handler)); });
  if (why != Wait::kDone) {
    out.response = WaitError(why, operation, idle_timeout);
    return out;
  }
  if (ec) {
    // A request that could not be written whole was never acted on.
    out.retryable = true;
    out.response = ConnectError(endpoint, absl::StrCat(Av(operation), ": ", ec.message()));
    return out;
  }

  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);  // lists and pull streams have no natural bound
  if (req.method() == http::verb::head) parser.skip(true);
  why = RunOp(c, ctx, absl::Now() + idle_timeout, ec,
              [&](auto handler) { http::async_read_header(c.socket, c.buffer, parser, std::move(handler)); });
  if (why != Wait::kDone) {
    out.response = WaitError(why, operation, idle_timeout);
    return out;
  }
  if (ec) {
    // The peer closed a pooled connection just as we sent: safe to resend only what
    // is idempotent, since dockerd may have acted on it.
    const http::verb m = req.method();
    out.retryable = !parser.got_some() && IsConnectionLoss(ec) &&
                    (m == http::verb::get || m == http::verb::head || m == http::verb::delete_);
    out.response = ReadError(ec, endpoint, operation);
    return out;
  }

  HttpResponse response;
  response.status = static_cast<int>(parser.get().result_int());
  for (const auto& field : parser.get()) {
    const absl::string_view value = Av(Sv(field.value()));
    auto [it, inserted] = response.headers.emplace(absl::AsciiStrToLower(Av(Sv(field.name_string()))), value);
    if (!inserted) absl::StrAppend(&it->second, ", ", value);
  }
  if (hijack != nullptr && HandsOver(response.status, parser)) {
    if (absl::Status taken = TakeSocket(c, *hijack, operation); !taken.ok()) {
      out.response = std::move(taken);
    } else {
      out.response = std::move(response);
    }
    return out;  // never pooled
  }

  const bool deliver = on_data != nullptr && response.status / 100 == 2;
  std::array<char, kChunkSize> chunk;
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    why = RunOp(c, ctx, absl::Now() + idle_timeout, ec,
                [&](auto handler) { http::async_read_some(c.socket, c.buffer, parser, std::move(handler)); });
    if (why != Wait::kDone) {
      out.response = WaitError(why, operation, idle_timeout);
      return out;
    }
    if (ec == http::error::need_buffer) ec = {};
    if (ec) {
      out.response = ReadError(ec, endpoint, operation);
      return out;
    }
    const std::string_view piece(chunk.data(), chunk.size() - parser.get().body().size);
    if (piece.empty()) continue;
    if (deliver) {
      (*on_data)(piece);
    } else {
      response.body.append(piece);
    }
  }
  out.keep_alive = parser.keep_alive();
  out.response = std::move(response);
  return out;
}

}  // namespace

HttpTransport::HttpTransport(std::string socket_path, std::string endpoint, std::size_t max_idle_connections)
    : socket_path_(std::move(socket_path)), endpoint_(std::move(endpoint)), max_idle_(max_idle_connections) {}

HttpTransport::~HttpTransport() = default;

absl::StatusOr<HttpResponse> HttpTransport::Request(const common::Context& ctx, std::string_view method,
                                                    std::string_view target, std::string_view body,
                                                    const HttpHeaders& headers) {
  return Do(ctx, method, target, body, headers, absl::InfiniteDuration(), nullptr, nullptr);
}

absl::StatusOr<HttpResponse> HttpTransport::Stream(const common::Context& ctx, std::string_view method,
                                                   std::string_view target, std::string_view body,
                                                   const HttpHeaders& headers, absl::Duration idle_timeout,
                                                   const OnData& on_data) {
  return Do(ctx, method, target, body, headers, idle_timeout, &on_data, nullptr);
}

absl::StatusOr<HijackResponse> HttpTransport::Hijack(const common::Context& ctx, std::string_view method,
                                                     std::string_view target, std::string_view body,
                                                     const HttpHeaders& headers) {
  HttpHeaders upgrade = headers;
  upgrade.emplace_back("Connection", "Upgrade");
  upgrade.emplace_back("Upgrade", "tcp");
  HijackResponse hijack;
  ASSIGN_OR_RETURN(hijack.response,
                   Do(ctx, method, target, body, upgrade, absl::InfiniteDuration(), nullptr, &hijack));
  return hijack;
}

absl::StatusOr<HttpResponse> HttpTransport::Do(const common::Context& ctx, std::string_view method,
                                               std::string_view target, std::string_view body,
                                               const HttpHeaders& headers, absl::Duration idle_timeout,
                                               const OnData* on_data, HijackResponse* hijack) {
  // Errors name the request without its query, which may be long.
  const std::string operation = absl::StrCat(Av(method), " ", Av(target.substr(0, target.find('?'))));
  if (!common::MayWait()) return common::WouldWait(operation);
  const http::verb verb = http::string_to_verb(Bv(method));
  if (verb == http::verb::unknown) {
    return absl::InvalidArgumentError(absl::StrCat(operation, ": unsupported HTTP method"));
  }
  http::request<http::string_body> req{verb, Bv(target), 11};
  req.set(http::field::host, "docker");
  req.set(http::field::user_agent, "dockershim");
  for (const auto& [name, value] : headers) req.set(Bv(name), Bv(value));
  if (!body.empty()) {
    if (req.find(http::field::content_type) == req.end()) req.set(http::field::content_type, "application/json");
    req.body() = std::string(body);
  }
  req.prepare_payload();

  observability::DockerCall observed(method, target, body, headers);
  // One retry, on a fresh connection, for a pooled one that turned out to be closed.
  for (int attempt = 0;; ++attempt) {
    std::unique_ptr<HttpConnection> conn = attempt == 0 ? TakeIdle() : nullptr;
    const bool reused = conn != nullptr;
    if (!conn) {
      ASSIGN_OR_RETURN(conn, Dial(ctx, operation));
    }
    Outcome out = Exchange(*conn, endpoint_, ctx, req, operation, idle_timeout, on_data, hijack);
    if (out.response.ok()) {
      LOG_DEBUG << operation << " -> " << out.response->status;
      if (out.keep_alive) Release(std::move(conn));
      return observed.Done(std::move(out.response));
    }
    if (!reused || !out.retryable || attempt > 0) return observed.Done(std::move(out.response));
    LOG_DEBUG << operation << ": pooled connection was closed by dockerd, retrying on a new one";
  }
}

std::unique_ptr<HttpConnection> HttpTransport::TakeIdle() {
  std::lock_guard<std::mutex> lock(mu_);
  while (!idle_.empty()) {
    std::unique_ptr<HttpConnection> conn = std::move(idle_.back());
    idle_.pop_back();
    if (StillOpen(*conn)) return conn;
  }
  return nullptr;
}

absl::StatusOr<std::unique_ptr<HttpConnection>> HttpTransport::Dial(const common::Context& ctx,
                                                                    std::string_view operation) {
  // The endpoint constructor would throw on a path that does not fit sockaddr_un.
  if (socket_path_.size() >= sizeof(sockaddr_un::sun_path)) {
    return ConnectError(endpoint_, "socket path too long");
  }
  auto conn = std::make_unique<HttpConnection>();
  // An empty flat_buffer makes Beast read 512 bytes per syscall; typical Docker
  // answers (inspect, lists) fit in one read with room reserved up front.
  conn->buffer.reserve(64 * 1024);
  beast::error_code ec;
  // Close-on-exec, so that CNI plugins and other children do not hold dockerd
  // connections, above all hijacked ones, open after the shim closes them.
  conn->socket.open(UnixSocket(), ec);
  if (ec || ::fcntl(conn->socket.native_handle(), F_SETFD, FD_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat(Av(operation), ": cannot create a socket: ",
                                            ec ? ec.message() : std::strerror(errno)));
  }
  const Wait why = RunOp(*conn, ctx, absl::InfiniteFuture(), ec, [&](auto handler) {
    conn->socket.async_connect(UnixSocket::endpoint(socket_path_), std::move(handler));
  });
  if (why != Wait::kDone) return WaitError(why, operation, absl::InfiniteDuration());
  if (ec) return ConnectError(endpoint_, ec.message());
  return conn;
}

void HttpTransport::Release(std::unique_ptr<HttpConnection> conn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < max_idle_) idle_.push_back(std::move(conn));
}

}  // namespace dockerclient
