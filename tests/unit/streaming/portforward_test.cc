// Port-forward over SPDY, the WebSocket channel protocol and the SPDY-over-WebSocket
// tunnel, to TCP servers the test runs on 127.0.0.1.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "streaming/websocket/channel.h"
#include "tests/unit/streaming/streaming_fixture.h"

namespace streaming {
namespace {

using streamtest::ReadFdExactly;
using streamtest::ReadFdToEof;
using streamtest::SpdyClient;
using streamtest::WriteAll;
using streamtest::WsClient;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

spdy::Headers PortHeaders(const std::string& type, uint16_t port, int request_id) {
  return {{"streamtype", type}, {"port", absl::StrCat(port)}, {"requestid", absl::StrCat(request_id)}};
}

// One forwarded connection as client-go makes it: the error stream (half-closed at
// once), then the data stream.
struct ForwardStreams {
  uint32_t error = 0, data = 0;
};

std::optional<ForwardStreams> OpenForward(SpdyClient& client, uint16_t port, int request_id) {
  absl::StatusOr<uint32_t> error = client.OpenStream(PortHeaders("error", port, request_id));
  if (!error.ok() || !client.CloseStream(*error).ok()) {
    ADD_FAILURE() << "error stream: " << error.status();
    return std::nullopt;
  }
  absl::StatusOr<uint32_t> data = client.OpenStream(PortHeaders("data", port, request_id));
  if (!data.ok()) {
    ADD_FAILURE() << "data stream: " << data.status();
    return std::nullopt;
  }
  return ForwardStreams{*error, *data};
}

std::string ReadSome(SpdyClient& client, uint32_t id) {
  absl::StatusOr<std::string> data = client.ReadSome(id, kWait);
  EXPECT_TRUE(data.ok()) << data.status();
  return data.value_or("");
}

std::string ReadAll(SpdyClient& client, uint32_t id) {
  absl::StatusOr<std::string> data = client.ReadAll(id, kWait);
  EXPECT_TRUE(data.ok()) << data.status();
  return data.value_or("<did not end>");
}

// Bytes both ways on a forward whose target connection is `target`.
void ExpectRoundTrip(SpdyClient& client, const ForwardStreams& streams, int target, const std::string& tag) {
  ASSERT_TRUE(client.Write(streams.data, "ping " + tag).ok());
  EXPECT_EQ(ReadFdExactly(target, 5 + tag.size(), kWait).value_or(""), "ping " + tag);
  ASSERT_TRUE(WriteAll(target, "pong " + tag));
  EXPECT_EQ(ReadSome(client, streams.data), "pong " + tag);
}

class PortForwardTest : public StreamingTest {
 protected:
  void SetUp() override { StartServer(); }

  std::unique_ptr<SpdyClient> ConnectSpdy(PortForwardRequest request = PortForward()) {
    absl::StatusOr<std::unique_ptr<SpdyClient>> client =
        SpdyClient::Connect(Url(std::move(request)), {"portforward.k8s.io"});
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(*client) : nullptr;
  }

  std::unique_ptr<WsClient> ConnectWs(const std::string& url, const std::vector<std::string>& protocols) {
    absl::StatusOr<std::unique_ptr<WsClient>> client = WsClient::Connect(url, protocols);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(*client) : nullptr;
  }
};

TEST_F(PortForwardTest, SpdyCarriesDataBothWaysAndHalfCloses) {
  TcpTarget target;
  std::unique_ptr<SpdyClient> client = ConnectSpdy();
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->protocol(), "portforward.k8s.io");
  const std::optional<ForwardStreams> streams = OpenForward(*client, target.port(), 0);
  ASSERT_TRUE(streams);
  common::UniqueFd conn = target.Accept();
  ASSERT_TRUE(conn);
  EXPECT_THAT(runtime_.netns_requests(), ElementsAre(kSandbox));
  ExpectRoundTrip(*client, *streams, conn.get(), "1");

  // The client's FIN half-closes the target connection; the other way stays open.
  ASSERT_TRUE(client->CloseStream(streams->data).ok());
  EXPECT_EQ(ReadFdToEof(conn.get(), kWait).value_or("no EOF"), "");
  ASSERT_TRUE(WriteAll(conn.get(), "last words"));
  EXPECT_EQ(ReadSome(*client, streams->data), "last words");
  // The target's end FINs the data stream, and the error stream ends empty.
  conn.Reset();
  EXPECT_EQ(ReadAll(*client, streams->data), "");
  EXPECT_FALSE(client->WasReset(streams->data));
  EXPECT_EQ(ReadAll(*client, streams->error), "");
}

TEST_F(PortForwardTest, SpdyEndsTheForwardWhenThePodsSideEnds) {
  // client-go before 1.32 neither closes nor resets the data stream when the pod's
  // side ended: it waits for the error stream first, with its local connection open.
  TcpTarget target;
  std::unique_ptr<SpdyClient> client = ConnectSpdy();
  ASSERT_NE(client, nullptr);
  const std::optional<ForwardStreams> streams = OpenForward(*client, target.port(), 0);
  ASSERT_TRUE(streams);
  common::UniqueFd conn = target.Accept();
  ASSERT_TRUE(conn);
  ASSERT_TRUE(WriteAll(conn.get(), "HTTP/1.0 200 OK\r\n\r\nbody until close"));
  conn.Reset();
  EXPECT_EQ(ReadAll(*client, streams->data), "HTTP/1.0 200 OK\r\n\r\nbody until close");
  EXPECT_EQ(ReadAll(*client, streams->error), "");
}

TEST_F(PortForwardTest, SpdyCarriesMuchDataBothWaysAtOnce) {
  TcpTarget target;
  std::unique_ptr<SpdyClient> client = ConnectSpdy();
  ASSERT_NE(client, nullptr);
  const std::optional<ForwardStreams> streams = OpenForward(*client, target.port(), 0);
  ASSERT_TRUE(streams);
  common::UniqueFd conn = target.Accept();
  ASSERT_TRUE(conn);
  // The pod's server echoes everything: both directions are full at once.
  std::thread echo([fd = conn.get()] {
    char buffer[64 << 10];
    for (ssize_t n; (n = ::read(fd, buffer, sizeof(buffer))) > 0;) {
      if (!WriteAll(fd, std::string_view(buffer, static_cast<std::size_t>(n)))) return;
    }
  });
  std::string sent;
  for (int i = 0; sent.size() < (16u << 20); ++i) absl::StrAppend(&sent, i, ";");
  std::thread sender([&] {
    for (std::size_t offset = 0; offset < sent.size(); offset += 100 << 10) {
      ASSERT_TRUE(client->Write(streams->data, std::string_view(sent).substr(offset, 100 << 10)).ok());
    }
  });
  std::string received;
  while (received.size() < sent.size()) {
    const std::string piece = ReadSome(*client, streams->data);
    if (piece.empty()) break;
    received += piece;
  }
  sender.join();
  EXPECT_TRUE(received == sent) << "got " << received.size() << " of " << sent.size() << " bytes";
  ASSERT_TRUE(client->CloseStream(streams->data).ok());
  echo.join();
  conn.Reset();
  EXPECT_EQ(ReadAll(*client, streams->data), "");
  EXPECT_EQ(ReadAll(*client, streams->error), "");
}

TEST_F(PortForwardTest, SpdyServesConcurrentConnectionsToSeveralPorts) {
  TcpTarget first, second;
  std::unique_ptr<SpdyClient> client = ConnectSpdy();
  ASSERT_NE(client, nullptr);
  const std::optional<ForwardStreams> a = OpenForward(*client, first.port(), 0);
  ASSERT_TRUE(a);
  common::UniqueFd conn_a = first.Accept();
  const std::optional<ForwardStreams> b = OpenForward(*client, second.port(), 1);
  ASSERT_TRUE(b);
  common::UniqueFd conn_b = second.Accept();
  const std::optional<ForwardStreams> c = OpenForward(*client, first.port(), 2);
  ASSERT_TRUE(c);
  common::UniqueFd conn_c = first.Accept();
  ASSERT_TRUE(conn_a && conn_b && conn_c);
  ExpectRoundTrip(*client, *b, conn_b.get(), "b");
  ExpectRoundTrip(*client, *a, conn_a.get(), "a");
  ExpectRoundTrip(*client, *c, conn_c.get(), "c");
  // One connection ending leaves the others alone.
  conn_a.Reset();
  EXPECT_EQ(ReadAll(*client, a->data), "");
  ExpectRoundTrip(*client, *c, conn_c.get(), "c2");
  ExpectRoundTrip(*client, *b, conn_b.get(), "b2");
}

TEST_F(PortForwardTest, SpdyPairsStreamsByRequestIdInAnyOrder) {
  TcpTarget target;
  std::unique_ptr<SpdyClient> client = ConnectSpdy();
  ASSERT_NE(client, nullptr);
  absl::StatusOr<uint32_t> data7 = client->OpenStream(PortHeaders("data", target.port(), 7));
  absl::StatusOr<uint32_t> error8 = client->OpenStream(PortHeaders("error", target.port(), 8));
  absl::StatusOr<uint32_t> error7 = client->OpenStream(PortHeaders("error", target.port(), 7));
  ASSERT_TRUE(data7.ok() && error8.ok() && error7.ok());
  common::UniqueFd conn = target.Accept();
  ASSERT_TRUE(conn);
  ExpectRoundTrip(*client, ForwardStreams{*error7, *data7}, conn.get(), "7");
}

TEST_F(PortForwardTest, SpdyPairsStreamsWithoutRequestIdByStreamId) {
  // Old clients: the data stream follows its error stream.
  TcpTarget target;
  std::unique_ptr<SpdyClient> client = ConnectSpdy();
  ASSERT_NE(client, nullptr);
  const spdy::Headers error = {{"streamtype", "error"}, {"port", absl::StrCat(target.port())}};
  const spdy::Headers data = {{"streamtype", "data"}, {"port", absl::StrCat(target.port())}};
  absl::StatusOr<uint32_t> error_id = client->OpenStream(error);
  absl::StatusOr<uint32_t> data_id = client->OpenStream(data);
  ASSERT_TRUE(error_id.ok() && data_id.ok());
  common::UniqueFd conn = target.Accept();
  ASSERT_TRUE(conn);
  ExpectRoundTrip(*client, ForwardStreams{*error_id, *data_id}, conn.get(), "legacy");
}

TEST_F(PortForwardTest, SpdyReportsAClosedPortAndGoesOn) {
  common::UniqueFd held;
  const uint16_t closed = ClosedPort(held);
  std::unique_ptr<SpdyClient> client = ConnectSpdy();
  ASSERT_NE(client, nullptr);
  const std::optional<ForwardStreams> failed = OpenForward(*client, closed, 0);
  ASSERT_TRUE(failed);
  const std::string error = ReadAll(*client, failed->error);
  EXPECT_THAT(error, ::testing::StartsWith(absl::StrCat("error forwarding port ", closed, " to pod ", kSandbox)));
  EXPECT_THAT(error, HasSubstr("refused"));
  EXPECT_TRUE(client->WasReset(failed->error));
  EXPECT_TRUE(Eventually([&] { return client->WasReset(failed->data); }));

  TcpTarget target;
  const std::optional<ForwardStreams> next = OpenForward(*client, target.port(), 1);
  ASSERT_TRUE(next);
  common::UniqueFd conn = target.Accept();
  ASSERT_TRUE(conn);
  ExpectRoundTrip(*client, *next, conn.get(), "after");
}

TEST_F(PortForwardTest, SpdyResetsStreamsWithBadHeaders) {
  TcpTarget target;
  std::unique_ptr<SpdyClient> client = ConnectSpdy();
  ASSERT_NE(client, nullptr);
  const std::string port = absl::StrCat(target.port());
  const spdy::Headers bad[] = {
      {{"streamtype", "data"}, {"requestid", "0"}},
      {{"streamtype", "data"}, {"port", "0"}, {"requestid", "0"}},
      {{"streamtype", "data"}, {"port", "65536"}, {"requestid", "0"}},
      {{"streamtype", "data"}, {"port", "http"}, {"requestid", "0"}},
      {{"port", port}, {"requestid", "0"}},
      {{"streamtype", "stdout"}, {"port", port}, {"requestid", "0"}},
  };
  for (const spdy::Headers& headers : bad) {
    EXPECT_EQ(client->OpenStream(headers).status().code(), absl::StatusCode::kUnavailable)
        << ::testing::PrintToString(headers);
  }
  // A second stream of one type for a request is refused too.
  absl::StatusOr<uint32_t> error = client->OpenStream(PortHeaders("error", target.port(), 0));
  ASSERT_TRUE(error.ok());
  EXPECT_EQ(client->OpenStream(PortHeaders("error", target.port(), 0)).status().code(),
            absl::StatusCode::kUnavailable);
  absl::StatusOr<uint32_t> data = client->OpenStream(PortHeaders("data", target.port(), 0));
  ASSERT_TRUE(data.ok());
  common::UniqueFd conn = target.Accept();
  ASSERT_TRUE(conn);
  ExpectRoundTrip(*client, ForwardStreams{*error, *data}, conn.get(), "ok");
}

TEST_F(PortForwardTest, SpdyClientResetEndsTheTargetConnection) {
  TcpTarget target;
  std::unique_ptr<SpdyClient> client = ConnectSpdy();
  ASSERT_NE(client, nullptr);
  const std::optional<ForwardStreams> streams = OpenForward(*client, target.port(), 0);
  ASSERT_TRUE(streams);
  common::UniqueFd conn = target.Accept();
  ASSERT_TRUE(conn);
  ASSERT_TRUE(client->ResetStream(streams->data).ok());
  EXPECT_EQ(ReadFdToEof(conn.get(), kWait).value_or("no EOF"), "");
  EXPECT_EQ(ReadAll(*client, streams->error), "");
}

TEST_F(PortForwardTest, SpdyClientLeavingClosesTargetConnections) {
  TcpTarget target;
  std::unique_ptr<SpdyClient> client = ConnectSpdy();
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(OpenForward(*client, target.port(), 0));
  common::UniqueFd conn = target.Accept();
  ASSERT_TRUE(conn);
  client.reset();
  EXPECT_EQ(ReadFdToEof(conn.get(), kWait).value_or("no EOF"), "");
  EXPECT_TRUE(Eventually([&] { return server_->active_connections() == 0; })) << server_->active_connections();
}

TEST_F(PortForwardTest, SpdyClientLeavingWhileConnectingClosesTheLateConnection) {
  TcpTarget target;
  std::unique_ptr<SpdyClient> client = ConnectSpdy();
  ASSERT_NE(client, nullptr);
  runtime_.HoldCalls(true);
  ASSERT_TRUE(OpenForward(*client, target.port(), 0));
  ASSERT_TRUE(Eventually([&] { return runtime_.calls() == 1; }));
  client.reset();
  ASSERT_TRUE(Eventually([&] { return server_->active_connections() == 0; })) << server_->active_connections();
  // The connection the session asked for comes too late: it is closed at once.
  runtime_.HoldCalls(false);
  common::UniqueFd conn = target.Accept();
  ASSERT_TRUE(conn);
  EXPECT_EQ(ReadFdToEof(conn.get(), kWait).value_or("no EOF"), "");
}

TEST_F(PortForwardTest, WebSocketClientLeavingWhileConnectingClosesTheLateConnection) {
  TcpTarget target;
  runtime_.HoldCalls(true);
  std::unique_ptr<WsClient> client = ConnectWs(Url(PortForward({target.port()})), {"v4.channel.k8s.io"});
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(Eventually([&] { return runtime_.calls() == 1; }));
  client->Close();
  ASSERT_TRUE(Eventually([&] { return server_->active_connections() == 0; })) << server_->active_connections();
  runtime_.HoldCalls(false);
  common::UniqueFd conn = target.Accept();
  ASSERT_TRUE(conn);
  EXPECT_EQ(ReadFdToEof(conn.get(), kWait).value_or("no EOF"), "");
}

class PortForwardTimeoutTest : public StreamingTest {};

TEST_F(PortForwardTimeoutTest, SpdyDropsAPairWhoseOtherStreamDoesNotCome) {
  ServerOptions options;
  options.stream_creation_timeout = absl::Milliseconds(100);
  StartServer(std::move(options));
  TcpTarget target;
  absl::StatusOr<std::unique_ptr<SpdyClient>> client = SpdyClient::Connect(Url(PortForward()), {"portforward.k8s.io"});
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<uint32_t> error = (*client)->OpenStream(PortHeaders("error", target.port(), 0));
  ASSERT_TRUE(error.ok());
  EXPECT_THAT(ReadAll(**client, *error), HasSubstr("timed out waiting for streams"));
  EXPECT_TRUE((*client)->WasReset(*error));
  // The request id is free again.
  const std::optional<ForwardStreams> streams = OpenForward(**client, target.port(), 0);
  ASSERT_TRUE(streams);
  common::UniqueFd conn = target.Accept();
  ASSERT_TRUE(conn);
  ExpectRoundTrip(**client, *streams, conn.get(), "late");
}

// ---- WebSocket --------------------------------------------------------------------------

std::string Channel(uint8_t channel, std::string_view payload) {
  return std::string(1, static_cast<char>(channel)).append(payload);
}

std::string Receive(WsClient& client) {
  absl::StatusOr<streamtest::WsMessage> message = client.Receive(kWait);
  EXPECT_TRUE(message.ok()) << message.status();
  return message.ok() ? message->data : "<none>";
}

TEST_F(PortForwardTest, WebSocketPrefixesEachChannelWithItsPort) {
  TcpTarget first, second;
  std::unique_ptr<WsClient> client =
      ConnectWs(Url(PortForward({first.port(), second.port()})), {"v4.channel.k8s.io"});
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->protocol(), "v4.channel.k8s.io");
  const std::string first_port = websocket::EncodePortPrefix(first.port());
  const std::string second_port = websocket::EncodePortPrefix(second.port());
  std::vector<std::string> prefixes;
  for (int i = 0; i < 4; ++i) prefixes.push_back(Receive(*client));
  EXPECT_THAT(prefixes, ::testing::UnorderedElementsAre(Channel(0, first_port), Channel(1, first_port),
                                                        Channel(2, second_port), Channel(3, second_port)));
  common::UniqueFd conn_a = first.Accept(), conn_b = second.Accept();
  ASSERT_TRUE(conn_a && conn_b);

  ASSERT_TRUE(client->Send(Channel(2, "to b")).ok());
  EXPECT_EQ(ReadFdExactly(conn_b.get(), 4, kWait).value_or(""), "to b");
  ASSERT_TRUE(client->Send(Channel(0, "to a")).ok());
  EXPECT_EQ(ReadFdExactly(conn_a.get(), 4, kWait).value_or(""), "to a");
  ASSERT_TRUE(WriteAll(conn_a.get(), "from a"));
  EXPECT_EQ(Receive(*client), Channel(0, "from a"));
  // The connection ends when every port's has.
  conn_a.Reset();
  ASSERT_TRUE(WriteAll(conn_b.get(), "from b"));
  EXPECT_EQ(Receive(*client), Channel(2, "from b"));
  conn_b.Reset();
  EXPECT_THAT(ReceiveUntilClosed(*client), ElementsAre());
  EXPECT_EQ(client->close_code(), 1000);
}

TEST_F(PortForwardTest, WebSocketTakesPortsFromTheQueryWhenTheRequestHasNone) {
  TcpTarget target;
  std::unique_ptr<WsClient> client =
      ConnectWs(absl::StrCat(Url(PortForward()), "?port=", target.port()), {"v4.base64.channel.k8s.io"});
  ASSERT_NE(client, nullptr);
  const std::string port = absl::Base64Escape(websocket::EncodePortPrefix(target.port()));
  EXPECT_THAT((std::vector<std::string>{Receive(*client), Receive(*client)}),
              ::testing::UnorderedElementsAre("0" + port, "1" + port));
  common::UniqueFd conn = target.Accept();
  ASSERT_TRUE(conn);
  ASSERT_TRUE(client->Send("0" + absl::Base64Escape("hello"), /*binary=*/false).ok());
  EXPECT_EQ(ReadFdExactly(conn.get(), 5, kWait).value_or(""), "hello");
  ASSERT_TRUE(WriteAll(conn.get(), "world"));
  EXPECT_EQ(Receive(*client), "0" + absl::Base64Escape("world"));
}

TEST_F(PortForwardTest, WebSocketWithoutPortsIsABadRequest) {
  streamtest::UpgradeResponse response;
  EXPECT_FALSE(WsClient::Connect(Url(PortForward()), {"v4.channel.k8s.io"}, &response).ok());
  EXPECT_EQ(response.status, 400);
  EXPECT_FALSE(WsClient::Connect(Url(PortForward()) + "?port=0", {"v4.channel.k8s.io"}, &response).ok());
  EXPECT_EQ(response.status, 400);
}

TEST_F(PortForwardTest, WebSocketReportsAClosedPortOnTheErrorChannel) {
  common::UniqueFd held;
  const uint16_t closed = ClosedPort(held);
  std::unique_ptr<WsClient> client = ConnectWs(Url(PortForward({closed})), {"v4.channel.k8s.io"});
  ASSERT_NE(client, nullptr);
  const std::vector<std::string> messages = ReceiveUntilClosed(*client);
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_THAT(messages[2], ::testing::StartsWith(Channel(1, absl::StrCat("error forwarding port ", closed))));
}

TEST_F(PortForwardTest, SpdyOverWebSocketTunnel) {
  TcpTarget target;
  std::unique_ptr<WsClient> ws = ConnectWs(Url(PortForward()), {"SPDY/3.1+portforward.k8s.io"});
  ASSERT_NE(ws, nullptr);
  EXPECT_EQ(ws->protocol(), "SPDY/3.1+portforward.k8s.io");
  SpdyClient client(ws->StartTunnel());
  const std::optional<ForwardStreams> streams = OpenForward(client, target.port(), 0);
  ASSERT_TRUE(streams);
  common::UniqueFd conn = target.Accept();
  ASSERT_TRUE(conn);
  ExpectRoundTrip(client, *streams, conn.get(), "tunnelled");
  const std::string big(1 << 20, 'z');
  ASSERT_TRUE(WriteAll(conn.get(), big));
  std::string received;
  while (received.size() < big.size()) {
    const std::string piece = ReadSome(client, streams->data);
    ASSERT_FALSE(piece.empty());
    received += piece;
  }
  EXPECT_EQ(received, big);
  // As client-go: once the remote side ended, reset the data stream and wait for
  // the error stream's end.
  conn.Reset();
  EXPECT_EQ(ReadAll(client, streams->data), "");
  ASSERT_TRUE(client.ResetStream(streams->data).ok());
  EXPECT_EQ(ReadAll(client, streams->error), "");
}

}  // namespace
}  // namespace streaming
