#include "tests/unit/streaming/streaming_fixture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <fstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace streaming {

namespace {

// A socket bound to 127.0.0.1:0, and the port it got.
common::UniqueFd BindLoopback(uint16_t* port) {
  common::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ADD_FAILURE() << "cannot bind 127.0.0.1:0";
    return {};
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

template <typename Req>
Req WithIo(Req request, std::initializer_list<Io> io) {
  request.container_id = "c1";
  for (Io each : io) {
    switch (each) {
      case Io::kStdin: request.stdin = true; break;
      case Io::kStdout: request.stdout = true; break;
      case Io::kStderr: request.stderr = true; break;
      case Io::kTty: request.tty = true; break;
    }
  }
  return request;
}

}  // namespace

ExecRequest Exec(std::initializer_list<Io> io) {
  ExecRequest request;
  request.cmd = {"sh"};
  return WithIo(std::move(request), io);
}

AttachRequest Attach(std::initializer_list<Io> io) { return WithIo(AttachRequest(), io); }

PortForwardRequest PortForward(std::vector<uint16_t> ports) {
  PortForwardRequest request;
  request.pod_sandbox_id = kSandbox;
  request.ports = std::move(ports);
  return request;
}

void StreamingTest::TearDown() {
  if (server_) server_->Stop();
}

void StreamingTest::StartServer(ServerOptions options) {
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(std::move(options), runtime_);
  ASSERT_TRUE(server.ok()) << server.status();
  server_ = std::move(*server);
}

std::string StreamingTest::Url(Request request) {
  absl::StatusOr<std::string> url = server_->IssueUrl(std::move(request));
  EXPECT_TRUE(url.ok()) << url.status();
  return url.value_or("");
}

bool Eventually(const std::function<bool()>& done, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!done()) {
    if (absl::Now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

spdy::Headers StreamType(const std::string& type) { return {{"streamtype", type}}; }

std::vector<uint32_t> OpenStreams(streamtest::SpdyClient& client, const std::vector<std::string>& types) {
  std::vector<uint32_t> ids;
  for (const std::string& type : types) {
    absl::StatusOr<uint32_t> id = client.OpenStream(StreamType(type));
    if (!id.ok()) {
      ADD_FAILURE() << "opening the " << type << " stream: " << id.status();
      return {};
    }
    ids.push_back(*id);
  }
  return ids;
}

std::vector<std::string> ReceiveUntilClosed(streamtest::WsClient& client, absl::Duration timeout) {
  std::vector<std::string> messages;
  for (;;) {
    absl::StatusOr<streamtest::WsMessage> message = client.Receive(timeout);
    if (message.ok()) {
      messages.push_back(std::move(message->data));
      continue;
    }
    if (message.status().code() != absl::StatusCode::kUnavailable) ADD_FAILURE() << message.status();
    return messages;
  }
}

streamtest::UpgradeResponse RawRequest(const std::string& url, const std::string& method,
                                       const std::vector<std::string>& headers) {
  absl::StatusOr<streamtest::Url> parsed = streamtest::ParseUrl(url);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return {};
  absl::StatusOr<common::UniqueFd> fd = streamtest::Dial(*parsed);
  EXPECT_TRUE(fd.ok()) << fd.status();
  if (!fd.ok()) return {};
  std::string head = absl::StrCat(method, " ", parsed->target, " HTTP/1.1\r\nHost: ", parsed->host, "\r\n");
  for (const std::string& header : headers) absl::StrAppend(&head, header, "\r\n");
  head += "\r\n";
  absl::StatusOr<streamtest::UpgradeResponse> response = streamtest::Upgrade(fd->get(), head, nullptr);
  EXPECT_TRUE(response.ok()) << response.status();
  return response.value_or(streamtest::UpgradeResponse{});
}

TcpTarget::TcpTarget() : listener_(BindLoopback(&port_)) {
  if (::listen(listener_.get(), 16) != 0) ADD_FAILURE() << "cannot listen";
}

common::UniqueFd TcpTarget::Accept(absl::Duration timeout) {
  pollfd p{listener_.get(), POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout))) <= 0) return {};
  return common::UniqueFd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
}

uint16_t ClosedPort(common::UniqueFd& held) {
  uint16_t port = 0;
  held = BindLoopback(&port);
  return port;
}

std::size_t RssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    absl::string_view value = line;
    if (!absl::ConsumePrefix(&value, "VmRSS:")) continue;
    std::size_t kib = 0;
    if (absl::SimpleAtoi(absl::StripSuffix(absl::StripAsciiWhitespace(value), " kB"), &kib)) return kib << 10;
  }
  ADD_FAILURE() << "no VmRSS in /proc/self/status";
  return 0;
}

std::size_t WaitStalled(const std::atomic<std::size_t>& counter, absl::Duration quiet) {
  std::size_t last = counter;
  for (const absl::Time deadline = absl::Now() + absl::Seconds(20); absl::Now() < deadline;) {
    std::this_thread::sleep_for(absl::ToChronoNanoseconds(quiet));
    if (counter == last) return last;
    last = counter;
  }
  ADD_FAILURE() << "the producer never stalled";
  return last;
}

}  // namespace streaming
