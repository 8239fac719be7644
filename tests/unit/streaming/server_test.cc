// The server's HTTP side: URLs and tokens, routing, SPDY negotiation, limits,
// shutdown, idle timeout and TLS.
#include "streaming/server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/unit/streaming/streaming_fixture.h"

namespace streaming {
namespace {

using streamtest::SpdyClient;
using streamtest::UpgradeResponse;
using streamtest::WsClient;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

const ExecRequest kExec = Exec({Io::kStdout});

// The answer to a SPDY upgrade of `url` offering `protocols`.
UpgradeResponse SpdyUpgrade(const std::string& url, const std::vector<std::string>& protocols,
                            const std::string& method = "POST") {
  UpgradeResponse response;
  (void)SpdyClient::Connect(url, protocols, &response, method);
  return response;
}

// As Go's http.NotFound answers.
void ExpectNotFound(const UpgradeResponse& response) {
  EXPECT_EQ(response.status, 404);
  EXPECT_EQ(response.body, "404 page not found\n");
  EXPECT_EQ(response.Header("content-length"), absl::StrCat(response.body.size()));
  EXPECT_EQ(response.Header("content-type"), "text/plain; charset=utf-8");
  EXPECT_EQ(response.Header("x-content-type-options"), "nosniff");
}

// Runs an exec whose process writes "hi" and exits 0: true if the client saw all of it.
bool ExecRoundTrip(const std::string& url) {
  absl::StatusOr<std::unique_ptr<SpdyClient>> client = SpdyClient::Connect(url, kClientGoProtocols);
  if (!client.ok()) return false;
  const std::vector<uint32_t> ids = OpenStreams(**client, {"error", "stdout"});
  if (ids.size() != 2) return false;
  absl::StatusOr<std::string> out = (*client)->ReadAll(ids[1], kWait);
  absl::StatusOr<std::string> status = (*client)->ReadAll(ids[0], kWait);
  return out.ok() && *out == "hi" && status.ok() && *status == kSuccessStatus;
}

void ExitWithHi(streamtest::FakeProcess& process) {
  process.Stdout("hi");
  process.Exit(0);
}

// ---- URLs, tokens and routes ------------------------------------------------------------

class ServerTest : public StreamingTest {
 protected:
  void SetUp() override { StartServer(); }
};

TEST_F(ServerTest, IssuesOneTimeUrlsPerKind) {
  const std::string base = server_->base_url();
  EXPECT_THAT(base, MatchesRegex("http://127\\.0\\.0\\.1:[0-9]+"));
  EXPECT_NE(base, "http://127.0.0.1:0");
  const std::string token = "[A-Za-z0-9_-]{22}";
  EXPECT_THAT(Url(kExec), MatchesRegex(base + "/exec/" + token));
  EXPECT_THAT(Url(Attach({Io::kStdout})), MatchesRegex(base + "/attach/" + token));
  EXPECT_THAT(Url(PortForward()), MatchesRegex(base + "/portforward/" + token));
  EXPECT_NE(Url(kExec), Url(kExec));
}

TEST_F(ServerTest, UnknownTokenOrPathIsNotFound) {
  ExpectNotFound(SpdyUpgrade(server_->base_url() + "/exec/AAAAAAAAAAAAAAAAAAAAAA", {kV4}));
  ExpectNotFound(SpdyUpgrade(server_->base_url() + "/exec/", {kV4}));
  ExpectNotFound(SpdyUpgrade(server_->base_url() + "/shell/AAAAAAAAAAAAAAAAAAAAAA", {kV4}));
  ExpectNotFound(SpdyUpgrade(server_->base_url() + "/", {kV4}));
}

TEST_F(ServerTest, TokenServesOnce) {
  const std::string url = Url(kExec);
  EXPECT_EQ(SpdyUpgrade(url, {kV4}).status, 101);
  ExpectNotFound(SpdyUpgrade(url, {kV4}));
}

TEST_F(ServerTest, TokenOnTheWrongEndpointIsNotFoundAndSpent) {
  const std::string url = Url(kExec);
  const std::string token = url.substr(url.rfind('/') + 1);
  ExpectNotFound(SpdyUpgrade(server_->base_url() + "/attach/" + token, {kV4}));
  ExpectNotFound(SpdyUpgrade(url, {kV4}));
}

TEST_F(ServerTest, OtherMethodsAreNotAllowed) {
  const UpgradeResponse put = SpdyUpgrade(Url(kExec), {kV4}, "PUT");
  EXPECT_EQ(put.status, 405);
  EXPECT_EQ(put.body, "405: Method Not Allowed");
  EXPECT_EQ(put.Header("allow"), "GET, POST");
  EXPECT_EQ(put.Header("content-length"), absl::StrCat(put.body.size()));
  // A GET works as a POST does.
  EXPECT_EQ(SpdyUpgrade(Url(kExec), {kV4}, "GET").status, 101);
}

// Tests that start the server themselves, with options of their own.
class ServerOptionsTest : public StreamingTest {
 protected:
  std::atomic<int64_t> now_seconds_ = 1'700'000'000;
};

TEST_F(ServerOptionsTest, ExpiredTokenIsNotFound) {
  ServerOptions options;
  options.cache.ttl = absl::Minutes(1);
  options.cache.now = [this] { return absl::FromUnixSeconds(now_seconds_.load()); };
  StartServer(std::move(options));
  const std::string at_ttl = Url(kExec), past_ttl = Url(kExec);
  now_seconds_ += 60;
  EXPECT_EQ(SpdyUpgrade(at_ttl, {kV4}).status, 101);
  now_seconds_ += 1;
  ExpectNotFound(SpdyUpgrade(past_ttl, {kV4}));
}

// ---- SPDY negotiation ---------------------------------------------------------------------

TEST_F(ServerTest, SpdyUpgradeNeedsAProtocolVersion) {
  const UpgradeResponse response = SpdyUpgrade(Url(kExec), {});
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(response.body, "unable to upgrade: X-Stream-Protocol-Version is required");
  EXPECT_EQ(response.Header("content-length"), absl::StrCat(response.body.size()));
}

TEST_F(ServerTest, SpdyUpgradeWithOnlyUnsupportedProtocolsIsForbidden) {
  const UpgradeResponse response = SpdyUpgrade(Url(kExec), {"v5.channel.k8s.io", "v9.channel.k8s.io"});
  EXPECT_EQ(response.status, 403);
  EXPECT_THAT(response.Values("x-accepted-stream-protocol-versions"),
              ElementsAre("v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io"));
  EXPECT_THAT(response.body, HasSubstr("unable to negotiate protocol"));
  EXPECT_EQ(response.Header("content-length"), absl::StrCat(response.body.size()));

  const UpgradeResponse port_forward = SpdyUpgrade(Url(PortForward()), {kV4});
  EXPECT_EQ(port_forward.status, 403);
  EXPECT_THAT(port_forward.Values("x-accepted-stream-protocol-versions"), ElementsAre("portforward.k8s.io"));
}

TEST_F(ServerTest, SpdyUpgradePicksTheClientsFirstSupportedProtocol) {
  const UpgradeResponse exec = SpdyUpgrade(Url(kExec), kClientGoProtocols);
  EXPECT_EQ(exec.status, 101);
  EXPECT_EQ(exec.Header("x-stream-protocol-version"), "v4.channel.k8s.io");
  EXPECT_EQ(exec.Header("upgrade"), "SPDY/3.1");
  EXPECT_EQ(exec.Header("connection"), "Upgrade");
  // One header line may carry a comma-separated list.
  EXPECT_EQ(SpdyUpgrade(Url(kExec), {"v9.channel.k8s.io, v2.channel.k8s.io"}).Header("x-stream-protocol-version"),
            "v2.channel.k8s.io");
  const UpgradeResponse port_forward =
      SpdyUpgrade(Url(PortForward()), {"portforward.k8s.io"});
  EXPECT_EQ(port_forward.status, 101);
  EXPECT_EQ(port_forward.Header("x-stream-protocol-version"), "portforward.k8s.io");
}

TEST_F(ServerTest, SpdyUpgradeNeedsTheUpgradeHeaders) {
  const UpgradeResponse response =
      RawRequest(Url(kExec), "POST", {"Content-Length: 0", "X-Stream-Protocol-Version: v4.channel.k8s.io"});
  EXPECT_EQ(response.status, 400);
  EXPECT_THAT(response.body, HasSubstr("missing upgrade headers"));
  EXPECT_EQ(response.Header("content-length"), absl::StrCat(response.body.size()));
}

TEST_F(ServerOptionsTest, ServesOnIpv6Loopback) {
  ServerOptions options;
  options.bind_address = "[::1]:0";
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(options, runtime_);
  if (!server.ok()) GTEST_SKIP() << "no IPv6 loopback here: " << server.status();
  server_ = std::move(*server);
  EXPECT_THAT(server_->base_url(), MatchesRegex("http://\\[::1\\]:[0-9]+"));
  runtime_.OnStart(ExitWithHi);
  EXPECT_TRUE(ExecRoundTrip(Url(kExec)));
}

TEST_F(ServerOptionsTest, AdvertisesLoopbackForAnUnspecifiedAddress) {
  ServerOptions options;
  options.bind_address = "0.0.0.0:0";
  StartServer(std::move(options));
  EXPECT_THAT(server_->base_url(), MatchesRegex("http://127\\.0\\.0\\.1:[0-9]+"));
  runtime_.OnStart(ExitWithHi);
  EXPECT_TRUE(ExecRoundTrip(Url(kExec)));
}

TEST_F(ServerOptionsTest, RefusesABadBindAddress) {
  ServerOptions options;
  options.bind_address = "localhost:0";
  EXPECT_EQ(Server::Start(options, runtime_).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ServerTest, OversizedRequestHeadersAre431) {
  const UpgradeResponse response =
      RawRequest(Url(kExec), "POST", {"X-Padding: " + std::string(100 << 10, 'x'), "Content-Length: 0"});
  EXPECT_EQ(response.status, 431);
  EXPECT_EQ(response.Header("content-length"), absl::StrCat(response.body.size()));
}

// ---- Bind addresses, base URLs, ports ----------------------------------------------------

TEST(ParseBindAddressTest, AcceptsHostPortForms) {
  const struct {
    std::string address, ip;
    uint16_t port;
  } cases[] = {
      {"127.0.0.1:0", "127.0.0.1", 0},  {"127.0.0.1:10250", "127.0.0.1", 10250},
      {"0.0.0.0:1", "0.0.0.0", 1},      {":8080", "0.0.0.0", 8080},
      {"10.1.2.3", "10.1.2.3", 0},      {"", "0.0.0.0", 0},
      {"[::1]:0", "::1", 0},            {"[::]:65535", "::", 65535},
      {"[fe80::1]", "fe80::1", 0},      {"::1", "::1", 0},
  };
  for (const auto& c : cases) {
    absl::StatusOr<boost::asio::ip::tcp::endpoint> endpoint = ParseBindAddress(c.address);
    ASSERT_TRUE(endpoint.ok()) << c.address << ": " << endpoint.status();
    EXPECT_EQ(endpoint->address().to_string(), c.ip) << c.address;
    EXPECT_EQ(endpoint->port(), c.port) << c.address;
  }
}

TEST(ParseBindAddressTest, RefusesOtherInput) {
  for (const std::string address :
       {"localhost:80", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:http", "[::1", "[::1]80", "[::1]:x",
        "1.2.3.4.5:1", "[127.0.0.1:80]"}) {
    const absl::StatusOr<boost::asio::ip::tcp::endpoint> endpoint = ParseBindAddress(address);
    EXPECT_EQ(endpoint.status().code(), absl::StatusCode::kInvalidArgument) << address;
  }
}

TEST(BaseUrlForTest, AdvertisesAReachableHost) {
  using boost::asio::ip::make_address;
  using Endpoint = boost::asio::ip::tcp::endpoint;
  EXPECT_EQ(BaseUrlFor(Endpoint(make_address("127.0.0.1"), 4000), false), "http://127.0.0.1:4000");
  EXPECT_EQ(BaseUrlFor(Endpoint(make_address("0.0.0.0"), 4000), false), "http://127.0.0.1:4000");
  EXPECT_EQ(BaseUrlFor(Endpoint(make_address("::"), 4000), true), "https://[::1]:4000");
  EXPECT_EQ(BaseUrlFor(Endpoint(make_address("10.0.0.7"), 10250), true), "https://10.0.0.7:10250");
  EXPECT_EQ(BaseUrlFor(Endpoint(make_address("fd00::7"), 1), false), "http://[fd00::7]:1");
}

TEST(PortsFromQueryTest, ReadsRepeatedAndListedPorts) {
  EXPECT_THAT(*PortsFromQuery("port=80&port=81,82"), ElementsAre(80, 81, 82));
  EXPECT_THAT(*PortsFromQuery("x=1&port=65535&y=2"), ElementsAre(65535));
  EXPECT_THAT(*PortsFromQuery(""), ElementsAre());
  EXPECT_THAT(*PortsFromQuery("ports=80&port="), ElementsAre());
}

TEST(PortsFromQueryTest, RefusesInvalidPorts) {
  for (const std::string query : {"port=0", "port=65536", "port=http", "port=80,-1", "port=8o"}) {
    EXPECT_EQ(PortsFromQuery(query).status().code(), absl::StatusCode::kInvalidArgument) << query;
  }
}

// ---- Limits and robustness ---------------------------------------------------------------

TEST_F(ServerOptionsTest, ConnectionsBeyondTheLimitGet503) {
  ServerOptions options;
  options.max_connections = 2;
  StartServer(std::move(options));
  const streamtest::Url url = *streamtest::ParseUrl(server_->base_url());
  absl::StatusOr<common::UniqueFd> first = streamtest::Dial(url), second = streamtest::Dial(url);
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_TRUE(Eventually([&] { return server_->active_connections() == 2; }));
  const UpgradeResponse refused = SpdyUpgrade(Url(kExec), {kV4});
  EXPECT_EQ(refused.status, 503);
  EXPECT_THAT(refused.body, HasSubstr("too many streaming connections"));
  EXPECT_EQ(refused.Header("content-length"), absl::StrCat(refused.body.size()));
  first->Reset();
  ASSERT_TRUE(Eventually([&] { return server_->active_connections() == 1; }));
  EXPECT_EQ(SpdyUpgrade(Url(kExec), {kV4}).status, 101);
}

TEST_F(ServerTest, ServesManyConcurrentConnections) {
  runtime_.OnStart(ExitWithHi);
  constexpr int kClients = 200;
  std::vector<std::string> urls;
  for (int i = 0; i < kClients; ++i) urls.push_back(Url(kExec));
  std::atomic<int> succeeded = 0;
  std::vector<std::thread> clients;
  for (const std::string& url : urls) {
    clients.emplace_back([&succeeded, url] {
      if (ExecRoundTrip(url)) ++succeeded;
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(succeeded, kClients);
  EXPECT_EQ(runtime_.starts(), static_cast<std::size_t>(kClients));
  EXPECT_TRUE(Eventually([&] { return server_->active_connections() == 0; }))
      << server_->active_connections() << " connections left";
}

TEST_F(ServerOptionsTest, ClosesAConnectionThatSendsNoRequest) {
  ServerOptions options;
  options.request_timeout = absl::Milliseconds(100);
  StartServer(options);
  absl::StatusOr<common::UniqueFd> idle = streamtest::Dial(*streamtest::ParseUrl(server_->base_url()));
  ASSERT_TRUE(idle.ok());
  EXPECT_EQ(streamtest::ReadFdToEof(idle->get(), kWait).value_or("no EOF"), "");
  EXPECT_TRUE(Eventually([&] { return server_->active_connections() == 0; }));
}

// ---- Stop and idle timeout ------------------------------------------------------------------

TEST_F(ServerTest, StopEndsEverySessionAndReturns) {
  absl::StatusOr<std::unique_ptr<SpdyClient>> spdy = SpdyClient::Connect(Url(kExec), kClientGoProtocols);
  ASSERT_TRUE(spdy.ok()) << spdy.status();
  ASSERT_EQ(OpenStreams(**spdy, {"error", "stdout"}).size(), 2u);
  absl::StatusOr<std::unique_ptr<WsClient>> ws = WsClient::Connect(Url(kExec), {kV4});
  ASSERT_TRUE(ws.ok()) << ws.status();
  absl::StatusOr<std::unique_ptr<SpdyClient>> waiting = SpdyClient::Connect(Url(kExec), kClientGoProtocols);
  ASSERT_TRUE(waiting.ok()) << waiting.status();  // has opened no stream yet
  absl::StatusOr<common::UniqueFd> silent = streamtest::Dial(*streamtest::ParseUrl(server_->base_url()));
  ASSERT_TRUE(silent.ok());
  std::shared_ptr<streamtest::FakeProcess> spdy_process = runtime_.WaitProcess(0, kWait);
  std::shared_ptr<streamtest::FakeProcess> ws_process = runtime_.WaitProcess(1, kWait);
  ASSERT_TRUE(spdy_process && ws_process);
  ASSERT_TRUE(Eventually([&] { return server_->active_connections() == 4; })) << server_->active_connections();

  const absl::Time start = absl::Now();
  server_->Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(4));
  EXPECT_EQ(server_->active_connections(), 0u);
  EXPECT_TRUE(spdy_process->abandoned());
  EXPECT_TRUE(ws_process->abandoned());
  EXPECT_TRUE((*spdy)->WaitGoAway(kWait));
  EXPECT_TRUE((*spdy)->WaitClosed(kWait));
  EXPECT_TRUE((*waiting)->WaitClosed(kWait));
  EXPECT_THAT(ReceiveUntilClosed(**ws), ElementsAre("\x01"));
  EXPECT_EQ(streamtest::ReadFdToEof(silent->get(), kWait).value_or("no EOF"), "");
  server_->Stop();  // idempotent
}

TEST_F(ServerTest, StopWhileClientsKeepConnecting) {
  const streamtest::Url url = *streamtest::ParseUrl(server_->base_url());
  std::atomic<bool> done = false;
  std::atomic<int> connected = 0;
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&] {
      while (!done) {
        if (absl::StatusOr<common::UniqueFd> fd = streamtest::Dial(url); fd.ok()) ++connected;
      }
    });
  }
  ASSERT_TRUE(Eventually([&] { return connected > 100; }));
  const absl::Time start = absl::Now();
  server_->Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  EXPECT_EQ(server_->active_connections(), 0u);
  done = true;
  for (std::thread& t : clients) t.join();
}

TEST_F(ServerTest, StopAbandonsAnExecThatStartsMeanwhile) {
  runtime_.HoldCalls(true);  // Exec blocks, as in a busy dockerd
  absl::StatusOr<std::unique_ptr<SpdyClient>> client = SpdyClient::Connect(Url(kExec), kClientGoProtocols);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_EQ(OpenStreams(**client, {"error", "stdout"}).size(), 2u);
  ASSERT_TRUE(Eventually([&] { return runtime_.calls() == 1; }));
  std::thread stopper([&] { server_->Stop(); });
  ASSERT_TRUE((*client)->WaitGoAway(kWait));  // the session was told to end
  (*client)->Close();
  // Stop now waits for the blocked call alone; then the process starts.
  ASSERT_TRUE(Eventually([&] { return server_->active_connections() == 0; }));
  runtime_.HoldCalls(false);
  stopper.join();
  std::shared_ptr<streamtest::FakeProcess> process = runtime_.WaitProcess(0, kWait);
  ASSERT_NE(process, nullptr);
  EXPECT_TRUE(process->abandoned());
}

TEST_F(ServerOptionsTest, IdleSessionsAreClosed) {
  ServerOptions options;
  options.idle_timeout = absl::Milliseconds(200);
  StartServer(options);
  absl::StatusOr<std::unique_ptr<SpdyClient>> spdy = SpdyClient::Connect(Url(kExec), kClientGoProtocols);
  ASSERT_TRUE(spdy.ok()) << spdy.status();
  ASSERT_EQ(OpenStreams(**spdy, {"error", "stdout"}).size(), 2u);
  // A WebSocket client that went silent: it answers none of the server's pings.
  absl::StatusOr<streamtest::Url> url = streamtest::ParseUrl(Url(kExec));
  ASSERT_TRUE(url.ok());
  absl::StatusOr<common::UniqueFd> silent = streamtest::Dial(*url);
  ASSERT_TRUE(silent.ok()) << silent.status();
  absl::StatusOr<streamtest::UpgradeResponse> upgraded = streamtest::Upgrade(
      silent->get(),
      absl::StrCat("GET ", url->target, " HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                   "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                   "Sec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n"),
      nullptr);
  ASSERT_TRUE(upgraded.ok() && upgraded->status == 101) << upgraded.status();
  std::shared_ptr<streamtest::FakeProcess> spdy_process = runtime_.WaitProcess(0, kWait);
  std::shared_ptr<streamtest::FakeProcess> ws_process = runtime_.WaitProcess(1, kWait);
  ASSERT_TRUE(spdy_process && ws_process);

  EXPECT_TRUE((*spdy)->WaitGoAway(kWait));
  EXPECT_TRUE((*spdy)->WaitClosed(kWait));
  EXPECT_TRUE(spdy_process->WaitAbandoned(kWait));
  EXPECT_TRUE(ws_process->WaitAbandoned(kWait));
  EXPECT_TRUE(Eventually([&] { return server_->active_connections() == 0; }));
}

TEST_F(ServerOptionsTest, PingsKeepAListeningWebSocketClient) {
  ServerOptions options;
  options.idle_timeout = absl::Milliseconds(200);
  StartServer(options);
  absl::StatusOr<std::unique_ptr<WsClient>> ws = WsClient::Connect(Url(kExec), {kV4});
  ASSERT_TRUE(ws.ok()) << ws.status();
  std::shared_ptr<streamtest::FakeProcess> process = runtime_.WaitProcess(0, kWait);
  ASSERT_TRUE(process);
  // The client sends nothing for five idle timeouts, but answers the server's pings.
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  EXPECT_FALSE(process->WaitAbandoned(absl::ZeroDuration()));
  process->Exit(0);
  EXPECT_THAT(ReceiveUntilClosed(**ws), ElementsAre("\x01", absl::StrCat("\x03", kSuccessStatus)));
}

TEST_F(ServerOptionsTest, OutputKeepsASessionFromIdling) {
  ServerOptions options;
  options.idle_timeout = absl::Milliseconds(300);
  StartServer(options);
  absl::StatusOr<std::unique_ptr<SpdyClient>> spdy = SpdyClient::Connect(Url(kExec), kClientGoProtocols);
  ASSERT_TRUE(spdy.ok()) << spdy.status();
  const std::vector<uint32_t> ids = OpenStreams(**spdy, {"error", "stdout"});
  ASSERT_EQ(ids.size(), 2u);
  std::shared_ptr<streamtest::FakeProcess> process = runtime_.WaitProcess(0, kWait);
  ASSERT_TRUE(process);
  // Output every 100 ms for three idle timeouts, and the client silent.
  std::string expected;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(process->Stdout(absl::StrCat(i)));
    absl::StrAppend(&expected, i);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  process->Exit(0);
  EXPECT_EQ((*spdy)->ReadAll(ids[1], kWait).value_or("?"), expected);
  EXPECT_EQ((*spdy)->ReadAll(ids[0], kWait).value_or("?"), kSuccessStatus);
}

TEST_F(ServerOptionsTest, PingsKeepASessionFromIdling) {
  ServerOptions options;
  options.idle_timeout = absl::Milliseconds(300);
  StartServer(options);
  absl::StatusOr<std::unique_ptr<SpdyClient>> spdy = SpdyClient::Connect(Url(kExec), kClientGoProtocols);
  ASSERT_TRUE(spdy.ok()) << spdy.status();
  const std::vector<uint32_t> ids = OpenStreams(**spdy, {"error", "stdout"});
  ASSERT_EQ(ids.size(), 2u);
  std::shared_ptr<streamtest::FakeProcess> process = runtime_.WaitProcess(0, kWait);
  ASSERT_TRUE(process);
  // Pings every 100 ms for three idle timeouts: the session must live on.
  for (uint32_t id = 1; id < 20; id += 2) {
    ASSERT_TRUE((*spdy)->SendPing(id).ok());
    ASSERT_TRUE((*spdy)->WaitPingEcho(id, kWait)) << id;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ExitWithHi(*process);
  EXPECT_EQ((*spdy)->ReadAll(ids[1], kWait).value_or("?"), "hi");
  EXPECT_EQ((*spdy)->ReadAll(ids[0], kWait).value_or("?"), kSuccessStatus);
}

// ---- TLS -------------------------------------------------------------------------------

class ServerTlsTest : public StreamingTest {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/streaming-tls-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    cert_ = dir_ / "cert.pem";
    key_ = dir_ / "key.pem";
    const std::string command = absl::StrCat(
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=127.0.0.1 "
        "-keyout ",
        key_.string(), " -out ", cert_.string(), " 2>/dev/null");
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  }
  void TearDown() override {
    StreamingTest::TearDown();
    std::filesystem::remove_all(dir_);
  }

  std::filesystem::path dir_, cert_, key_;
};

TEST_F(ServerTlsTest, ServesExecOverTls) {
  ServerOptions options;
  options.tls_cert_file = cert_;
  options.tls_key_file = key_;
  StartServer(options);
  EXPECT_THAT(server_->base_url(), MatchesRegex("https://127\\.0\\.0\\.1:[0-9]+"));
  runtime_.OnStart(ExitWithHi);
  const std::string url = Url(kExec);
  ASSERT_THAT(url, ::testing::StartsWith("https://"));
  EXPECT_TRUE(ExecRoundTrip(url));
}

TEST_F(ServerTlsTest, DropsAClientThatDoesNotSpeakTls) {
  ServerOptions options;
  options.tls_cert_file = cert_;
  options.tls_key_file = key_;
  StartServer(options);
  absl::StatusOr<common::UniqueFd> fd = streamtest::Dial(*streamtest::ParseUrl(server_->base_url()));
  ASSERT_TRUE(fd.ok());
  ASSERT_TRUE(streamtest::WriteAll(fd->get(), "POST /exec/x HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_TRUE(streamtest::ReadFdToEof(fd->get(), kWait).ok());  // whatever TLS alert, then the end
  EXPECT_TRUE(Eventually([&] { return server_->active_connections() == 0; }));
}

TEST_F(ServerTlsTest, NeedsBothCertificateAndKey) {
  ServerOptions options;
  options.tls_cert_file = cert_;
  EXPECT_EQ(Server::Start(options, runtime_).status().code(), absl::StatusCode::kInvalidArgument);
  options.tls_key_file = dir_ / "missing.pem";
  EXPECT_EQ(Server::Start(options, runtime_).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace streaming
