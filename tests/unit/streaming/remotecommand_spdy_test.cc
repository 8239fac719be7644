// Exec and attach over SPDY/3.1 as client-go drives them, against a fake runtime.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "streaming/spdy/frame.h"
#include "tests/unit/streaming/streaming_fixture.h"

namespace streaming {
namespace {

using streamtest::FakeProcess;
using streamtest::SpdyClient;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;

constexpr char kSize80x24[] = "{\"Width\":80,\"Height\":24}\n";

class SpdyExecTest : public StreamingTest {
 protected:
  void SetUp() override { StartServer(); }

  // Upgrades a fresh URL for `request`; nullptr (and a failure) if that fails.
  std::unique_ptr<SpdyClient> Connect(Request request,
                                      const std::vector<std::string>& protocols = kClientGoProtocols) {
    absl::StatusOr<std::unique_ptr<SpdyClient>> client = SpdyClient::Connect(Url(std::move(request)), protocols);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(*client) : nullptr;
  }

  std::shared_ptr<FakeProcess> Process(std::size_t index = 0) {
    std::shared_ptr<FakeProcess> process = runtime_.WaitProcess(index, kWait);
    EXPECT_NE(process, nullptr) << "process " << index << " did not start";
    return process;
  }
};

// Every stream in `ids` ended (FIN or RST) before the GOAWAY, which came last.
void ExpectStreamsEndedThenGoAway(SpdyClient& client, const std::vector<uint32_t>& ids) {
  ASSERT_TRUE(client.WaitGoAway(kWait));
  const std::vector<std::string> log = client.FrameLog();
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back(), "goaway") << ::testing::PrintToString(log);
  for (uint32_t id : ids) {
    const bool ended = std::ranges::find(log, absl::StrCat("fin ", id)) != log.end() ||
                       std::ranges::find(log, absl::StrCat("rst ", id)) != log.end();
    EXPECT_TRUE(ended) << "stream " << id << " did not end: " << ::testing::PrintToString(log);
  }
}

std::string ReadAll(SpdyClient& client, uint32_t id) {
  absl::StatusOr<std::string> data = client.ReadAll(id, kWait);
  EXPECT_TRUE(data.ok()) << data.status();
  return data.value_or("");
}

Json ParseStatus(const std::string& text) {
  Json status = Json::parse(text, nullptr, false);
  EXPECT_FALSE(status.is_discarded()) << text;
  return status;
}

TEST_F(SpdyExecTest, DemuxesOutputAndEndsWithTheSuccessStatus) {
  std::unique_ptr<SpdyClient> client = Connect(Exec({Io::kStdout, Io::kStderr}));
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->protocol(), "v4.channel.k8s.io");
  const std::vector<uint32_t> ids = OpenStreams(*client, {"error", "stdout", "stderr"});
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_THAT(client->FrameLog(), ElementsAre("syn_reply 1", "syn_reply 3", "syn_reply 5"));
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  const auto& request = std::get<ExecRequest>(process->request());
  EXPECT_EQ(request.container_id, "c1");
  EXPECT_THAT(request.cmd, ElementsAre("sh"));
  EXPECT_EQ(process->first_size(), std::nullopt);

  process->Stdout("hello ");
  process->Stderr("oops");
  process->Stdout("world");
  process->Exit(0);
  EXPECT_EQ(ReadAll(*client, ids[1]), "hello world");
  EXPECT_EQ(ReadAll(*client, ids[2]), "oops");
  EXPECT_EQ(ReadAll(*client, ids[0]), kSuccessStatus);
  ExpectStreamsEndedThenGoAway(*client, ids);
  EXPECT_TRUE(process->waited());
  EXPECT_FALSE(process->abandoned());
}

TEST_F(SpdyExecTest, ReportsANonZeroExitCode) {
  std::unique_ptr<SpdyClient> client = Connect(Exec({Io::kStdout}));
  ASSERT_NE(client, nullptr);
  const std::vector<uint32_t> ids = OpenStreams(*client, {"error", "stdout"});
  ASSERT_EQ(ids.size(), 2u);
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  process->Exit(3);
  EXPECT_EQ(ReadAll(*client, ids[1]), "");
  const Json status = ParseStatus(ReadAll(*client, ids[0]));
  EXPECT_EQ(status["status"], "Failure");
  EXPECT_EQ(status["reason"], "NonZeroExitCode");
  EXPECT_THAT(status["message"].get<std::string>(), HasSubstr("command terminated with non-zero exit code"));
  EXPECT_EQ(status["details"]["causes"], Json::parse(R"([{"reason":"ExitCode","message":"3"}])"));
  ExpectStreamsEndedThenGoAway(*client, ids);
}

TEST_F(SpdyExecTest, ReportsAFailedStartAsAnInternalError) {
  runtime_.FailStarts(absl::NotFoundError("no such container: c1"));
  std::unique_ptr<SpdyClient> client = Connect(Exec({Io::kStdout}));
  ASSERT_NE(client, nullptr);
  const std::vector<uint32_t> ids = OpenStreams(*client, {"error", "stdout"});
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(ReadAll(*client, ids[1]), "");
  const Json status = ParseStatus(ReadAll(*client, ids[0]));
  EXPECT_EQ(status["status"], "Failure");
  EXPECT_EQ(status["reason"], "InternalError");
  EXPECT_EQ(status["code"], 500);
  EXPECT_EQ(status["message"], "Internal error occurred: error executing command in container: no such container: c1");
  ExpectStreamsEndedThenGoAway(*client, ids);
}

TEST_F(SpdyExecTest, SendsNothingBeforeTheClientsFirstFrame) {
  std::unique_ptr<SpdyClient> client = Connect(Exec({Io::kStdout}));
  ASSERT_NE(client, nullptr);
  // Whatever the server sent right after the 101 would have arrived by now.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_THAT(client->FrameLog(), ElementsAre());
  // Only the client's (odd) ping ids are echoed.
  ASSERT_TRUE(client->SendPing(2).ok());
  ASSERT_TRUE(client->SendPing(1).ok());
  EXPECT_TRUE(client->WaitPingEcho(1, kWait));
  EXPECT_THAT(client->FrameLog(), ElementsAre("ping 1"));
}

TEST_F(SpdyExecTest, ReadsFramesThatCameWithTheUpgradeRequest) {
  absl::StatusOr<streamtest::Url> url = streamtest::ParseUrl(Url(Exec({Io::kStdout})));
  ASSERT_TRUE(url.ok());
  absl::StatusOr<common::UniqueFd> fd = streamtest::Dial(*url);
  ASSERT_TRUE(fd.ok()) << fd.status();
  const std::string request = absl::StrCat(
      "POST ", url->target, " HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
      "X-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n", spdy::FrameWriter::Ping(7));
  std::string leftover;
  absl::StatusOr<streamtest::UpgradeResponse> response = streamtest::Upgrade(fd->get(), request, &leftover);
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->status, 101);
  SpdyClient client(std::move(*fd), leftover);
  EXPECT_TRUE(client.WaitPingEcho(7, kWait));
}

TEST_F(SpdyExecTest, StdinReachesTheProcessAndItsFinClosesIt) {
  std::unique_ptr<SpdyClient> client = Connect(Exec({Io::kStdin, Io::kStdout}));
  ASSERT_NE(client, nullptr);
  const std::vector<uint32_t> ids = OpenStreams(*client, {"error", "stdin", "stdout"});
  ASSERT_EQ(ids.size(), 3u);
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  ASSERT_TRUE(client->Write(ids[1], "echo hi\n").ok());
  EXPECT_EQ(process->ReadStdin(8, kWait).value_or(""), "echo hi\n");
  ASSERT_TRUE(client->Write(ids[1], "exit\n").ok());
  ASSERT_TRUE(client->CloseStream(ids[1]).ok());
  EXPECT_EQ(process->ReadStdinToEof(kWait).value_or("no EOF"), "exit\n");
  // Only stdin was closed: the output still flows.
  ASSERT_TRUE(process->Stdout("hi\n"));
  process->Exit(0);
  EXPECT_EQ(ReadAll(*client, ids[2]), "hi\n");
  EXPECT_EQ(ReadAll(*client, ids[0]), kSuccessStatus);
}

TEST_F(SpdyExecTest, StdinSentBeforeTheStartReachesTheProcess) {
  // A TTY session waits a moment for the first size; the client types meanwhile.
  std::unique_ptr<SpdyClient> client = Connect(Exec({Io::kTty, Io::kStdin, Io::kStdout}));
  ASSERT_NE(client, nullptr);
  const std::vector<uint32_t> ids = OpenStreams(*client, {"error", "stdin", "stdout", "resize"});
  ASSERT_EQ(ids.size(), 4u);
  ASSERT_TRUE(client->Write(ids[1], "typed early").ok());
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(process->ReadStdin(11, kWait).value_or(""), "typed early");
}

TEST_F(SpdyExecTest, CarriesMuchStdin) {
  std::unique_ptr<SpdyClient> client = Connect(Exec({Io::kStdin, Io::kStdout}));
  ASSERT_NE(client, nullptr);
  const std::vector<uint32_t> ids = OpenStreams(*client, {"error", "stdin", "stdout"});
  ASSERT_EQ(ids.size(), 3u);
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  // Far more than a stream buffers: the session must stop and resume reading.
  std::string input;
  for (int i = 0; input.size() < (8u << 20); ++i) absl::StrAppend(&input, i, ",");
  std::thread sender([&] {
    for (std::size_t offset = 0; offset < input.size(); offset += 32 << 10) {
      ASSERT_TRUE(client->Write(ids[1], std::string_view(input).substr(offset, 32 << 10)).ok());
    }
    ASSERT_TRUE(client->CloseStream(ids[1]).ok());
  });
  const absl::StatusOr<std::string> received = process->ReadStdinToEof(absl::Seconds(20));
  sender.join();
  ASSERT_TRUE(received.ok()) << received.status().code();
  EXPECT_TRUE(*received == input) << "got " << received->size() << " of " << input.size() << " bytes";
  process->Exit(0);
  EXPECT_EQ(ReadAll(*client, ids[0]), kSuccessStatus);
}

TEST_F(SpdyExecTest, OutputHandedOverWithTheStreamComesFirst) {
  runtime_.HandOver(streamtest::StdcopyFrame(1, "early ") + streamtest::StdcopyFrame(2, "warning"));
  std::unique_ptr<SpdyClient> client = Connect(Exec({Io::kStdout, Io::kStderr}));
  ASSERT_NE(client, nullptr);
  const std::vector<uint32_t> ids = OpenStreams(*client, {"error", "stdout", "stderr"});
  ASSERT_EQ(ids.size(), 3u);
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  ASSERT_TRUE(process->Stdout("late"));
  process->Exit(0);
  EXPECT_EQ(ReadAll(*client, ids[1]), "early late");
  EXPECT_EQ(ReadAll(*client, ids[2]), "warning");
  EXPECT_EQ(ReadAll(*client, ids[0]), kSuccessStatus);
}

TEST_F(SpdyExecTest, WithoutStdinTheProcessSeesItClosed) {
  std::unique_ptr<SpdyClient> client = Connect(Exec({Io::kStdout}));
  ASSERT_NE(client, nullptr);
  ASSERT_EQ(OpenStreams(*client, {"error", "stdout"}).size(), 2u);
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(process->ReadStdinToEof(kWait).value_or("no EOF"), "");
}

class SpdyExecOldVersionTest : public SpdyExecTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(SpdyExecOldVersionTest, WritesTextOnTheErrorStreamOnlyOnFailure) {
  for (const int exit_code : {0, 3}) {
    std::unique_ptr<SpdyClient> client = Connect(Exec({Io::kStdout}), {GetParam()});
    ASSERT_NE(client, nullptr);
    EXPECT_EQ(client->protocol(), GetParam());
    const std::vector<uint32_t> ids = OpenStreams(*client, {"error", "stdout"});
    ASSERT_EQ(ids.size(), 2u);
    std::shared_ptr<FakeProcess> process = Process(exit_code == 0 ? 0 : 1);
    ASSERT_NE(process, nullptr);
    process->Exit(exit_code);
    const std::string status = ReadAll(*client, ids[0]);
    if (exit_code == 0) {
      EXPECT_EQ(status, "");
    } else {
      EXPECT_THAT(status, HasSubstr("non-zero exit code"));
      EXPECT_FALSE(status.starts_with("{")) << status;
    }
    ExpectStreamsEndedThenGoAway(*client, ids);
  }
}

INSTANTIATE_TEST_SUITE_P(V2V3, SpdyExecOldVersionTest, ::testing::Values("v3.channel.k8s.io", "v2.channel.k8s.io"));

TEST_F(SpdyExecTest, TtyGetsItsFirstSizeAtTheStartAndLaterOnesInOrderWithStdin) {
  std::unique_ptr<SpdyClient> client = Connect(Exec({Io::kTty, Io::kStdin, Io::kStdout}));
  ASSERT_NE(client, nullptr);
  const std::vector<uint32_t> ids = OpenStreams(*client, {"error", "stdin", "stdout", "resize"});
  ASSERT_EQ(ids.size(), 4u);
  const uint32_t stdin = ids[1], stdout = ids[2], resize = ids[3];
  ASSERT_TRUE(client->Write(resize, kSize80x24).ok());
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(process->first_size(), (TerminalSize{80, 24}));
  EXPECT_TRUE(std::get<ExecRequest>(process->request()).tty);

  // Input typed after a resize reaches the process only once the resize is done.
  process->HoldResizes(true);
  ASSERT_TRUE(client->Write(resize, "{\"Width\":100,\"Height\":40}\n").ok());
  ASSERT_TRUE(process->WaitResizes(1, kWait));
  ASSERT_TRUE(client->Write(stdin, "stty size\r").ok());
  EXPECT_FALSE(process->ReadStdin(1, absl::Milliseconds(200)).ok());
  process->HoldResizes(false);
  EXPECT_EQ(process->ReadStdin(10, kWait).value_or(""), "stty size\r");
  // Split across frames, and one with a zero dimension that is skipped.
  ASSERT_TRUE(client->Write(resize, "{\"Width\":0,\"Height\":9}{\"Width\":120,").ok());
  ASSERT_TRUE(client->Write(resize, "\"Height\":50}").ok());
  ASSERT_TRUE(process->WaitResizes(2, kWait));
  EXPECT_THAT(process->resizes(), ElementsAre(TerminalSize{100, 40}, TerminalSize{120, 50}));

  ASSERT_TRUE(process->Stdout("40 100\r\n"));  // raw with a TTY
  process->Exit(0);
  EXPECT_EQ(ReadAll(*client, stdout), "40 100\r\n");
  EXPECT_EQ(ReadAll(*client, ids[0]), kSuccessStatus);
}

TEST_F(SpdyExecTest, TtySessionEndsWithTheProcessWhileStdinIsOpen) {
  // critest's tty exec: stdin stays open until the exec returns.
  std::unique_ptr<SpdyClient> client = Connect(Exec({Io::kTty, Io::kStdin, Io::kStdout}));
  ASSERT_NE(client, nullptr);
  const std::vector<uint32_t> ids = OpenStreams(*client, {"error", "stdin", "stdout", "resize"});
  ASSERT_EQ(ids.size(), 4u);
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(process->first_size(), std::nullopt);  // no size was sent
  ASSERT_TRUE(process->Stdout("hello"));
  process->Exit(0);
  EXPECT_EQ(ReadAll(*client, ids[2]), "hello");
  EXPECT_EQ(ReadAll(*client, ids[0]), kSuccessStatus);
  ExpectStreamsEndedThenGoAway(*client, {ids[0], ids[2]});
  // The client's stdin was never closed under it.
  const std::vector<std::string> log = client->FrameLog();
  EXPECT_EQ(std::ranges::find(log, absl::StrCat("fin ", ids[1])), log.end()) << ::testing::PrintToString(log);
}

TEST_F(SpdyExecTest, ATerminalKeepsItsStdinPastTheClientsEof) {
  // Docker ends a TTY's output at its stdin's EOF: the runtime asks not to pass it on.
  std::unique_ptr<SpdyClient> client = Connect(Exec({Io::kTty, Io::kStdin, Io::kStdout}));
  ASSERT_NE(client, nullptr);
  const std::vector<uint32_t> ids = OpenStreams(*client, {"error", "stdin", "stdout", "resize"});
  ASSERT_EQ(ids.size(), 4u);
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  ASSERT_TRUE(client->Write(ids[1], "typed").ok());
  ASSERT_TRUE(client->CloseStream(ids[1]).ok());
  EXPECT_EQ(process->ReadStdin(5, kWait).value_or(""), "typed");
  EXPECT_FALSE(process->ReadStdinToEof(absl::Milliseconds(200)).ok());  // no EOF came
  ASSERT_TRUE(process->Stdout("later"));
  process->Exit(0);
  EXPECT_EQ(ReadAll(*client, ids[2]), "later");
  EXPECT_EQ(ReadAll(*client, ids[0]), kSuccessStatus);
}

TEST_F(SpdyExecTest, RefusesUnexpectedStreamsAtOnce) {
  std::unique_ptr<SpdyClient> client = Connect(Exec({Io::kStdout}));
  ASSERT_NE(client, nullptr);
  const std::vector<uint32_t> first = OpenStreams(*client, {"error"});
  ASSERT_EQ(first.size(), 1u);
  for (const std::string type : {"error", "stderr", "resize", "bogus"}) {
    EXPECT_EQ(client->OpenStream(StreamType(type)).status().code(), absl::StatusCode::kUnavailable) << type;
  }
  EXPECT_EQ(client->OpenStream({}).status().code(), absl::StatusCode::kUnavailable);
  const std::vector<uint32_t> rest = OpenStreams(*client, {"stdout"});
  ASSERT_EQ(rest.size(), 1u);
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  // After the start, even a stream type the request had is one too many.
  EXPECT_EQ(client->OpenStream(StreamType("stdout")).status().code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(process->Stdout("still here"));
  process->Exit(0);
  EXPECT_EQ(ReadAll(*client, rest[0]), "still here");
  EXPECT_EQ(ReadAll(*client, first[0]), kSuccessStatus);
}

TEST_F(SpdyExecTest, AttachReportsSuccessWithoutAnExitCode) {
  std::unique_ptr<SpdyClient> client = Connect(Attach({Io::kStdin, Io::kStdout, Io::kStderr}));
  ASSERT_NE(client, nullptr);
  const std::vector<uint32_t> ids = OpenStreams(*client, {"error", "stdin", "stdout", "stderr"});
  ASSERT_EQ(ids.size(), 4u);
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  ASSERT_TRUE(std::holds_alternative<AttachRequest>(process->request()));
  ASSERT_TRUE(client->Write(ids[1], "echo -n hello\n").ok());
  EXPECT_EQ(process->ReadStdin(14, kWait).value_or(""), "echo -n hello\n");
  ASSERT_TRUE(process->Stdout("hello"));
  ASSERT_TRUE(client->CloseStream(ids[1]).ok());
  EXPECT_EQ(process->ReadStdinToEof(kWait).value_or("no EOF"), "");
  process->Exit(std::nullopt);
  EXPECT_EQ(ReadAll(*client, ids[2]), "hello");
  EXPECT_EQ(ReadAll(*client, ids[3]), "");
  EXPECT_EQ(ReadAll(*client, ids[0]), kSuccessStatus);
  ExpectStreamsEndedThenGoAway(*client, {ids[0], ids[2], ids[3]});
}

TEST_F(SpdyExecTest, ClientThatLeavesAbandonsTheProcess) {
  std::unique_ptr<SpdyClient> client = Connect(Exec({Io::kStdin, Io::kStdout}));
  ASSERT_NE(client, nullptr);
  ASSERT_EQ(OpenStreams(*client, {"error", "stdin", "stdout"}).size(), 3u);
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  client.reset();
  EXPECT_TRUE(process->WaitAbandoned(kWait));
  EXPECT_FALSE(process->waited());
  EXPECT_TRUE(Eventually([&] { return server_->active_connections() == 0; })) << server_->active_connections();
}

TEST_F(SpdyExecTest, GarbageEndsOnlyItsOwnSession) {
  std::unique_ptr<SpdyClient> bad = Connect(Exec({Io::kStdout}));
  ASSERT_NE(bad, nullptr);
  ASSERT_EQ(OpenStreams(*bad, {"error", "stdout"}).size(), 2u);
  std::shared_ptr<FakeProcess> bad_process = Process(0);
  std::unique_ptr<SpdyClient> good = Connect(Exec({Io::kStdout}));
  ASSERT_NE(good, nullptr);
  const std::vector<uint32_t> ids = OpenStreams(*good, {"error", "stdout"});
  ASSERT_EQ(ids.size(), 2u);
  std::shared_ptr<FakeProcess> good_process = Process(1);
  ASSERT_TRUE(bad_process && good_process);

  // A control frame of SPDY version 0x7fff: the session cannot go on.
  ASSERT_TRUE(bad->SendRaw(std::string(16, '\xff')).ok());
  EXPECT_TRUE(bad->WaitGoAway(kWait));
  bad->Close();
  EXPECT_TRUE(bad_process->WaitAbandoned(kWait));

  ASSERT_TRUE(good_process->Stdout("fine"));
  good_process->Exit(0);
  EXPECT_EQ(ReadAll(*good, ids[1]), "fine");
  EXPECT_EQ(ReadAll(*good, ids[0]), kSuccessStatus);
  EXPECT_FALSE(good_process->abandoned());
}

TEST_F(SpdyExecTest, TruncatedFrameThenCloseEndsTheSession) {
  std::unique_ptr<SpdyClient> client = Connect(Exec({Io::kStdout}));
  ASSERT_NE(client, nullptr);
  ASSERT_EQ(OpenStreams(*client, {"error", "stdout"}).size(), 2u);
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  ASSERT_TRUE(client->SendRaw(spdy::FrameWriter::Ping(9).substr(0, 5)).ok());
  client.reset();
  EXPECT_TRUE(process->WaitAbandoned(kWait));
  EXPECT_TRUE(Eventually([&] { return server_->active_connections() == 0; }));
}

TEST_F(SpdyExecTest, SlowClientHoldsBackTheProcessWithBoundedMemory) {
  constexpr std::size_t kChunk = 1 << 20, kTotal = 64 << 20;
  std::unique_ptr<SpdyClient> client = Connect(Exec({Io::kStdout}));
  ASSERT_NE(client, nullptr);
  const std::vector<uint32_t> ids = OpenStreams(*client, {"error", "stdout"});
  ASSERT_EQ(ids.size(), 2u);
  std::shared_ptr<FakeProcess> process = Process();
  ASSERT_NE(process, nullptr);
  client->PauseReading(true);
  const std::size_t rss_before = RssBytes();
  std::atomic<std::size_t> written = 0;
  std::thread writer([&] {
    const std::string chunk(kChunk, 'x');
    while (written < kTotal && process->Stdout(chunk)) written += kChunk;
  });

  const std::size_t stalled_at = WaitStalled(written, absl::Milliseconds(300));
  EXPECT_LT(stalled_at, kTotal / 2);
  const std::size_t rss_now = RssBytes();
  const std::size_t rss_growth = rss_now - std::min(rss_now, rss_before);
  EXPECT_LT(rss_growth, std::size_t{32} << 20) << "RSS grew by " << (rss_growth >> 20) << " MiB";

  client->PauseReading(false);
  std::size_t received = 0;
  while (received < kTotal) {
    absl::StatusOr<std::string> data = client->ReadSome(ids[1], kWait);
    ASSERT_TRUE(data.ok()) << data.status() << " after " << received << " bytes";
    ASSERT_FALSE(data->empty()) << "stdout ended after " << received << " bytes";
    received += data->size();
  }
  writer.join();
  process->Exit(0);
  EXPECT_EQ(ReadAll(*client, ids[1]), "");
  EXPECT_EQ(ReadAll(*client, ids[0]), kSuccessStatus);
}

class SpdyExecTimeoutTest : public StreamingTest {};

TEST_F(SpdyExecTimeoutTest, ClosesTheConnectionWhenStreamsDoNotCome) {
  ServerOptions options;
  options.stream_creation_timeout = absl::Milliseconds(200);
  StartServer(std::move(options));
  absl::StatusOr<std::unique_ptr<SpdyClient>> client =
      SpdyClient::Connect(Url(Exec({Io::kStdin, Io::kStdout})), kClientGoProtocols);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_EQ(OpenStreams(**client, {"error", "stdin"}).size(), 2u);
  EXPECT_TRUE((*client)->WaitGoAway(kWait));
  EXPECT_TRUE((*client)->WaitClosed(kWait));
  EXPECT_EQ(runtime_.starts(), 0u);
  EXPECT_TRUE(Eventually([&] { return server_->active_connections() == 0; }));
}

}  // namespace
}  // namespace streaming
