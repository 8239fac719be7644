#include "dockerclient/http_transport.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/no_wait.h"
#include "tests/unit/test_http_server.h"

namespace dockerclient {
namespace {

using testhttp::ReadRequest;
using testhttp::Response;
using testhttp::UnixHttpServer;
using testhttp::WriteAll;
using ::testing::HasSubstr;

common::Context Timeout(absl::Duration d) { return common::Context::WithTimeout(d); }

// Answers every request on the connection with 200 and the request target as body.
void EchoTarget(int fd, int) {
  std::string buffer;
  while (auto req = ReadRequest(fd, buffer)) {
    if (!WriteAll(fd, Response(200, req->target))) return;
  }
}

// Blocks until the client goes away.
void WaitForClose(int fd) {
  char byte;
  while (::read(fd, &byte, 1) > 0) {
  }
}

TEST(HttpTransportTest, KeepAliveReusesOneConnection) {
  UnixHttpServer server(EchoTarget);
  HttpTransport transport(server.path(), server.endpoint());
  for (const char* target : {"/first", "/second", "/third"}) {
    auto response = transport.Request(Timeout(absl::Seconds(5)), "GET", target);
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, target);
  }
  EXPECT_EQ(server.accepted(), 1);
}

TEST(HttpTransportTest, NoRequestLeavesAThreadThatMustNotWaitAndTheScopeKnows) {
  UnixHttpServer server(EchoTarget);
  HttpTransport transport(server.path(), server.endpoint());
  {
    common::NoWaitScope no_wait;
    auto refused = transport.Request(Timeout(absl::Seconds(5)), "GET", "/containers/abc/json");
    ASSERT_FALSE(refused.ok());
    EXPECT_THAT(refused.status().message(), HasSubstr("GET /containers/abc/json"));
    EXPECT_TRUE(no_wait.wanted_to_wait());
  }
  EXPECT_EQ(server.accepted(), 0) << "dockerd never saw it";
  auto sent = transport.Request(Timeout(absl::Seconds(5)), "GET", "/after");
  ASSERT_TRUE(sent.ok()) << sent.status();
  EXPECT_EQ(sent->body, "/after");
}

TEST(HttpTransportTest, SendsBodyAndLowercasesResponseHeaders) {
  std::string seen_head, seen_body;
  UnixHttpServer server([&](int fd, int) {
    std::string buffer;
    auto req = ReadRequest(fd, buffer);
    if (!req) return;
    seen_head = req->head;
    seen_body = req->body;
    WriteAll(fd, Response(201, "{}", "X-Custom-Header: a\r\nSet-Cookie: one\r\nSet-Cookie: two\r\n"));
  });
  HttpTransport transport(server.path(), server.endpoint());
  auto response = transport.Request(Timeout(absl::Seconds(5)), "POST", "/containers/create?name=x",
                                    R"({"Image":"busybox"})", {{"X-Extra", "1"}});
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 201);
  EXPECT_EQ(response->headers["x-custom-header"], "a");
  EXPECT_EQ(response->headers["set-cookie"], "one, two");
  EXPECT_EQ(seen_body, R"({"Image":"busybox"})");
  EXPECT_THAT(seen_head, HasSubstr("POST /containers/create?name=x HTTP/1.1"));
  EXPECT_THAT(seen_head, HasSubstr("Content-Type: application/json"));
  EXPECT_THAT(seen_head, HasSubstr("X-Extra: 1"));
}

TEST(HttpTransportTest, BodyUntilCloseIsReadWholeAndConnectionNotReused) {
  UnixHttpServer server([](int fd, int) {
    std::string buffer;
    if (ReadRequest(fd, buffer)) WriteAll(fd, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it");
  });
  HttpTransport transport(server.path(), server.endpoint());
  for (int i = 0; i < 2; ++i) {
    auto response = transport.Request(Timeout(absl::Seconds(5)), "GET", "/x");
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->body, "all of it");
  }
  EXPECT_EQ(server.accepted(), 2);
}

TEST(HttpTransportTest, ChunkedBodyIsDeliveredIncrementally) {
  std::promise<void> first_piece_seen;
  std::future<void> first_seen = first_piece_seen.get_future();
  std::atomic<bool> client_saw_first_before_second{false};
  UnixHttpServer server([&](int fd, int) {
    std::string buffer;
    if (!ReadRequest(fd, buffer)) return;
    WriteAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nfirst\n\r\n");
    // The second chunk goes out only once the client has handed on the first.
    client_saw_first_before_second = first_seen.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
    WriteAll(fd, "7\r\nsecond\n\r\n0\r\n\r\n");
    EchoTarget(fd, 0);
  });
  HttpTransport transport(server.path(), server.endpoint());
  std::vector<std::string> pieces;
  auto response = transport.Stream(Timeout(absl::Seconds(10)), "POST", "/images/create", {}, {}, absl::Seconds(10),
                                   [&](std::string_view piece) {
                                     if (pieces.empty()) first_piece_seen.set_value();
                                     pieces.emplace_back(piece);
                                   });
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_TRUE(response->body.empty());
  EXPECT_TRUE(client_saw_first_before_second);
  ASSERT_GE(pieces.size(), 2u);
  EXPECT_EQ(absl::StrJoin(pieces, ""), "first\nsecond\n");
  // The connection went back to the pool after the last chunk.
  ASSERT_TRUE(transport.Request(Timeout(absl::Seconds(5)), "GET", "/again").ok());
  EXPECT_EQ(server.accepted(), 1);
}

TEST(HttpTransportTest, StreamReturnsErrorBodyWholeInsteadOfStreaming) {
  UnixHttpServer server([](int fd, int) {
    std::string buffer;
    if (ReadRequest(fd, buffer)) {
      WriteAll(fd,
               "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n"
               "5\r\n{\"mes\r\ne\r\nsage\":\"gone\"}\n\r\n0\r\n\r\n");
    }
  });
  HttpTransport transport(server.path(), server.endpoint());
  bool called = false;
  auto response = transport.Stream(Timeout(absl::Seconds(5)), "POST", "/images/create", {}, {}, absl::Seconds(5),
                                   [&](std::string_view) { called = true; });
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 404);
  EXPECT_EQ(response->body, "{\"message\":\"gone\"}\n");
  EXPECT_FALSE(called);
}

TEST(HttpTransportTest, StreamAbortsWhenNoByteArrivesForIdleTimeout) {
  UnixHttpServer server([](int fd, int) {
    std::string buffer;
    if (!ReadRequest(fd, buffer)) return;
    WriteAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhi\n\r\n");
    WaitForClose(fd);
  });
  HttpTransport transport(server.path(), server.endpoint());
  std::string received;
  const absl::Time start = absl::Now();
  auto response = transport.Stream(Timeout(absl::Seconds(30)), "POST", "/images/create", {}, {},
                                   absl::Milliseconds(300), [&](std::string_view piece) { received.append(piece); });
  const absl::Duration elapsed = absl::Now() - start;
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(response.status().message(), HasSubstr("POST /images/create: no progress for 300ms, cancelled"));
  EXPECT_EQ(received, "hi\n");
  EXPECT_GE(elapsed, absl::Milliseconds(250));
  EXPECT_LT(elapsed, absl::Seconds(3));
}

TEST(HttpTransportTest, IdleTimeoutIsResetByEachPiece) {
  UnixHttpServer server([](int fd, int) {
    std::string buffer;
    if (!ReadRequest(fd, buffer)) return;
    WriteAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    // Six pieces 200ms apart: longer in all than the 700ms idle timeout, each gap well under it.
    for (int i = 0; i < 6; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      WriteAll(fd, "2\r\nx\n\r\n");
    }
    WriteAll(fd, "0\r\n\r\n");
    WaitForClose(fd);
  });
  HttpTransport transport(server.path(), server.endpoint());
  std::string received;
  auto response = transport.Stream(Timeout(absl::Seconds(10)), "GET", "/events", {}, {}, absl::Milliseconds(700),
                                   [&](std::string_view piece) { received.append(piece); });
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(received, "x\nx\nx\nx\nx\nx\n");
}

TEST(HttpTransportTest, DeadlineAbortsRequestToServerThatNeverAnswers) {
  UnixHttpServer server([](int fd, int) { WaitForClose(fd); });
  HttpTransport transport(server.path(), server.endpoint());
  const absl::Time start = absl::Now();
  auto response = transport.Request(Timeout(absl::Milliseconds(300)), "GET", "/containers/abc/json?size=1");
  const absl::Duration elapsed = absl::Now() - start;
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(response.status().message(), HasSubstr("GET /containers/abc/json"));
  EXPECT_THAT(response.status().message(), ::testing::Not(HasSubstr("size=1")));
  EXPECT_GE(elapsed, absl::Milliseconds(250));
  EXPECT_LT(elapsed, absl::Seconds(2));
}

TEST(HttpTransportTest, CancellationAbortsRequest) {
  UnixHttpServer server([](int fd, int) { WaitForClose(fd); });
  HttpTransport transport(server.path(), server.endpoint());
  const absl::Time cancel_at = absl::Now() + absl::Milliseconds(200);
  common::Context ctx = Timeout(absl::Seconds(30));
  ctx.is_cancelled = [cancel_at] { return absl::Now() >= cancel_at; };
  auto response = transport.Request(ctx, "GET", "/info");
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kCancelled);
  EXPECT_LT(absl::Now() - cancel_at, absl::Seconds(1));
}

TEST(HttpTransportTest, MissingSocketIsUnavailableNamingTheEndpoint) {
  HttpTransport transport("/tmp/dockershim-no-such-dir/docker.sock", "unix:///tmp/dockershim-no-such-dir/docker.sock");
  auto response = transport.Request(Timeout(absl::Seconds(5)), "GET", "/_ping");
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(response.status().message(), HasSubstr("unix:///tmp/dockershim-no-such-dir/docker.sock"));
}

TEST(HttpTransportTest, RefusedConnectionIsUnavailableNamingTheEndpoint) {
  // A socket file nobody listens on refuses connections, as after dockerd died.
  char dir[] = "/tmp/dsrefused.XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/docker.sock";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);

  HttpTransport transport(path, "unix://" + path);
  auto response = transport.Request(Timeout(absl::Seconds(5)), "GET", "/_ping");
  ::close(fd);
  ::unlink(path.c_str());
  ::rmdir(dir);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(response.status().message(), HasSubstr("unix://" + path));
  EXPECT_THAT(response.status().message(), HasSubstr("refused"));
}

TEST(HttpTransportTest, PooledConnectionClosedWhileIdleIsReplaced) {
  UnixHttpServer server([](int fd, int index) {
    std::string buffer;
    if (auto req = ReadRequest(fd, buffer)) WriteAll(fd, Response(200, "one"));
    if (index > 0) EchoTarget(fd, index);
    // The first connection closes after one answer that promised keep-alive.
  });
  HttpTransport transport(server.path(), server.endpoint());
  ASSERT_TRUE(transport.Request(Timeout(absl::Seconds(5)), "GET", "/a").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let the close arrive
  auto response = transport.Request(Timeout(absl::Seconds(5)), "POST", "/b");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(server.accepted(), 2);
}

// The first connection answers once, then reads the next request and hangs up
// without answering, as a daemon closing an idle connection at that moment would.
void DropSecondRequest(int fd, int index) {
  std::string buffer;
  if (index > 0) return EchoTarget(fd, index);
  if (ReadRequest(fd, buffer)) WriteAll(fd, Response(200, "one"));
  ReadRequest(fd, buffer);
}

TEST(HttpTransportTest, IdempotentRequestIsRetriedOnAFreshConnection) {
  UnixHttpServer server(DropSecondRequest);
  HttpTransport transport(server.path(), server.endpoint());
  ASSERT_TRUE(transport.Request(Timeout(absl::Seconds(5)), "GET", "/a").ok());
  auto response = transport.Request(Timeout(absl::Seconds(5)), "GET", "/b");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->body, "/b");
  EXPECT_EQ(server.accepted(), 2);
}

TEST(HttpTransportTest, NonIdempotentRequestIsNotResentAfterDelivery) {
  UnixHttpServer server(DropSecondRequest);
  HttpTransport transport(server.path(), server.endpoint());
  ASSERT_TRUE(transport.Request(Timeout(absl::Seconds(5)), "GET", "/a").ok());
  auto response = transport.Request(Timeout(absl::Seconds(5)), "POST", "/containers/x/start");
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(response.status().message(), HasSubstr(server.endpoint()));
  EXPECT_EQ(server.accepted(), 1);
}

TEST(HttpTransportTest, ConcurrentCallersShareThePool) {
  UnixHttpServer server(EchoTarget);
  HttpTransport transport(server.path(), server.endpoint(), /*max_idle_connections=*/4);
  constexpr int kThreads = 8, kCalls = 25;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        const std::string target = absl::StrCat("/t", t, "/", i);
        auto response = transport.Request(Timeout(absl::Seconds(10)), "GET", target);
        if (response.ok() && response->body == target) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, kThreads * kCalls);
  // At most one connection per concurrent caller, plus replacements for those the
  // bounded pool dropped.
  EXPECT_LT(server.accepted(), kThreads * kCalls / 2);
}

TEST(HttpTransportTest, UnknownMethodIsInvalidArgument) {
  HttpTransport transport("/nonexistent.sock", "unix:///nonexistent.sock");
  auto response = transport.Request(Timeout(absl::Seconds(1)), "FETCH", "/x");
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
}

// ---- Hijack ----

constexpr char kUpgraded[] = "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
                             "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n";

// Reads `fd` until EOF; empty plus a failure when nothing ends it within 5 s.
std::string ReadToEof(int fd) {
  std::string out;
  char chunk[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) != 1) {
      ADD_FAILURE() << "no EOF within 5s after \"" << out << "\"";
      return out;
    }
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n <= 0) return out;
    out.append(chunk, static_cast<size_t>(n));
  }
}

// Plays dockerd after an upgrade: answers with 101 and `early` in one write, then
// echoes what the client writes and, at the client's EOF, says "bye" and hangs up.
void UpgradeAndEcho(std::string early, std::string* head, int fd) {
  std::string buffer;
  auto req = ReadRequest(fd, buffer);
  if (!req) return;
  *head = req->head;
  if (!WriteAll(fd, kUpgraded + early)) return;
  char chunk[4096];
  for (ssize_t n; (n = ::read(fd, chunk, sizeof(chunk))) > 0;) {
    if (!WriteAll(fd, std::string_view(chunk, static_cast<size_t>(n)))) return;
  }
  WriteAll(fd, "bye");
}

TEST(HttpTransportTest, HijackHandsOverTheSocketWithTheBytesReadPastTheHeader) {
  std::string head;
  UnixHttpServer server([&](int fd, int) { UpgradeAndEcho("early output", &head, fd); });
  HttpTransport transport(server.path(), server.endpoint());
  auto hijack = transport.Hijack(Timeout(absl::Seconds(5)), "POST", "/exec/e1/start", R"({"Detach":false})");
  ASSERT_TRUE(hijack.ok()) << hijack.status();
  EXPECT_EQ(hijack->response.status, 101);
  EXPECT_EQ(hijack->response.headers["upgrade"], "tcp");
  ASSERT_TRUE(hijack->fd.valid());
  EXPECT_EQ(hijack->buffered, "early output");
  EXPECT_THAT(head, HasSubstr("POST /exec/e1/start HTTP/1.1"));
  EXPECT_THAT(head, HasSubstr("Connection: Upgrade"));
  EXPECT_THAT(head, HasSubstr("Upgrade: tcp"));

  const int fd = hijack->fd.get();
  EXPECT_EQ(::fcntl(fd, F_GETFL) & O_NONBLOCK, 0) << "handed over in blocking mode";
  EXPECT_NE(::fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
  ASSERT_TRUE(WriteAll(fd, "stdin data"));
  ASSERT_EQ(::shutdown(fd, SHUT_WR), 0);
  // The echo, then "bye": the server saw our half-close as EOF.
  EXPECT_EQ(ReadToEof(fd), "stdin databye");
}

TEST(HttpTransportTest, HijackedConnectionOutlivesTheHandshakeDeadline) {
  std::string head;
  UnixHttpServer server([&](int fd, int) { UpgradeAndEcho("", &head, fd); });
  HttpTransport transport(server.path(), server.endpoint());
  auto hijack = transport.Hijack(Timeout(absl::Milliseconds(200)), "POST", "/containers/c1/attach?stream=1");
  ASSERT_TRUE(hijack.ok()) << hijack.status();
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  ASSERT_TRUE(WriteAll(hijack->fd.get(), "late"));
  ::shutdown(hijack->fd.get(), SHUT_WR);
  EXPECT_EQ(ReadToEof(hijack->fd.get()), "latebye");
}

TEST(HttpTransportTest, HijackTakesA200RawStreamThatRunsUntilEof) {
  UnixHttpServer server([](int fd, int) {
    std::string buffer;
    if (!ReadRequest(fd, buffer)) return;
    WriteAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n\r\nraw ");
    WriteAll(fd, "rest");
  });
  HttpTransport transport(server.path(), server.endpoint());
  auto hijack = transport.Hijack(Timeout(absl::Seconds(5)), "POST", "/exec/e1/start");
  ASSERT_TRUE(hijack.ok()) << hijack.status();
  EXPECT_EQ(hijack->response.status, 200);
  ASSERT_TRUE(hijack->fd.valid());
  EXPECT_EQ(hijack->buffered + ReadToEof(hijack->fd.get()), "raw rest");
}

TEST(HttpTransportTest, HijackRefusedReturnsTheWholeErrorAndPoolsTheConnection) {
  UnixHttpServer server([](int fd, int) {
    std::string buffer;
    if (ReadRequest(fd, buffer)) {
      WriteAll(fd, "HTTP/1.1 409 Conflict\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "b\r\n{\"message\":\r\nf\r\n\"not running\"}\n\r\n0\r\n\r\n");
    }
    EchoTarget(fd, 0);
  });
  HttpTransport transport(server.path(), server.endpoint());
  auto hijack = transport.Hijack(Timeout(absl::Seconds(5)), "POST", "/exec/e1/start");
  ASSERT_TRUE(hijack.ok()) << hijack.status();
  EXPECT_EQ(hijack->response.status, 409);
  EXPECT_EQ(hijack->response.body, "{\"message\":\"not running\"}\n");
  EXPECT_FALSE(hijack->fd.valid());
  EXPECT_TRUE(hijack->buffered.empty());
  ASSERT_TRUE(transport.Request(Timeout(absl::Seconds(5)), "GET", "/next").ok());
  EXPECT_EQ(server.accepted(), 1);
}

TEST(HttpTransportTest, HijackedConnectionIsNeverPooled) {
  std::string head;
  UnixHttpServer server([&](int fd, int index) {
    if (index == 0) return UpgradeAndEcho("", &head, fd);
    EchoTarget(fd, index);
  });
  HttpTransport transport(server.path(), server.endpoint());
  auto hijack = transport.Hijack(Timeout(absl::Seconds(5)), "POST", "/exec/e1/start");
  ASSERT_TRUE(hijack.ok()) << hijack.status();
  auto next = transport.Request(Timeout(absl::Seconds(5)), "GET", "/next");
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->body, "/next");
  EXPECT_EQ(server.accepted(), 2);
}

TEST(HttpTransportTest, HijackHandshakeHonoursTheDeadline) {
  UnixHttpServer server([](int fd, int) { WaitForClose(fd); });
  HttpTransport transport(server.path(), server.endpoint());
  const absl::Time start = absl::Now();
  auto hijack = transport.Hijack(Timeout(absl::Milliseconds(300)), "POST", "/exec/e1/start?x=1");
  const absl::Duration elapsed = absl::Now() - start;
  ASSERT_FALSE(hijack.ok());
  EXPECT_EQ(hijack.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(hijack.status().message(), HasSubstr("POST /exec/e1/start"));
  EXPECT_GE(elapsed, absl::Milliseconds(250));
  EXPECT_LT(elapsed, absl::Seconds(2));
}

}  // namespace
}  // namespace dockerclient
