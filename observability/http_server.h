#pragma once
// The metrics listener (--metrics-bind-addr): GET /metrics (Prometheus text format)
// and GET /healthz, over plain HTTP/1.1 with keep-alive. One thread; a slow or idle
// client is dropped after 30 s, and at most 64 connections are served at once.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "observability/metrics.h"

namespace observability {

// "host:port" or "[v6]:port"; a bare ":port" means 127.0.0.1 (metrics stay local
// unless asked otherwise). Port 0 picks a free one.
absl::StatusOr<boost::asio::ip::tcp::endpoint> ParseMetricsAddress(std::string_view address);

class MetricsServer {
 public:
  // OK when healthy, else the reason, which /healthz answers with 503. It runs on the
  // server's thread: it must be bounded in time.
  using HealthCheck = std::function<absl::Status()>;

  // Listens on `address` (ParseMetricsAddress); INVALID_ARGUMENT or UNAVAILABLE
  // (cannot listen) name the address.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(std::string_view address, const Registry& registry,
                                                              HealthCheck health);
  ~MetricsServer();  // Stop()
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // The bound address, "127.0.0.1:9090".
  std::string address() const;
  // Closes the listener and every connection, joins the thread. Idempotent.
  void Stop();

  class Connection;

 private:
  MetricsServer(const Registry& registry, HealthCheck health);
  void Accept();

  const Registry& registry_;
  const HealthCheck health_;
  std::atomic<int> connections_{0};  // outlives ioc_, whose handlers hold connections
  boost::asio::io_context ioc_{1};
  boost::asio::ip::tcp::acceptor acceptor_{ioc_};
  boost::asio::steady_timer retry_{ioc_};
  std::thread thread_;
};

// Whether the shim serves: the CRI server is up and Docker answers a ping.
class Health {
 public:
  // `ping` asks Docker (bounded in time).
  explicit Health(std::function<absl::Status()> ping) : ping_(std::move(ping)) {}
  void SetServing(bool serving) { serving_ = serving; }
  absl::Status Check() const;

 private:
  std::function<absl::Status()> ping_;
  std::atomic<bool> serving_{false};
};

}  // namespace observability
