// The metrics listener: /metrics in the text format, /healthz 200 or 503 with the
// reason, 404/405, keep-alive, and the bind address rules.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "observability/http_server.h"

namespace observability {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using ::testing::HasSubstr;

// A blocking HTTP/1.1 client on one keep-alive connection.
class Client {
 public:
  explicit Client(const std::string& address) : socket_(ioc_) {
    const std::size_t colon = address.rfind(':');
    socket_.connect(tcp::endpoint(asio::ip::make_address(address.substr(0, colon)),
                                  static_cast<uint16_t>(std::stoi(address.substr(colon + 1)))));
  }
  http::response<http::string_body> Send(http::verb verb, const std::string& target) {
    http::request<http::empty_body> req(verb, target, 11);
    req.set(http::field::host, "test");
    req.keep_alive(true);
    http::write(socket_, req);
    http::response_parser<http::string_body> parser;
    if (verb == http::verb::head) parser.skip(true);
    http::read(socket_, buffer_, parser);
    return parser.release();
  }

 private:
  asio::io_context ioc_;
  tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

TEST(MetricsAddress, ParsesHostPortAndDefaultsToLoopback) {
  auto local = ParseMetricsAddress(":9090");
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(local->address().to_string(), "127.0.0.1");
  EXPECT_EQ(local->port(), 9090);
  auto any = ParseMetricsAddress("0.0.0.0:0");
  ASSERT_TRUE(any.ok());
  EXPECT_TRUE(any->address().is_unspecified());
  auto v6 = ParseMetricsAddress("[::1]:10250");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->address().to_string(), "::1");
  for (const char* bad : {"9090", "localhost:9090", "127.0.0.1:99999", "127.0.0.1:", "::1:80", "1.2.3.4:x", ""}) {
    auto parsed = ParseMetricsAddress(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(parsed.status())) << bad;
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("is not host:port")) << bad;
  }
}

TEST(MetricsServer, ServesMetricsAndHealth) {
  Registry registry;
  registry.AddCounter("things_total", "Things.").With({}).Inc(7);
  std::atomic<bool> healthy{true};
  auto server = MetricsServer::Start("127.0.0.1:0", registry, [&] {
    return healthy ? absl::OkStatus() : absl::UnavailableError("Docker does not answer: connection refused");
  });
  ASSERT_TRUE(server.ok()) << server.status();
  Client client((*server)->address());

  auto metrics = client.Send(http::verb::get, "/metrics");
  EXPECT_EQ(metrics.result_int(), 200);
  EXPECT_EQ(metrics[http::field::content_type], "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(metrics.body(), "# HELP things_total Things.\n# TYPE things_total counter\nthings_total 7\n");

  auto health = client.Send(http::verb::get, "/healthz");  // same connection
  EXPECT_EQ(health.result_int(), 200);
  EXPECT_EQ(health.body(), "ok\n");
  healthy = false;
  health = client.Send(http::verb::get, "/healthz");
  EXPECT_EQ(health.result_int(), 503);
  EXPECT_EQ(health.body(), "Docker does not answer: connection refused\n");

  auto head = client.Send(http::verb::head, "/metrics");
  EXPECT_EQ(head.result_int(), 200);
  EXPECT_EQ(client.Send(http::verb::get, "/other").result_int(), 404);
  EXPECT_EQ(client.Send(http::verb::post, "/metrics").result_int(), 405);
  (*server)->Stop();
  (*server)->Stop();  // idempotent
}

TEST(MetricsServer, PortInUseIsAClearError) {
  Registry registry;
  auto first = MetricsServer::Start("127.0.0.1:0", registry, [] { return absl::OkStatus(); });
  ASSERT_TRUE(first.ok());
  auto second = MetricsServer::Start((*first)->address(), registry, [] { return absl::OkStatus(); });
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(absl::IsUnavailable(second.status()));
  EXPECT_THAT(std::string(second.status().message()), HasSubstr("cannot listen on " + (*first)->address()));
}

TEST(Health, NeedsTheServerUpAndDockerAnswering) {
  absl::Status ping = absl::OkStatus();
  Health health([&] { return ping; });
  EXPECT_EQ(health.Check().message(), "the CRI server is not serving");
  health.SetServing(true);
  EXPECT_TRUE(health.Check().ok());
  ping = absl::UnavailableError("cannot connect to unix:///var/run/docker.sock");
  EXPECT_EQ(health.Check().message(), "Docker does not answer: cannot connect to unix:///var/run/docker.sock");
}

}  // namespace
}  // namespace observability
