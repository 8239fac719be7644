// The SPDY session alone, over a socket pair, with a handler the test drives.
#include "streaming/spdy/session.h"

#include <sys/socket.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "absl/strings/str_cat.h"
#include "tests/unit/streaming/streaming_fixture.h"

namespace streaming::spdy {
namespace {

using streamtest::SpdyClient;
using ::testing::ElementsAre;

// Accepts every stream (unless told not to) and keeps it for the test.
class RecordingHandler final : public Session::Handler {
 public:
  void OnStream(std::shared_ptr<Stream> stream) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (accept_) stream->Accept();
    streams_.push_back(std::move(stream));
  }
  void OnClosed(const absl::Status& why) override { closed_.set_value(why); }

  std::shared_ptr<Stream> stream(std::size_t index) {
    std::lock_guard<std::mutex> lock(mu_);
    return index < streams_.size() ? streams_[index] : nullptr;
  }
  void set_accept(bool accept) {
    std::lock_guard<std::mutex> lock(mu_);
    accept_ = accept;
  }
  std::future<absl::Status> closed() { return closed_.get_future(); }

 private:
  std::mutex mu_;
  bool accept_ = true;
  std::vector<std::shared_ptr<Stream>> streams_;
  std::promise<absl::Status> closed_;
};

class SpdySessionTest : public ::testing::Test {
 protected:
  ~SpdySessionTest() override {
    client_.reset();
    work_.reset();
    thread_.join();
  }

  // Runs `fn` on the session's thread and waits for it.
  template <typename Fn>
  auto OnSession(Fn fn) {
    std::packaged_task<decltype(fn())()> task(std::move(fn));
    auto result = task.get_future();
    boost::asio::post(ioc_, [&task] { task(); });
    return result.get();
  }

  void Start(SessionOptions options = {}) {
    int pair[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    boost::asio::local::stream_protocol::socket socket(ioc_);
    socket.assign(boost::asio::local::stream_protocol(), pair[0]);
    session_ = std::make_shared<Session>(MakeUnixStream(std::move(socket), ""), options);
    client_ = std::make_unique<SpdyClient>(common::UniqueFd(pair[1]));
    closed_ = handler_->closed();
    OnSession([this] { session_->Start(handler_); });
  }

  // The `index`th stream the client opened, once the session has it.
  std::shared_ptr<Stream> StreamAt(std::size_t index) {
    std::shared_ptr<Stream> stream;
    EXPECT_TRUE(Eventually([&] { return (stream = handler_->stream(index)) != nullptr; }));
    return stream;
  }

  // The next piece the session delivers to a reader of `stream`.
  std::future<std::pair<ErrorCode, std::string>> Read(const std::shared_ptr<Stream>& stream) {
    auto promise = std::make_shared<std::promise<std::pair<ErrorCode, std::string>>>();
    auto future = promise->get_future();
    OnSession([&] {
      stream->AsyncRead([promise](ErrorCode ec, std::string data) { promise->set_value({ec, std::move(data)}); });
    });
    return future;
  }

  absl::Status WaitClosed() {
    if (closed_.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
      return absl::DeadlineExceededError("the session did not close");
    }
    return closed_.get();
  }

  boost::asio::io_context ioc_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ = boost::asio::make_work_guard(ioc_);
  std::thread thread_{[this] { ioc_.run(); }};
  std::shared_ptr<RecordingHandler> handler_ = std::make_shared<RecordingHandler>();
  std::shared_ptr<Session> session_;
  std::future<absl::Status> closed_;
  std::unique_ptr<SpdyClient> client_;
};

TEST_F(SpdySessionTest, RefusesStreamIdsThatGoBackwards) {
  Start();
  ASSERT_TRUE(client_->OpenStream(StreamType("a")).ok());  // id 1
  ASSERT_TRUE(client_->OpenStream(StreamType("b")).ok());  // id 3
  ASSERT_TRUE(client_->SendSynStream(1, StreamType("again")).ok());
  ASSERT_TRUE(client_->SendPing(1).ok());
  ASSERT_TRUE(client_->WaitPingEcho(1, kWait));
  EXPECT_THAT(client_->FrameLog(), ElementsAre("syn_reply 1", "syn_reply 3", "rst 1", "ping 1"));
  EXPECT_EQ(handler_->stream(2), nullptr);
}

TEST_F(SpdySessionTest, StreamNobodyReadsStopsTheSessionUntilItIsRead) {
  Start(SessionOptions{.stream_buffer = 16});
  absl::StatusOr<uint32_t> id = client_->OpenStream(StreamType("stdin"));
  ASSERT_TRUE(id.ok()) << id.status();
  std::shared_ptr<Stream> stream = StreamAt(0);
  // One write, so one read: the ping after the data that fills the stream is still
  // parsed, but nothing is read after it.
  const auto header = FrameWriter::DataHeader(*id, 0, 16);
  ASSERT_TRUE(client_->SendRaw(std::string(header.begin(), header.end()) + std::string(16, 'a') +
                               FrameWriter::Ping(1))
                  .ok());
  ASSERT_TRUE(client_->WaitPingEcho(1, kWait));
  ASSERT_TRUE(client_->SendPing(3).ok());
  EXPECT_FALSE(client_->WaitPingEcho(3, absl::Milliseconds(200)));
  auto read = Read(stream);
  EXPECT_EQ(read.get().second, std::string(16, 'a'));
  EXPECT_TRUE(client_->WaitPingEcho(3, kWait));
}

TEST_F(SpdySessionTest, ResetOfAThrottledStreamKeepsTheRestOfTheReadIntact) {
  Start(SessionOptions{.stream_buffer = 16});
  absl::StatusOr<uint32_t> id = client_->OpenStream(StreamType("stdin"));
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(client_->Write(*id, std::string(15, 'a')).ok());
  ASSERT_TRUE(client_->SendPing(1).ok());
  ASSERT_TRUE(client_->WaitPingEcho(1, kWait));  // all of it parsed, just under the bound
  // In one write: the byte that throttles the stream, its reset (which lifts the
  // throttle in the middle of the read), and many frames behind them.
  std::string burst;
  const auto header = FrameWriter::DataHeader(*id, 0, 1);
  burst.append(header.begin(), header.end()).append("a");
  burst += FrameWriter::RstStream(*id, RstStatus::kCancel);
  constexpr uint32_t kPings = 20000;
  for (uint32_t i = 0; i < kPings; ++i) burst += FrameWriter::Ping(3 + 2 * i);
  ASSERT_TRUE(client_->SendRaw(burst).ok());
  ASSERT_TRUE(client_->WaitPingEcho(1 + 2 * kPings, kWait))
      << "the last ping was not echoed; got " << client_->FrameLog().size() << " frames";
  std::vector<std::string> expected;
  for (uint32_t i = 0; i <= kPings; ++i) expected.push_back(absl::StrCat("ping ", 1 + 2 * i));
  std::vector<std::string> log = client_->FrameLog();
  log.erase(log.begin());  // the SYN_REPLY
  EXPECT_EQ(log, expected);
}

TEST_F(SpdySessionTest, WriterWaitsWhileItsStreamHasTooMuchUnsent) {
  Start(SessionOptions{.stream_buffer = 1 << 10});
  absl::StatusOr<uint32_t> id = client_->OpenStream(StreamType("stdout"));
  ASSERT_TRUE(id.ok()) << id.status();
  std::shared_ptr<Stream> stream = StreamAt(0);
  client_->PauseReading(true);
  constexpr std::size_t kSize = 8 << 20;  // far more than the socket pair holds
  std::promise<ErrorCode> ready;
  OnSession([&] { stream->AsyncWrite(std::string(kSize, 'x'), [&](ErrorCode ec) { ready.set_value(ec); }); });
  std::future<ErrorCode> ready_future = ready.get_future();
  EXPECT_EQ(ready_future.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  client_->PauseReading(false);
  std::size_t received = 0;
  while (received < kSize) {
    absl::StatusOr<std::string> data = client_->ReadSome(*id, kWait);
    ASSERT_TRUE(data.ok() && !data->empty()) << data.status();
    received += data->size();
  }
  ASSERT_EQ(ready_future.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_FALSE(ready_future.get());
}

TEST_F(SpdySessionTest, FinishSendsGoAwayLastAndClosesOnceTheClientHas) {
  Start();
  absl::StatusOr<uint32_t> first = client_->OpenStream(StreamType("a"));
  absl::StatusOr<uint32_t> second = client_->OpenStream(StreamType("b"));
  ASSERT_TRUE(first.ok() && second.ok());
  std::shared_ptr<Stream> a = StreamAt(0), b = StreamAt(1);
  OnSession([&] {
    a->AsyncWrite("bye", [](ErrorCode) {});
    a->CloseWrite();
    b->Reset();
    session_->Finish();
  });
  ASSERT_TRUE(client_->WaitGoAway(kWait));
  EXPECT_THAT(client_->FrameLog(), ElementsAre("syn_reply 1", "syn_reply 3", "data 1", "fin 1", "rst 3", "goaway"));
  EXPECT_TRUE(client_->WaitClosed(kWait));  // the session half-closed
  client_->Close();
  EXPECT_TRUE(WaitClosed().ok());
}

TEST_F(SpdySessionTest, IdleTimeoutResetsStreamsThenGoesAway) {
  Start(SessionOptions{.idle_timeout = absl::Milliseconds(100)});
  absl::StatusOr<uint32_t> id = client_->OpenStream(StreamType("a"));
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(client_->WaitGoAway(kWait));
  EXPECT_THAT(client_->FrameLog(), ElementsAre("syn_reply 1", "rst 1", "goaway"));
  client_->Close();
  EXPECT_EQ(WaitClosed().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST_F(SpdySessionTest, IgnoresSettingsWindowUpdatesAndUnknownFrames) {
  Start();
  ASSERT_TRUE(client_->OpenStream(StreamType("a")).ok());
  Settings settings;
  settings.entries.push_back({.flags = 0, .id = 7, .value = 1 << 20});
  const std::string unknown = std::string("\x80\x03\x00\x0a\x00\x00\x00\x04", 8) + "cred";
  ASSERT_TRUE(client_->SendRaw(FrameWriter::Settings(settings) + FrameWriter::WindowUpdate(1, 1 << 16) + unknown +
                               FrameWriter::WindowUpdate(0, 1 << 16) + FrameWriter::Ping(3))
                  .ok());
  ASSERT_TRUE(client_->WaitPingEcho(3, kWait));
  // Nothing but the echo came back: no SETTINGS, WINDOW_UPDATE or reset.
  EXPECT_THAT(client_->FrameLog(), ElementsAre("syn_reply 1", "ping 3"));
}

TEST_F(SpdySessionTest, TooManyStreamsAreRefused) {
  Start(SessionOptions{.max_streams = 2});
  ASSERT_TRUE(client_->OpenStream(StreamType("a")).ok());
  ASSERT_TRUE(client_->OpenStream(StreamType("b")).ok());
  EXPECT_EQ(client_->OpenStream(StreamType("c")).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(SpdySessionTest, DataBeforeTheReplyIsKeptForTheReader) {
  Start();
  handler_->set_accept(false);
  absl::StatusOr<uint32_t> id = client_->OpenStream(StreamType("stdin"), absl::Milliseconds(50));
  EXPECT_EQ(id.status().code(), absl::StatusCode::kDeadlineExceeded);  // not answered yet
  ASSERT_TRUE(client_->Write(1, "early").ok());
  std::shared_ptr<Stream> stream = StreamAt(0);
  auto read = Read(stream);
  EXPECT_EQ(read.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  OnSession([&] { stream->Accept(); });
  EXPECT_EQ(read.get().second, "early");
}

}  // namespace
}  // namespace streaming::spdy
