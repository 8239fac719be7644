// Exec, Attach and PortForward end to end: CriService issues the URL, a real
// streaming::Server (127.0.0.1:0) serves it with shim::DockerStreamingRuntime on a
// real dockerd, and the test clients speak SPDY or WebSocket to it as client-go does.
// Pods run with the real CNI plugins (pod_fixture.h). Tests marked "critest N" are
// the conformance cases of PROTOCOLS.md 0.3.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <nlohmann/json.hpp>

#include "shim/streaming_runtime.h"
#include "streaming/server.h"
#include "tests/integration/pod_fixture.h"
#include "tests/support/stream_clients.h"

namespace shim {
namespace {

using namespace testpods;  // NOLINT: the fixture's helpers and matchers
using streamtest::SpdyClient;
using streamtest::WsClient;

const std::vector<std::string> kRemoteCommandProtocols = {"v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io",
                                                          "channel.k8s.io"};
constexpr char kSuccessStatus[] = R"({"metadata":{},"status":"Success"})";
constexpr absl::Duration kSessionTimeout = absl::Seconds(15);

// Ports of the servers container (ServersConfig).
constexpr int kHttpPort = 80;
constexpr int kSumPort = 9000;   // one connection, echoed; /tmp/sum gets the SHA-256 of what came in
constexpr int kEchoPort = 9001;  // echoes any number of connections
constexpr int kClosedPort = 5999;

// The streams a session asks for, as in the CRI request.
struct Streams {
  bool tty = false, stdin = false, stdout = true, stderr = true;
};

// A SPDY exec/attach client with its streams open, created one at a time in
// client-go's order (error, stdin, stdout, stderr, resize).
struct SpdyCommand {
  std::unique_ptr<SpdyClient> client;
  uint32_t error = 0, stdin = 0, stdout = 0, stderr = 0, resize = 0;
};

absl::StatusOr<SpdyCommand> OpenSpdyCommand(const std::string& url, Streams s) {
  SpdyCommand c;
  ASSIGN_OR_RETURN(c.client, SpdyClient::Connect(url, kRemoteCommandProtocols));
  const auto open = [&](const char* type, bool wanted, uint32_t& id) -> absl::Status {
    if (!wanted) return absl::OkStatus();
    ASSIGN_OR_RETURN(id, c.client->OpenStream({{"streamtype", type}}));
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(open("error", true, c.error));
  RETURN_IF_ERROR(open("stdin", s.stdin, c.stdin));
  RETURN_IF_ERROR(open("stdout", s.stdout, c.stdout));
  RETURN_IF_ERROR(open("stderr", s.stderr && !s.tty, c.stderr));
  RETURN_IF_ERROR(open("resize", s.tty, c.resize));
  return c;
}

// What a session delivered by the time the server ended it.
struct Outcome {
  std::string stdout, stderr, status;
};

absl::StatusOr<Outcome> ReadToEnd(SpdyCommand& c) {
  Outcome out;
  if (c.stdout) {
    ASSIGN_OR_RETURN(out.stdout, c.client->ReadAll(c.stdout, kSessionTimeout));
  }
  if (c.stderr) {
    ASSIGN_OR_RETURN(out.stderr, c.client->ReadAll(c.stderr, kSessionTimeout));
  }
  ASSIGN_OR_RETURN(out.status, c.client->ReadAll(c.error, kSessionTimeout));
  return out;
}

// Reads `stream` until what came holds `wanted`; returns all of it.
absl::StatusOr<std::string> ReadUntil(SpdyClient& client, uint32_t stream, const std::string& wanted,
                                      absl::Duration timeout = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + timeout;
  std::string got;
  while (!absl::StrContains(got, wanted)) {
    absl::StatusOr<std::string> piece = client.ReadSome(stream, deadline - absl::Now());
    if (!piece.ok() || piece->empty()) {
      return absl::DeadlineExceededError(absl::StrCat("wanted \"", wanted, "\", got \"", got, "\""));
    }
    got += *piece;
  }
  return got;
}

std::string ResizeEvent(int width, int height) {
  return absl::StrCat(R"({"Width":)", width, R"(,"Height":)", height, "}");
}

// The exit code in a v4 NonZeroExitCode status; -1 for any other status.
int ExitCodeOf(const std::string& status) {
  using Pointer = nlohmann::json::json_pointer;
  const nlohmann::json json = nlohmann::json::parse(status, nullptr, false);
  if (!json.is_object() || json.value("reason", "") != "NonZeroExitCode") return -1;
  if (json.value(Pointer("/details/causes/0/reason"), "") != "ExitCode") return -1;
  return std::stoi(json.value(Pointer("/details/causes/0/message"), "-1"));
}

// One forwarded connection on a SPDY port-forward session, opened as client-go does:
// the error stream (half-closed at once, the client never writes there), then data.
struct Forwarded {
  uint32_t error = 0, data = 0;
};

absl::StatusOr<Forwarded> OpenForward(SpdyClient& client, int port, int request_id) {
  streaming::spdy::Headers headers = {
      {"streamtype", "error"}, {"port", absl::StrCat(port)}, {"requestid", absl::StrCat(request_id)}};
  Forwarded f;
  ASSIGN_OR_RETURN(f.error, client.OpenStream(headers));
  RETURN_IF_ERROR(client.CloseStream(f.error));
  headers[0].second = "data";
  ASSIGN_OR_RETURN(f.data, client.OpenStream(headers));
  return f;
}

// An HTTP/1.0 GET through a new forward to `port`: the response, or the error stream's text.
absl::StatusOr<std::string> HttpGetThrough(SpdyClient& client, int port, int request_id) {
  ASSIGN_OR_RETURN(Forwarded f, OpenForward(client, port, request_id));
  RETURN_IF_ERROR(client.Write(f.data, "GET / HTTP/1.0\r\nHost: pod\r\n\r\n"));
  ASSIGN_OR_RETURN(std::string response, client.ReadAll(f.data, kSessionTimeout));
  // client-go resets the data stream once the pod's side ended, then waits for the error stream.
  (void)client.ResetStream(f.data);
  ASSIGN_OR_RETURN(std::string error, client.ReadAll(f.error, kSessionTimeout));
  if (!error.empty()) return absl::UnavailableError(error);
  return response;
}

class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr); }
  ~Sha256() { EVP_MD_CTX_free(ctx_); }
  void Update(std::string_view data) { EVP_DigestUpdate(ctx_, data.data(), data.size()); }
  std::string HexDigest() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_DigestFinal_ex(ctx_, digest, &length);
    std::string hex;
    for (unsigned int i = 0; i < length; ++i) {
      absl::StrAppend(&hex, absl::Hex(static_cast<unsigned>(digest[i]), absl::kZeroPad2));
    }
    return hex;
  }

 private:
  EVP_MD_CTX* ctx_;
};

struct EchoResult {
  std::string sent_sha, received_sha;
  uint64_t received = 0;
  absl::Status status;
};

// Sends `total` pseudo-random bytes on stream `out` while reading what comes back on
// `in`, then half-closes `out`; the SHA-256 of what went out and of what came back.
EchoResult EchoThrough(SpdyClient& client, uint32_t out, uint32_t in, uint64_t total) {
  EchoResult result;
  absl::Status sent_status;
  std::thread writer([&] {
    std::mt19937_64 rng(42);
    std::string chunk(32 << 10, '\0');  // client-go copies in 32 KiB pieces
    Sha256 sent;
    for (uint64_t done = 0; done < total && sent_status.ok(); done += chunk.size()) {
      for (std::size_t i = 0; i < chunk.size(); i += 8) {
        const uint64_t word = rng();
        std::memcpy(&chunk[i], &word, 8);
      }
      sent.Update(chunk);
      sent_status = client.Write(out, chunk);
    }
    result.sent_sha = sent.HexDigest();
    (void)client.CloseStream(out);
  });
  Sha256 received;
  for (;;) {
    absl::StatusOr<std::string> piece = client.ReadSome(in, kSessionTimeout);
    if (!piece.ok() || piece->empty()) {
      if (!piece.ok()) result.status = piece.status();
      break;
    }
    result.received += piece->size();
    received.Update(*piece);
  }
  writer.join();
  if (result.status.ok()) result.status = sent_status;
  result.received_sha = received.HexDigest();
  return result;
}

// Polls `done` every 50 ms until it holds or `timeout` passes.
template <typename Fn>
bool WaitFor(Fn done, absl::Duration timeout = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!done()) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return true;
}

class StreamingIntegration : public PodIntegration {
 protected:
  StreamingIntegration() : PodIntegration({"dstest-strm-", "dstest-strmnet-", 100, 119, "streaming_test."}) {}

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(PodIntegration::SetUp());
    runtime_ = std::make_unique<DockerStreamingRuntime>(*docker_, nullptr);
    streaming::ServerOptions server_options;
    server_options.bind_address = "127.0.0.1:0";
    auto server = streaming::Server::Start(server_options, *runtime_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    // The fixture's service, but with the pause infra image (what answers in the pod
    // is the app container) and this streaming server.
    Options options = service_->options();
    options.pod_infra_image = testenv::PauseImage();
    options.streaming = server_.get();
    service_ = std::make_unique<CriService>(options, *docker_, *network_);
    ASSERT_TRUE(service_->Init().ok());
  }

  void TearDown() override {
    // The server first: it ends every session and kills the execs still running.
    if (server_) server_->Stop();
    // Then the pods through the service, which must leave no container behind,
    // whatever sessions they had.
    for (const std::string& id : sandboxes_) Sh("docker kill " + id);
    for (const std::string& id : sandboxes_) {
      const absl::Status removed = Remove(id);
      EXPECT_TRUE(removed.ok()) << "RemovePodSandbox " << id << ": " << removed;
    }
    sandboxes_.clear();
    EXPECT_EQ(Sh("docker ps -aq --filter name=_" + namespace_ + "_"), "") << "containers left behind";
    PodIntegration::TearDown();
    server_.reset();
    runtime_.reset();
  }

  v1::ContainerConfig Container(const std::string& name, std::vector<std::string> command,
                                const std::string& image = testenv::BusyboxImage()) {
    v1::ContainerConfig c;
    c.mutable_metadata()->set_name(name);
    c.mutable_image()->set_image(image);
    for (auto& part : command) c.add_command(part);
    c.mutable_linux();
    return c;
  }
  // httpd on kHttpPort, the checksumming echo on kSumPort, the echo on kEchoPort.
  v1::ContainerConfig ServersConfig() {
    return Container("servers",
                     {"sh", "-c",
                      absl::StrCat("httpd -p ", kHttpPort, " -h /www; nc -ll -p ", kEchoPort,
                                   " -e cat & mkfifo /tmp/f; (sha256sum < /tmp/f > /tmp/sum) & nc -l -p ", kSumPort,
                                   " -e tee /tmp/f & exec sleep 600")},
                     kHttpdImage);
  }

  // A running pod with one started container.
  struct Pod {
    std::string pod_id, container_id;
  };
  absl::StatusOr<Pod> RunPodWith(const v1::ContainerConfig& container, v1::PodSandboxConfig pod = {}) {
    if (!pod.has_metadata()) pod = BaseConfig("pod");
    Pod out;
    ASSIGN_OR_RETURN(out.pod_id, Run(pod));
    v1::CreateContainerRequest create;
    create.set_pod_sandbox_id(out.pod_id);
    *create.mutable_config() = container;
    *create.mutable_sandbox_config() = pod;
    ASSIGN_OR_RETURN(v1::CreateContainerResponse created, service_->CreateContainer(ctx_, create));
    out.container_id = created.container_id();
    v1::StartContainerRequest start;
    start.set_container_id(out.container_id);
    RETURN_IF_ERROR(service_->StartContainer(ctx_, start).status());
    return out;
  }
  absl::StatusOr<Pod> RunSleeper() { return RunPodWith(Container("app", {"sleep", "600"})); }

  absl::StatusOr<std::string> ExecUrl(const std::string& id, std::vector<std::string> cmd, Streams s) {
    v1::ExecRequest req;
    req.set_container_id(id);
    for (auto& part : cmd) req.add_cmd(part);
    req.set_tty(s.tty);
    req.set_stdin(s.stdin);
    req.set_stdout(s.stdout);
    req.set_stderr(s.stderr);
    ASSIGN_OR_RETURN(v1::ExecResponse resp, service_->Exec(ctx_, req));
    return resp.url();
  }
  absl::StatusOr<std::string> AttachUrl(const std::string& id, Streams s) {
    v1::AttachRequest req;
    req.set_container_id(id);
    req.set_tty(s.tty);
    req.set_stdin(s.stdin);
    req.set_stdout(s.stdout);
    req.set_stderr(s.stderr);
    ASSIGN_OR_RETURN(v1::AttachResponse resp, service_->Attach(ctx_, req));
    return resp.url();
  }
  absl::StatusOr<std::string> PortForwardUrl(const std::string& pod_id) {
    v1::PortForwardRequest req;
    req.set_pod_sandbox_id(pod_id);
    ASSIGN_OR_RETURN(v1::PortForwardResponse resp, service_->PortForward(ctx_, req));
    return resp.url();
  }
  absl::StatusOr<SpdyCommand> SpdyExec(const std::string& id, std::vector<std::string> cmd, Streams s) {
    ASSIGN_OR_RETURN(std::string url, ExecUrl(id, std::move(cmd), s));
    return OpenSpdyCommand(url, s);
  }
  // A SPDY port-forward session to `pod_id`.
  absl::StatusOr<std::unique_ptr<SpdyClient>> SpdyForward(const std::string& pod_id) {
    ASSIGN_OR_RETURN(std::string url, PortForwardUrl(pod_id));
    return SpdyClient::Connect(url, {"portforward.k8s.io"});
  }

  absl::StatusOr<std::string> ExecSyncOut(const std::string& id, std::vector<std::string> cmd) {
    v1::ExecSyncRequest req;
    req.set_container_id(id);
    for (auto& part : cmd) req.add_cmd(part);
    req.set_timeout(10);
    ASSIGN_OR_RETURN(v1::ExecSyncResponse resp, service_->ExecSync(ctx_, req));
    return resp.stdout();
  }
  // Waits until something in `id`'s network namespace listens on TCP `port`.
  bool WaitListening(const std::string& id, int port) {
    return WaitFor([&] {
      absl::StatusOr<std::string> sockets = ExecSyncOut(id, {"netstat", "-ltn"});
      return sockets.ok() && absl::StrContains(*sockets, absl::StrCat(":", port, " "));
    });
  }
  bool ProcessRuns(const std::string& id, const std::string& command) {
    absl::StatusOr<std::string> ps = ExecSyncOut(id, {"ps", "-o", "args"});
    EXPECT_TRUE(ps.ok()) << ps.status();
    return ps.ok() && absl::StrContains(*ps, command);
  }

  std::unique_ptr<DockerStreamingRuntime> runtime_;
  std::unique_ptr<streaming::Server> server_;
};

// ---- exec over SPDY -------------------------------------------------------------------

TEST_F(StreamingIntegration, ExecEchoGivesExactlyItsOutput) {  // critest 1
  auto p = RunSleeper();
  ASSERT_TRUE(p.ok()) << p.status();
  auto exec = SpdyExec(p->container_id, {"echo", "-n", "hello"}, {});
  ASSERT_TRUE(exec.ok()) << exec.status();
  EXPECT_EQ(exec->client->protocol(), "v4.channel.k8s.io");
  auto out = ReadToEnd(*exec);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->stdout, "hello");
  EXPECT_EQ(out->stderr, "");
  EXPECT_EQ(out->status, kSuccessStatus);
  EXPECT_TRUE(exec->client->WaitGoAway(absl::Seconds(5)));
}

TEST_F(StreamingIntegration, TtyExecEndsWithItsProcessWhileStdinStaysOpen) {  // critest 2
  auto p = RunSleeper();
  ASSERT_TRUE(p.ok()) << p.status();
  const Streams tty{.tty = true, .stdin = true, .stdout = true, .stderr = false};
  auto exec = SpdyExec(p->container_id, {"echo", "-n", "hello"}, tty);
  ASSERT_TRUE(exec.ok()) << exec.status();
  // stdin is never closed: the process's exit alone must end the session.
  auto out = ReadToEnd(*exec);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->stdout, HasSubstr("hello"));
  EXPECT_EQ(out->status, kSuccessStatus);
}

TEST_F(StreamingIntegration, StdinReachesTheProcessAndItsEofEndsIt) {
  auto p = RunSleeper();
  ASSERT_TRUE(p.ok()) << p.status();
  auto exec = SpdyExec(p->container_id, {"cat"}, {.stdin = true});
  ASSERT_TRUE(exec.ok()) << exec.status();
  const std::string input = "first line\nsecond line, no newline";
  ASSERT_TRUE(exec->client->Write(exec->stdin, input).ok());
  ASSERT_TRUE(exec->client->CloseStream(exec->stdin).ok());
  auto out = ReadToEnd(*exec);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->stdout, input);
  EXPECT_EQ(out->stderr, "");
  EXPECT_EQ(out->status, kSuccessStatus);
}

TEST_F(StreamingIntegration, ExecEndsWithItsProcessWhileStdinStaysOpen) {
  auto p = RunSleeper();
  ASSERT_TRUE(p.ok()) << p.status();
  auto exec = SpdyExec(p->container_id, {"echo", "-n", "hello"}, {.stdin = true});
  ASSERT_TRUE(exec.ok()) << exec.status();
  auto out = ReadToEnd(*exec);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->stdout, "hello");
  EXPECT_EQ(out->status, kSuccessStatus);
}

TEST_F(StreamingIntegration, NonZeroExitCodeIsInTheStatus) {
  auto p = RunSleeper();
  ASSERT_TRUE(p.ok()) << p.status();
  auto exec = SpdyExec(p->container_id, {"sh", "-c", "exit 3"}, {});
  ASSERT_TRUE(exec.ok()) << exec.status();
  auto out = ReadToEnd(*exec);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(ExitCodeOf(out->status), 3) << out->status;
  EXPECT_THAT(out->status, HasSubstr(R"("status":"Failure")"));
}

TEST_F(StreamingIntegration, StdoutAndStderrStaySeparate) {
  auto p = RunSleeper();
  ASSERT_TRUE(p.ok()) << p.status();
  auto exec = SpdyExec(p->container_id, {"sh", "-c", "echo out1; echo err1 >&2; echo out2; echo err2 >&2"}, {});
  ASSERT_TRUE(exec.ok()) << exec.status();
  auto out = ReadToEnd(*exec);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->stdout, "out1\nout2\n");
  EXPECT_EQ(out->stderr, "err1\nerr2\n");
  EXPECT_EQ(out->status, kSuccessStatus);
}

TEST_F(StreamingIntegration, LargeStdinAndStdoutFlowAtOnce) {
  auto p = RunSleeper();
  ASSERT_TRUE(p.ok()) << p.status();
  // cat echoes while stdin still comes: neither direction may wait for the other.
  auto exec = SpdyExec(p->container_id, {"cat"}, {.stdin = true});
  ASSERT_TRUE(exec.ok()) << exec.status();
  constexpr uint64_t kTotal = 32 << 20;
  EchoResult echo = EchoThrough(*exec->client, exec->stdin, exec->stdout, kTotal);
  ASSERT_TRUE(echo.status.ok()) << echo.status;
  EXPECT_EQ(echo.received, kTotal);
  EXPECT_EQ(echo.received_sha, echo.sent_sha);
  auto out = ReadToEnd(*exec);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->status, kSuccessStatus);
}

TEST_F(StreamingIntegration, LargeOutputIsDemultiplexedIntact) {
  auto p = RunSleeper();
  ASSERT_TRUE(p.ok()) << p.status();
  // 32 MiB on stdout in Docker's frames, interleaved with nothing, then its checksum on stderr.
  auto exec = SpdyExec(p->container_id,
                       {"sh", "-c", "{ head -c 33554432 /dev/urandom | tee /dev/fd/3 | sha256sum >&2; } 3>&1"}, {});
  ASSERT_TRUE(exec.ok()) << exec.status();
  auto out = ReadToEnd(*exec);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->stdout.size(), 32u << 20);
  Sha256 sha;
  sha.Update(out->stdout);
  EXPECT_EQ(out->stderr.substr(0, 64), sha.HexDigest());
  EXPECT_EQ(out->status, kSuccessStatus);
}

TEST_F(StreamingIntegration, ExecIntoAContainerThatStoppedSinceTheRpcSaysWhy) {
  auto p = RunSleeper();
  ASSERT_TRUE(p.ok()) << p.status();
  auto url = ExecUrl(p->container_id, {"true"}, {});
  ASSERT_TRUE(url.ok()) << url.status();
  Sh("docker kill " + p->container_id);
  auto exec = OpenSpdyCommand(*url, {});
  ASSERT_TRUE(exec.ok()) << exec.status();
  auto out = ReadToEnd(*exec);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->status, HasSubstr(R"("reason":"InternalError")"));
  EXPECT_THAT(out->status, HasSubstr("is not running"));
}

TEST_F(StreamingIntegration, TtyExecSeesAResizeSentMidSession) {
  auto p = RunSleeper();
  ASSERT_TRUE(p.ok()) << p.status();
  const Streams tty{.tty = true, .stdin = true, .stdout = true, .stderr = false};
  auto exec = SpdyExec(p->container_id, {"sh"}, tty);
  ASSERT_TRUE(exec.ok()) << exec.status();
  SpdyClient& client = *exec->client;
  ASSERT_TRUE(client.Write(exec->resize, ResizeEvent(80, 24)).ok());
  // The prompt says the shell runs; then a new size, and a line that reads it.
  ASSERT_TRUE(ReadUntil(client, exec->stdout, "# ").ok());
  ASSERT_TRUE(client.Write(exec->resize, ResizeEvent(123, 45)).ok());
  ASSERT_TRUE(client.Write(exec->stdin, "stty size; exit\n").ok());
  auto out = ReadToEnd(*exec);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->stdout, HasSubstr("45 123"));
  EXPECT_EQ(out->status, kSuccessStatus);
}

TEST_F(StreamingIntegration, TtyExecStartsWithTheFirstSize) {
  auto p = RunSleeper();
  ASSERT_TRUE(p.ok()) << p.status();
  // Docker 20.10 (API 1.41) takes no ConsoleSize at exec create: the first size is a
  // resize right after the start, so a process that reads its size at once may miss
  // it. The sleep lets it land; from API 1.42 the size is there from the start.
  const Streams tty{.tty = true, .stdin = false, .stdout = true, .stderr = false};
  auto exec = SpdyExec(p->container_id, {"sh", "-c", "sleep 0.5; stty size"}, tty);
  ASSERT_TRUE(exec.ok()) << exec.status();
  ASSERT_TRUE(exec->client->Write(exec->resize, ResizeEvent(77, 33)).ok());
  auto out = ReadToEnd(*exec);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->stdout, HasSubstr("33 77"));
}

TEST_F(StreamingIntegration, ExecOfAMissingBinarySaysWhy) {
  auto p = RunSleeper();
  ASSERT_TRUE(p.ok()) << p.status();
  auto exec = SpdyExec(p->container_id, {"/no/such/binary"}, {});
  ASSERT_TRUE(exec.ok()) << exec.status();
  auto out = ReadToEnd(*exec);
  ASSERT_TRUE(out.ok()) << out.status();
  // Docker writes why on stdout and records 126 up to 26.1; 28.5 records 127 (as a shell
  // does for a command not found).
  EXPECT_THAT(out->stdout, HasSubstr("/no/such/binary"));
  EXPECT_THAT(ExitCodeOf(out->status), AnyOf(126, 127)) << out->status;
}

// Docker drops a TTY exec's output once its stdin is half-closed (crictl exec -it
// with stdin at EOF); the shim keeps the EOF from Docker.
TEST_F(StreamingIntegration, TtyExecOutlivesItsStdin) {
  auto p = RunSleeper();
  ASSERT_TRUE(p.ok()) << p.status();
  const Streams tty{.tty = true, .stdin = true, .stdout = true, .stderr = false};
  // It writes only once the test says so, after its stdin was closed.
  auto exec =
      SpdyExec(p->container_id, {"sh", "-c", "until [ -e /tmp/go ]; do sleep 0.05; done; echo -n done; exit 4"}, tty);
  ASSERT_TRUE(exec.ok()) << exec.status();
  ASSERT_TRUE(exec->client->CloseStream(exec->stdin).ok());
  ASSERT_TRUE(ExecSyncOut(p->container_id, {"touch", "/tmp/go"}).ok());
  auto out = ReadToEnd(*exec);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->stdout, HasSubstr("done"));
  EXPECT_EQ(ExitCodeOf(out->status), 4) << out->status;
}

TEST_F(StreamingIntegration, ClientLeavingMidExecKillsTheProcess) {
  auto p = RunSleeper();
  ASSERT_TRUE(p.ok()) << p.status();
  auto exec = SpdyExec(p->container_id, {"sleep", "300"}, {});
  ASSERT_TRUE(exec.ok()) << exec.status();
  ASSERT_TRUE(WaitFor([&] { return ProcessRuns(p->container_id, "sleep 300"); }));
  exec->client->Close();
  exec->client.reset();
  // Docker leaves an exec running when its connection goes; the shim kills it.
  EXPECT_TRUE(WaitFor([&] { return !ProcessRuns(p->container_id, "sleep 300"); }, absl::Seconds(5)));
}

TEST_F(StreamingIntegration, StoppingTheServerKillsRunningExecs) {
  auto p = RunSleeper();
  ASSERT_TRUE(p.ok()) << p.status();
  auto exec = SpdyExec(p->container_id, {"sleep", "300"}, {});
  ASSERT_TRUE(exec.ok()) << exec.status();
  ASSERT_TRUE(WaitFor([&] { return ProcessRuns(p->container_id, "sleep 300"); }));
  std::thread stop([this] { server_->Stop(); });
  // The server says GOAWAY and waits (boundedly) for the client to close, as client-go does.
  EXPECT_TRUE(exec->client->WaitGoAway(absl::Seconds(5)));
  exec->client->Close();
  stop.join();
  EXPECT_TRUE(WaitFor([&] { return !ProcessRuns(p->container_id, "sleep 300"); }, absl::Seconds(5)));
}

// ---- attach ---------------------------------------------------------------------------

TEST_F(StreamingIntegration, AttachToAStdinOnceShellEndsWhenStdinCloses) {  // critest 3
  v1::ContainerConfig shell = Container("shell", {"/bin/sh"});
  shell.set_stdin(true);
  shell.set_stdin_once(true);
  auto p = RunPodWith(shell);
  ASSERT_TRUE(p.ok()) << p.status();
  auto url = AttachUrl(p->container_id, {.stdin = true});
  ASSERT_TRUE(url.ok()) << url.status();
  auto attach = OpenSpdyCommand(*url, {.stdin = true});
  ASSERT_TRUE(attach.ok()) << attach.status();
  SpdyClient& client = *attach->client;
  ASSERT_TRUE(client.Write(attach->stdin, "echo -n hello\n").ok());
  auto hello = ReadUntil(client, attach->stdout, "hello");
  ASSERT_TRUE(hello.ok()) << hello.status();
  EXPECT_EQ(*hello, "hello");
  // StdinOnce: the shell sees EOF, exits, and so ends the container and the attach.
  ASSERT_TRUE(client.CloseStream(attach->stdin).ok());
  auto out = ReadToEnd(*attach);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->stdout, "");
  EXPECT_EQ(out->stderr, "");
  EXPECT_EQ(out->status, kSuccessStatus);
  auto inspect = Inspect(p->container_id);
  ASSERT_TRUE(inspect.ok()) << inspect.status();
  EXPECT_FALSE(inspect->state.running);
}

TEST_F(StreamingIntegration, AttachToATtyContainerIsRawAndSized) {
  v1::ContainerConfig shell = Container("shell", {"/bin/sh"});
  shell.set_stdin(true);
  shell.set_tty(true);
  auto p = RunPodWith(shell);
  ASSERT_TRUE(p.ok()) << p.status();
  const Streams tty{.tty = true, .stdin = true, .stdout = true, .stderr = false};
  auto url = AttachUrl(p->container_id, tty);
  ASSERT_TRUE(url.ok()) << url.status();
  auto attach = OpenSpdyCommand(*url, tty);
  ASSERT_TRUE(attach.ok()) << attach.status();
  SpdyClient& client = *attach->client;
  // The shell already runs: the size goes to the container's terminal before the
  // line that reads it.
  ASSERT_TRUE(client.Write(attach->resize, ResizeEvent(91, 19)).ok());
  ASSERT_TRUE(client.Write(attach->stdin, "stty size; exit\n").ok());
  auto out = ReadToEnd(*attach);
  ASSERT_TRUE(out.ok()) << out.status();
  // Raw terminal output (CR LF), not Docker's frames.
  EXPECT_THAT(out->stdout, HasSubstr("19 91\r\n"));
  EXPECT_EQ(out->status, kSuccessStatus);
}

// ---- WebSocket exec -------------------------------------------------------------------

// Everything a WebSocket exec session sent, by channel, until the server closed.
struct WsOutcome {
  std::map<int, std::string> channels;
  int messages_before_output = 0;  // empty "connected" messages
  int close_code = -1;
};

WsOutcome ReadWsToEnd(WsClient& ws) {
  WsOutcome out;
  for (;;) {
    absl::StatusOr<streamtest::WsMessage> m = ws.Receive(kSessionTimeout);
    if (!m.ok()) break;
    if (m->data.empty()) continue;
    if (m->data.size() == 1) ++out.messages_before_output;
    out.channels[static_cast<uint8_t>(m->data[0])] += m->data.substr(1);
  }
  out.close_code = ws.close_code();
  return out;
}

TEST_F(StreamingIntegration, WebSocketV5ExecGetsOutputStdinCloseAndExitCode) {
  auto p = RunSleeper();
  ASSERT_TRUE(p.ok()) << p.status();
  auto url = ExecUrl(p->container_id, {"sh", "-c", "cat; echo -n to-err >&2; exit 7"}, {.stdin = true});
  ASSERT_TRUE(url.ok()) << url.status();
  auto ws = WsClient::Connect(*url, {"v5.channel.k8s.io"});
  ASSERT_TRUE(ws.ok()) << ws.status();
  EXPECT_EQ((*ws)->protocol(), "v5.channel.k8s.io");
  ASSERT_TRUE((*ws)->Send(std::string("\x00", 1) + "typed in").ok());
  ASSERT_TRUE((*ws)->Send(std::string("\xff\x00", 2)).ok());  // v5 CLOSE of stdin
  WsOutcome out = ReadWsToEnd(**ws);
  EXPECT_EQ(out.channels[1], "typed in");
  EXPECT_EQ(out.channels[2], "to-err");
  EXPECT_EQ(ExitCodeOf(out.channels[3]), 7) << out.channels[3];
  EXPECT_GE(out.messages_before_output, 1);  // the "connected" signal
  EXPECT_EQ(out.close_code, 1000);
}

TEST_F(StreamingIntegration, WebSocketV4ExecGetsOutputAndExitCode) {
  auto p = RunSleeper();
  ASSERT_TRUE(p.ok()) << p.status();
  auto url = ExecUrl(p->container_id, {"sh", "-c", "echo -n hi; echo -n oops >&2; exit 2"}, {});
  ASSERT_TRUE(url.ok()) << url.status();
  auto ws = WsClient::Connect(*url, {"v4.channel.k8s.io"});
  ASSERT_TRUE(ws.ok()) << ws.status();
  EXPECT_EQ((*ws)->protocol(), "v4.channel.k8s.io");
  WsOutcome out = ReadWsToEnd(**ws);
  EXPECT_EQ(out.channels[1], "hi");
  EXPECT_EQ(out.channels[2], "oops");
  EXPECT_EQ(ExitCodeOf(out.channels[3]), 2) << out.channels[3];
  EXPECT_EQ(out.close_code, 1000);
}

// ---- port-forward ---------------------------------------------------------------------

TEST_F(StreamingIntegration, PortForwardReachesAWebServerInThePod) {  // critest 4
  auto p = RunPodWith(ServersConfig());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(WaitListening(p->container_id, kHttpPort));
  auto client = SpdyForward(p->pod_id);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ((*client)->protocol(), "portforward.k8s.io");
  auto page = HttpGetThrough(**client, kHttpPort, 0);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(*page, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(*page, HasSubstr(kHttpdText));
}

TEST_F(StreamingIntegration, PortForwardCarries256MiBIntactBothWays) {
  auto p = RunPodWith(ServersConfig());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(WaitListening(p->container_id, kSumPort));
  auto client = SpdyForward(p->pod_id);
  ASSERT_TRUE(client.ok()) << client.status();
  auto f = OpenForward(**client, kSumPort, 0);
  ASSERT_TRUE(f.ok()) << f.status();
  constexpr uint64_t kTotal = 256ull << 20;
  EchoResult echo = EchoThrough(**client, f->data, f->data, kTotal);
  ASSERT_TRUE(echo.status.ok()) << echo.status;
  EXPECT_EQ(echo.received, kTotal);
  EXPECT_EQ(echo.received_sha, echo.sent_sha);
  // What reached the pod, as the pod counted it.
  std::string in_pod;
  EXPECT_TRUE(WaitFor([&] {
    absl::StatusOr<std::string> sum = ExecSyncOut(p->container_id, {"cat", "/tmp/sum"});
    in_pod = sum.ok() ? sum->substr(0, 64) : "";
    return in_pod.size() == 64;
  }));
  EXPECT_EQ(in_pod, echo.sent_sha);
  auto error = (*client)->ReadAll(f->error, kSessionTimeout);
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_EQ(*error, "");
}

TEST_F(StreamingIntegration, TwoForwardsRunAtOnceOnOneSession) {
  auto p = RunPodWith(ServersConfig());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(WaitListening(p->container_id, kEchoPort));
  ASSERT_TRUE(WaitListening(p->container_id, kHttpPort));
  auto client = SpdyForward(p->pod_id);
  ASSERT_TRUE(client.ok()) << client.status();
  SpdyClient& c = **client;
  auto first = OpenForward(c, kEchoPort, 0);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = OpenForward(c, kEchoPort, 1);
  ASSERT_TRUE(second.ok()) << second.status();
  // Both connections are open at once; each gets its own echo.
  ASSERT_TRUE(c.Write(first->data, "to the first").ok());
  ASSERT_TRUE(c.Write(second->data, "to the second").ok());
  auto echo_second = ReadUntil(c, second->data, "to the second");
  ASSERT_TRUE(echo_second.ok()) << echo_second.status();
  EXPECT_EQ(*echo_second, "to the second");
  auto echo_first = ReadUntil(c, first->data, "to the first");
  ASSERT_TRUE(echo_first.ok()) << echo_first.status();
  EXPECT_EQ(*echo_first, "to the first");
  // And a third, to another port, while they last.
  auto page = HttpGetThrough(c, kHttpPort, 2);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(*page, HasSubstr(kHttpdText));
  for (const Forwarded& f : {*first, *second}) {
    ASSERT_TRUE(c.CloseStream(f.data).ok());
    auto rest = c.ReadAll(f.data, kSessionTimeout);
    ASSERT_TRUE(rest.ok()) << rest.status();
    EXPECT_EQ(*rest, "");
    auto error = c.ReadAll(f.error, kSessionTimeout);
    ASSERT_TRUE(error.ok()) << error.status();
    EXPECT_EQ(*error, "");
  }
}

TEST_F(StreamingIntegration, ForwardToAClosedPortSaysWhyAndTheSessionStaysUsable) {
  auto p = RunPodWith(ServersConfig());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(WaitListening(p->container_id, kHttpPort));
  auto client = SpdyForward(p->pod_id);
  ASSERT_TRUE(client.ok()) << client.status();
  auto refused = HttpGetThrough(**client, kClosedPort, 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()),
              StartsWith(absl::StrCat("error forwarding port ", kClosedPort, " to pod ", p->pod_id, ", uid : ")));
  auto page = HttpGetThrough(**client, kHttpPort, 1);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(*page, HasSubstr(kHttpdText));
}

TEST_F(StreamingIntegration, ForwardToAClosedPortSaysTheConnectionWasRefused) {
  auto p = RunSleeper();
  ASSERT_TRUE(p.ok()) << p.status();
  auto client = SpdyForward(p->pod_id);
  ASSERT_TRUE(client.ok()) << client.status();
  auto refused = HttpGetThrough(**client, kClosedPort, 0);
  ASSERT_FALSE(refused.ok());
  // What the user needs to know (cri-dockerd's socat says "Connection refused"), even
  // where the pod has no IPv6 loopback for the ::1 retry.
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("refused"));
}

TEST_F(StreamingIntegration, ForwardIntoAPodThatStoppedSinceTheRpcSaysWhy) {
  auto p = RunSleeper();
  ASSERT_TRUE(p.ok()) << p.status();
  auto client = SpdyForward(p->pod_id);
  ASSERT_TRUE(client.ok()) << client.status();
  Sh("docker kill " + p->pod_id);
  auto refused = HttpGetThrough(**client, kHttpPort, 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("is not running"));
}

TEST_F(StreamingIntegration, PortForwardToAHostNetworkPodReachesTheNode) {
  const int port = FreePort(38100);
  ASSERT_NE(port, 0);
  v1::PodSandboxConfig pod = BaseConfig("hostnet");
  pod.mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_network(v1::NODE);
  v1::ContainerConfig httpd =
      Container("httpd", {"httpd", "-f", "-p", absl::StrCat("127.0.0.1:", port), "-h", "/www"}, kHttpdImage);
  httpd.mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_network(v1::NODE);
  auto p = RunPodWith(httpd, pod);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(WaitListening(p->container_id, port));
  auto client = SpdyForward(p->pod_id);
  ASSERT_TRUE(client.ok()) << client.status();
  auto page = HttpGetThrough(**client, port, 0);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(*page, HasSubstr(kHttpdText));
}

TEST_F(StreamingIntegration, PortForwardThroughTheWebSocketTunnelMovesData) {
  auto p = RunPodWith(ServersConfig());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(WaitListening(p->container_id, kEchoPort));
  ASSERT_TRUE(WaitListening(p->container_id, kHttpPort));
  auto url = PortForwardUrl(p->pod_id);
  ASSERT_TRUE(url.ok()) << url.status();
  auto ws = WsClient::Connect(*url, {"SPDY/3.1+portforward.k8s.io"});
  ASSERT_TRUE(ws.ok()) << ws.status();
  EXPECT_EQ((*ws)->protocol(), "SPDY/3.1+portforward.k8s.io");
  SpdyClient client((*ws)->StartTunnel());
  auto f = OpenForward(client, kEchoPort, 0);
  ASSERT_TRUE(f.ok()) << f.status();
  EchoResult echo = EchoThrough(client, f->data, f->data, 8 << 20);
  ASSERT_TRUE(echo.status.ok()) << echo.status;
  EXPECT_EQ(echo.received, 8u << 20);
  EXPECT_EQ(echo.received_sha, echo.sent_sha);
  auto page = HttpGetThrough(client, kHttpPort, 1);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(*page, HasSubstr(kHttpdText));
}

}  // namespace
}  // namespace shim
