#pragma once
// The streaming server: the URLs Exec, Attach and PortForward return lead here. An
// HTTP/1.1 server on Boost.Beast with its own io_context and threads, and worker
// threads for the runtime's blocking calls. Each request carries a one-time token;
// the server upgrades it to SPDY/3.1 or WebSocket and serves the exec, attach or
// port-forward the token stands for (PROTOCOLS.md has the wire facts).
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "streaming/request_cache.h"
#include "streaming/runtime.h"

namespace streaming {

struct ServerOptions {
  // host:port, [v6]:port, or a host alone (port 0: the kernel picks one).
  std::string bind_address = "127.0.0.1:0";
  // Both or neither: TLS with this certificate chain and key (PEM).
  std::string tls_cert_file, tls_key_file;
  absl::Duration idle_timeout = absl::Hours(4);             // of an upgraded session; zero disables
  absl::Duration stream_creation_timeout = absl::Seconds(30);
  absl::Duration request_timeout = absl::Seconds(30);  // for the HTTP request before the upgrade
  int io_threads = 2;
  int worker_threads = 4;
  std::size_t max_connections = 1024;  // more are answered 503
  RequestCache::Options cache;
};

// "127.0.0.1:0" -> endpoint; INVALID_ARGUMENT with the reason otherwise.
absl::StatusOr<boost::asio::ip::tcp::endpoint> ParseBindAddress(std::string_view address);
// The base URL for a listener on `endpoint`: an unspecified address (0.0.0.0, ::)
// is advertised as the loopback address of its family, the kubelet's own host.
std::string BaseUrlFor(const boost::asio::ip::tcp::endpoint& endpoint, bool tls);

// The ports of a WebSocket port-forward from its query ("port=80&port=81,82"), for
// clients that name them there rather than in the CRI request.
absl::StatusOr<std::vector<uint16_t>> PortsFromQuery(std::string_view query);

class Server final : public UrlIssuer {
 public:
  // Binds and starts serving. `runtime` must outlive the server.
  static absl::StatusOr<std::unique_ptr<Server>> Start(ServerOptions options, Runtime& runtime);
  ~Server() override;

  // Stops accepting, ends every session (an exec still running is killed), and joins
  // every thread. Idempotent; the destructor calls it.
  void Stop();

  // "http://127.0.0.1:43615" (https with TLS).
  const std::string& base_url() const;
  absl::StatusOr<std::string> IssueUrl(Request req) override;
  // Connections being served (before and after their upgrade).
  std::size_t active_connections() const;

  class Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace streaming
