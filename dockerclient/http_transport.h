#pragma once
// HTTP/1.1 to dockerd over its unix socket (Boost.Beast), with a pool of keep-alive
// connections. Thread-safe: each call borrows a connection for its whole exchange.
// Every call honours the caller's deadline and cancellation.
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/context.h"
#include "common/unique_fd.h"

namespace dockerclient {

// One pooled socket; defined in http_transport.cc.
struct HttpConnection;

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lowercase names; repeats joined by ", "
  std::string body;
};

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// The answer to HttpTransport::Hijack.
struct HijackResponse {
  HttpResponse response;  // status and headers; the body too when the connection was not handed over
  // The handed-over connection, in blocking mode and close-on-exec; invalid otherwise.
  common::UniqueFd fd;
  std::string buffered;  // bytes read past the response header of the handed-over connection
};

class HttpTransport {
 public:
  // `socket_path` is dialled; `endpoint` ("unix:///var/run/docker.sock") names it in errors.
  HttpTransport(std::string socket_path, std::string endpoint, std::size_t max_idle_connections = 16);
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // Sends one request and reads the whole response. Any HTTP status is a success here;
  // errors are transport failures (UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED, INTERNAL).
  absl::StatusOr<HttpResponse> Request(const common::Context& ctx, std::string_view method, std::string_view target,
                                       std::string_view body = {}, const HttpHeaders& headers = {});

  // Like Request, but a 2xx body is handed to `on_data` piece by piece as it arrives
  // (the returned body stays empty); a non-2xx body is returned whole instead. Fails
  // with DEADLINE_EXCEEDED ("no progress for ...") when no byte arrives for `idle_timeout`.
  absl::StatusOr<HttpResponse> Stream(const common::Context& ctx, std::string_view method, std::string_view target,
                                      std::string_view body, const HttpHeaders& headers, absl::Duration idle_timeout,
                                      const std::function<void(std::string_view)>& on_data);

  // Like Request, but asks dockerd to hand the connection over to a process's stdio
  // (`Connection: Upgrade`, `Upgrade: tcp`, as for attach and exec start). On
  // "101 UPGRADED", or a 2xx whose body runs until EOF (the raw stream, as engines
  // answer that ignore the upgrade), the connection leaves the transport for good as
  // `fd`; any other answer is read whole into `response`. The context bounds only the
  // exchange up to the response header.
  absl::StatusOr<HijackResponse> Hijack(const common::Context& ctx, std::string_view method, std::string_view target,
                                        std::string_view body = {}, const HttpHeaders& headers = {});

  const std::string& endpoint() const { return endpoint_; }

 private:
  // A non-null `hijack` receives the connection when dockerd hands it over.
  absl::StatusOr<HttpResponse> Do(const common::Context& ctx, std::string_view method, std::string_view target,
                                  std::string_view body, const HttpHeaders& headers, absl::Duration idle_timeout,
                                  const std::function<void(std::string_view)>* on_data, HijackResponse* hijack);
  // A live idle connection from the pool, or nullptr when there is none.
  std::unique_ptr<HttpConnection> TakeIdle();
  absl::StatusOr<std::unique_ptr<HttpConnection>> Dial(const common::Context& ctx, std::string_view operation);
  void Release(std::unique_ptr<HttpConnection> conn);

  const std::string socket_path_;
  const std::string endpoint_;
  const std::size_t max_idle_;
  std::mutex mu_;
  std::vector<std::unique_ptr<HttpConnection>> idle_;  // guarded by mu_; most recently used last
};

}  // namespace dockerclient
