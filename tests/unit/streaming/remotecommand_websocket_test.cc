// Exec and attach over the WebSocket channel protocols, against a fake runtime.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "tests/unit/streaming/streaming_fixture.h"

namespace streaming {
namespace {

using streamtest::FakeProcess;
using streamtest::WsClient;
using streamtest::WsMessage;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class WebSocketExecTest : public StreamingTest {
 protected:
  void SetUp() override { StartServer(); }

  std::unique_ptr<WsClient> Connect(Request request, const std::vector<std::string>& protocols) {
    absl::StatusOr<std::unique_ptr<WsClient>> client = WsClient::Connect(Url(std::move(request)), protocols);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(*client) : nullptr;
  }

  std::shared_ptr<FakeProcess> Process(std::size_t index = 0) {
    std::shared_ptr<FakeProcess> process = runtime_.WaitProcess(index, kWait);
    EXPECT_NE(process, nullptr) << "process " << index << " did not start";
    return process;
  }
};

WsMessage Receive(WsClient& client) {
  absl::StatusOr<WsMessage> message = client.Receive(kWait);
  EXPECT_TRUE(message.ok()) << message.status();
  return message.value_or(WsMessage{.text = false, .data = "<none>"});
}

std::string Binary(char channel, std::string_view payload) { return std::string(1, channel).append(payload); }

TEST_F(WebSocketExecTest, V4BinaryCarriesOutputAndTheJsonStatus) {
  std::unique_ptr<WsClient> client = Connect(Exec({Io::kStdin, Io::kStdout, Io::kStderr}), {"v4.channel.k8s.io"});
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->protocol(), "v4.channel.k8s.io");
  const WsMessage connected = Receive(*client);
  EXPECT_FALSE(connected.text);
  EXPECT_EQ(connected.data, "\x01");  // an empty message on stdout
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  ASSERT_TRUE(client->Send(Binary(0, "input")).ok());
  EXPECT_EQ(process->ReadStdin(5, kWait).value_or(""), "input");
  ASSERT_TRUE(process->Stdout("out"));
  EXPECT_EQ(Receive(*client).data, Binary(1, "out"));
  ASSERT_TRUE(process->Stderr("err"));
  EXPECT_EQ(Receive(*client).data, Binary(2, "err"));
  process->Exit(0);
  EXPECT_THAT(ReceiveUntilClosed(*client), ElementsAre(Binary(3, kSuccessStatus)));
  EXPECT_EQ(client->close_code(), 1000);
}

TEST_F(WebSocketExecTest, Base64UsesTextMessagesWithDigitChannels) {
  std::unique_ptr<WsClient> client = Connect(Exec({Io::kStdin, Io::kStdout}), {"v4.base64.channel.k8s.io"});
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->protocol(), "v4.base64.channel.k8s.io");
  const WsMessage connected = Receive(*client);
  EXPECT_TRUE(connected.text);
  EXPECT_EQ(connected.data, "1");
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  ASSERT_TRUE(client->Send("0" + absl::Base64Escape("ls\n"), /*binary=*/false).ok());
  EXPECT_EQ(process->ReadStdin(3, kWait).value_or(""), "ls\n");
  ASSERT_TRUE(process->Stdout("a b"));
  EXPECT_EQ(Receive(*client).data, "1" + absl::Base64Escape("a b"));
  process->Exit(0);
  EXPECT_THAT(ReceiveUntilClosed(*client), ElementsAre("3" + absl::Base64Escape(kSuccessStatus)));
}

TEST_F(WebSocketExecTest, V1WritesTextOnlyOnFailure) {
  std::unique_ptr<WsClient> client = Connect(Exec({Io::kStdout}), {"channel.k8s.io"});
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(Receive(*client).data, "\x01");
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  process->Exit(2);
  const std::vector<std::string> messages = ReceiveUntilClosed(*client);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_THAT(messages[0], ::testing::StartsWith("\x03" "command terminated with non-zero exit code"));
}

TEST_F(WebSocketExecTest, V5CloseSignalEndsStdin) {
  std::unique_ptr<WsClient> client = Connect(Exec({Io::kStdin, Io::kStdout}), {"v5.channel.k8s.io"});
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->protocol(), "v5.channel.k8s.io");
  EXPECT_EQ(Receive(*client).data, "\x01");
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  ASSERT_TRUE(client->Send(Binary(0, "abc")).ok());
  ASSERT_TRUE(client->Send(std::string("\xff\x00", 2)).ok());
  EXPECT_EQ(process->ReadStdinToEof(kWait).value_or("no EOF"), "abc");
  ASSERT_TRUE(process->Stdout("3 bytes"));
  EXPECT_EQ(Receive(*client).data, Binary(1, "3 bytes"));
  process->Exit(3);
  const std::vector<std::string> messages = ReceiveUntilClosed(*client);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_THAT(messages[0], ::testing::StartsWith("\x03{"));
  EXPECT_THAT(messages[0], HasSubstr(R"("reason":"NonZeroExitCode")"));
  EXPECT_THAT(messages[0], HasSubstr(R"({"reason":"ExitCode","message":"3"})"));
  EXPECT_EQ(client->close_code(), 1000);
}

TEST_F(WebSocketExecTest, V5MalformedCloseSignalEndsTheSession) {
  std::unique_ptr<WsClient> client = Connect(Exec({Io::kStdin, Io::kStdout}), {"v5.channel.k8s.io"});
  ASSERT_NE(client, nullptr);
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  ASSERT_TRUE(client->Send(std::string("\xff\x00\x00", 3)).ok());
  EXPECT_THAT(ReceiveUntilClosed(*client), ElementsAre("\x01"));
  EXPECT_TRUE(process->WaitAbandoned(kWait));
}

TEST_F(WebSocketExecTest, ConnectedSignalGoesToTheLowestOutputChannel) {
  const struct {
    ExecRequest request;
    std::string connected;
  } cases[] = {
      {Exec({Io::kStdout, Io::kStderr}), "\x01"},
      {Exec({Io::kStdin, Io::kStderr}), "\x02"},
      {Exec({Io::kStdin}), "\x03"},
      {Exec({Io::kTty, Io::kStdin, Io::kStderr}), "\x03"},  // no stderr with a TTY
  };
  for (const auto& c : cases) {
    std::unique_ptr<WsClient> client = Connect(c.request, {"v4.channel.k8s.io"});
    ASSERT_NE(client, nullptr);
    EXPECT_EQ(Receive(*client).data, c.connected);
  }
}

TEST_F(WebSocketExecTest, TtyResizeChannel) {
  std::unique_ptr<WsClient> client = Connect(Exec({Io::kTty, Io::kStdin, Io::kStdout}), {"v4.channel.k8s.io"});
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Send(Binary(4, R"({"Width":80,"Height":24})")).ok());
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(process->first_size(), (TerminalSize{80, 24}));
  ASSERT_TRUE(client->Send(Binary(4, R"({"Width":132,"Height":43})")).ok());
  ASSERT_TRUE(process->WaitResizes(1, kWait));
  EXPECT_THAT(process->resizes(), ElementsAre(TerminalSize{132, 43}));
}

TEST_F(WebSocketExecTest, AttachReportsSuccess) {
  std::unique_ptr<WsClient> client = Connect(Attach({Io::kStdout}), {"v4.channel.k8s.io"});
  ASSERT_NE(client, nullptr);
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  ASSERT_TRUE(std::holds_alternative<AttachRequest>(process->request()));
  process->Exit(std::nullopt);
  EXPECT_THAT(ReceiveUntilClosed(*client), ElementsAre("\x01", Binary(3, kSuccessStatus)));
}

TEST_F(WebSocketExecTest, AnswersPings) {
  std::unique_ptr<WsClient> client = Connect(Exec({Io::kStdout}), {"v5.channel.k8s.io"});
  ASSERT_NE(client, nullptr);
  client->Ping();
  EXPECT_TRUE(client->WaitPong(kWait));
}

TEST_F(WebSocketExecTest, ClientThatLeavesAbandonsTheProcess) {
  std::unique_ptr<WsClient> client = Connect(Exec({Io::kStdout}), {"v4.channel.k8s.io"});
  ASSERT_NE(client, nullptr);
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  client->Close();
  EXPECT_TRUE(process->WaitAbandoned(kWait));
  EXPECT_TRUE(Eventually([&] { return server_->active_connections() == 0; })) << server_->active_connections();
}

TEST_F(WebSocketExecTest, SlowClientHoldsBackTheProcessWithBoundedMemory) {
  constexpr std::size_t kChunk = 1 << 20, kTotal = 64 << 20;
  std::unique_ptr<WsClient> client = Connect(Exec({Io::kStdout}), {"v5.channel.k8s.io"});
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(Receive(*client).data, "\x01");
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  client->PauseReading(true);
  const std::size_t rss_before = RssBytes();
  std::atomic<std::size_t> written = 0;
  std::thread writer([&] {
    const std::string chunk(kChunk, 'x');
    while (written < kTotal && process->Stdout(chunk)) written += kChunk;
  });

  EXPECT_LT(WaitStalled(written, absl::Milliseconds(300)), kTotal / 2);
  const std::size_t rss_now = RssBytes();
  const std::size_t rss_growth = rss_now - std::min(rss_now, rss_before);
  EXPECT_LT(rss_growth, std::size_t{32} << 20) << "RSS grew by " << (rss_growth >> 20) << " MiB";

  client->PauseReading(false);
  std::size_t received = 0;
  while (received < kTotal) {
    const WsMessage message = Receive(*client);
    ASSERT_EQ(message.data[0], '\x01') << "after " << received << " bytes";
    received += message.data.size() - 1;
  }
  writer.join();
  process->Exit(0);
  EXPECT_THAT(ReceiveUntilClosed(*client), ElementsAre(Binary(3, kSuccessStatus)));
}

TEST_F(WebSocketExecTest, CarriesMuchStdin) {
  std::unique_ptr<WsClient> client = Connect(Exec({Io::kStdin, Io::kStdout}), {"v5.channel.k8s.io"});
  ASSERT_NE(client, nullptr);
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  std::string input;
  for (int i = 0; input.size() < (8u << 20); ++i) absl::StrAppend(&input, i, ",");
  std::thread sender([&] {
    for (std::size_t offset = 0; offset < input.size(); offset += 32 << 10) {
      ASSERT_TRUE(client->Send(Binary(0, std::string_view(input).substr(offset, 32 << 10))).ok());
    }
    ASSERT_TRUE(client->Send(std::string("\xff\x00", 2)).ok());
  });
  const absl::StatusOr<std::string> received = process->ReadStdinToEof(absl::Seconds(20));
  sender.join();
  ASSERT_TRUE(received.ok()) << received.status().code();
  EXPECT_TRUE(*received == input) << "got " << received->size() << " of " << input.size() << " bytes";
}

TEST_F(WebSocketExecTest, RefusesUnknownSubprotocols) {
  streamtest::UpgradeResponse response;
  absl::StatusOr<std::unique_ptr<WsClient>> client =
      WsClient::Connect(Url(Exec({Io::kStdout})), {"v6.channel.k8s.io", "SPDY/3.1+portforward.k8s.io"}, &response);
  EXPECT_FALSE(client.ok());
  EXPECT_EQ(response.status, 403);
  EXPECT_EQ(runtime_.starts(), 0u);
}

TEST_F(WebSocketExecTest, AcceptsOnlyGet) {
  const streamtest::UpgradeResponse response =
      RawRequest(Url(Exec({Io::kStdout})), "POST",
                 {"Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13",
                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Protocol: v4.channel.k8s.io",
                  "Content-Length: 0"});
  EXPECT_EQ(response.status, 405);
  EXPECT_EQ(response.Header("allow"), "GET");
  EXPECT_EQ(response.Header("content-length"), absl::StrCat(response.body.size()));
}

}  // namespace
}  // namespace streaming
