// The streaming server (streaming/) and the shim's Docker runtime for it
// (shim/streaming_runtime.cc), each figure beside its target and its baseline:
//   - port-forward throughput on loopback (target >= 1000 MB/s): a streaming::Server
//     whose runtime (HostRuntime) forwards to this host's 127.0.0.1, where a sink
//     counts what comes and a source sends; DSBENCH_FORWARD_MIB each way, on one
//     forwarded connection and on 4 connections of one session. Baseline: the same
//     bytes between two loopback sockets, no server between, same buffer sizes;
//   - exec stdout throughput (target >= 500 MB/s): CRI Exec -> URL -> SPDY v4 session,
//     reading `dd if=/dev/zero bs=1M count=DSBENCH_EXEC_MIB` to its end, without and
//     with a TTY. Baseline: the same exec through DockerClientImpl (CreateExec +
//     StartExecAttached, reading the hijacked socket), Docker's own ceiling;
//   - exec round trip of `true` (target <= 1.1x): CRI Exec + SPDY session until the v4
//     status, side by side with CreateExec + StartExecAttached + read to EOF +
//     InspectExec; p50/p99, and both cut into their phases (the shim's Docker calls
//     timed through the runtime, TimedRuntime);
//   - memory per idle session: DSBENCH_IDLE_SESSIONS SPDY port-forward sessions, then
//     one idle forwarded connection on each, then as many exec sessions (`sleep 3600`
//     with stdin open, all streams created); this process's RSS (VmRSS, after
//     malloc_trim: live memory) and open fds per session, and what is left once they
//     closed, before and after malloc_trim (what the allocator keeps).
//
// Clients and port targets run in this process. The client (SpdyConn) is leaner than
// client-go, so that the server is what gets measured: no threads, no zlib (it replays
// SYN_STREAM frames serialized once and splits what comes by frame headers), DATA
// frames from a preallocated buffer. Its share of an idle session is one socket and
// no measurable memory. Throughput rows also give this process's CPU time per GiB and
// context switches per MiB, which a loaded machine disturbs less than MB/s.
//
// One pod (host network: no CNI) with one busybox container, both named
// k8s_*_bench-stream_*, removed at the end and at the start (leftovers of a killed
// run); the shim's root dir is a temp dir. Needs root, a running dockerd and the test
// images (scripts/test-env.sh).
//   streaming_bench [--benchmark_min_time=0.05] [--benchmark_filter=...] [--benchmark_repetitions=5]
//   DSBENCH_FORWARD_MIB=1024 DSBENCH_EXEC_MIB=256 DSBENCH_ROUNDS=40 DSBENCH_IDLE_SESSIONS=200
//   DSBENCH_IO_THREADS=2 (the servers' io_threads, ServerOptions' default)
#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "dockerclient/docker_client_impl.h"
#include "shim/cri_service.h"
#include "shim/network/docker_bridge.h"
#include "shim/streaming_runtime.h"
#include "streaming/server.h"
#include "streaming/spdy/frame.h"
#include "tests/bench/bench_common.h"
#include "tests/integration/env.h"
#include "tests/support/stream_clients.h"

namespace {

namespace v1 = shim::v1;
namespace spdy = streaming::spdy;

// Every send and recv of a client, a port target and a raw baseline moves this much.
constexpr std::size_t kIoBuffer = 256 << 10;
// client-go copies into a stream 32 KiB at a time, one DATA frame per copy.
constexpr std::size_t kFramePayload = 32 << 10;
constexpr int kIoTimeoutSeconds = 60;
constexpr absl::Duration kCallTimeout = absl::Seconds(60);
constexpr double kGiB = 1 << 30;
constexpr char kPortForwardProtocol[] = "portforward.k8s.io";
constexpr char kExecProtocol[] = "v4.channel.k8s.io";
constexpr char kSuccessStatus[] = R"({"metadata":{},"status":"Success"})";
constexpr char kPodName[] = "bench-stream";
constexpr char kNamespace[] = "dsbench";
constexpr char kContainerName[] = "sctr";
// The names of what this bench creates (bench.sh's trap knows them too).
constexpr char kInfraPrefix[] = "k8s_POD_bench-stream_";
constexpr char kAppPrefix[] = "k8s_sctr_bench-stream_";
constexpr char kIdleExecArgs[] = "sleep 3600";
constexpr char kShimTrueKey[] = "exec true: shim (CRI Exec + SPDY)";
constexpr char kBareTrueKey[] = "exec true: bare Docker exec";

struct Settings {
  uint64_t forward_bytes = 1024ull << 20;
  uint64_t exec_bytes = 256ull << 20;
  int rounds = 40;
  int idle_sessions = 200;
  streaming::ServerOptions server;  // both servers'
};
Settings settings;

common::Context Ctx() { return common::Context::WithTimeout(kCallTimeout); }
double Micros(bench::Clock::time_point from, bench::Clock::time_point to) {
  return std::chrono::duration<double, std::micro>(to - from).count();
}
double Since(bench::Clock::time_point t0) { return Micros(t0, bench::Clock::now()); }
void Record(const std::string& key, double us) { bench::Samples()[key].push_back(us); }
std::string Error(const absl::Status& s) { return s.ok() ? "" : s.ToString(); }

// Blocking sockets, bounded by SO_RCVTIMEO/SO_SNDTIMEO rather than a poll() per call.
void SetTimeouts(int fd) {
  const timeval tv{kIoTimeoutSeconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

absl::Status Send(int fd, std::string_view bytes) {
  if (streamtest::WriteAll(fd, bytes)) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat("send: ", std::strerror(errno)));
}

// Up to kIoBuffer bytes into `buffer`; 0 at EOF.
absl::StatusOr<std::size_t> Recv(int fd, char* buffer) {
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, kIoBuffer, 0);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return absl::DeadlineExceededError(absl::StrCat("nothing came for ", kIoTimeoutSeconds, " s"));
    return absl::UnavailableError(absl::StrCat("recv: ", std::strerror(errno)));
  }
}

// One per thread, never zero-filled: idle clients must not add to the RSS they measure.
char* RecvBuffer() {
  thread_local std::unique_ptr<char[]> buffer(new char[kIoBuffer]);
  return buffer.get();
}

const std::string& Zeros() {
  static const std::string zeros(kIoBuffer, '\0');
  return zeros;
}

absl::StatusOr<common::UniqueFd> DialLoopback(uint16_t port) {
  ASSIGN_OR_RETURN(common::UniqueFd fd, streamtest::Dial({"127.0.0.1", port, "/"}));
  SetTimeouts(fd.get());
  return fd;
}

// This process's CPU time and context switches, which a loaded machine disturbs less
// than wall time.
struct Cost {
  double cpu_us = 0, switches = 0;
};

Cost ProcessCost() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  const auto us = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_usec); };
  return {us(u.ru_utime) + us(u.ru_stime), static_cast<double>(u.ru_nvcsw + u.ru_nivcsw)};
}

// Per throughput run, by sample key.
std::map<std::string, std::vector<Cost>>& CostSamples() {
  static std::map<std::string, std::vector<Cost>> samples;
  return samples;
}

std::function<std::string()> WithCost(const std::string& key, std::function<std::string()> op) {
  return [key, op = std::move(op)] {
    const Cost c0 = ProcessCost();
    std::string err = op();
    const Cost c1 = ProcessCost();
    CostSamples()[key].push_back({c1.cpu_us - c0.cpu_us, c1.switches - c0.switches});
    return err;
  };
}

// ---------------------------------------------------------------------------
// The lean SPDY client.

std::string DataFrame(uint32_t stream, uint8_t flags, std::string_view payload) {
  const auto header = spdy::FrameWriter::DataHeader(stream, flags, static_cast<uint32_t>(payload.size()));
  std::string frame(header.begin(), header.end());
  frame.append(payload);
  return frame;
}

// The frames that open one connection's streams, serialized once per kind of
// connection: a fresh header compressor turns the same headers into the same bytes,
// so every connection may replay them.
struct Opening {
  struct Frame {
    std::string bytes;
    uint32_t syn_id = 0;  // of a SYN_STREAM, whose SYN_REPLY client-go waits for
  };
  std::vector<Frame> frames;
  std::map<std::string, uint32_t> ids;  // "stdout", or "data<i>"/"error<i>" for forwarded connection i
};

// Exec streams, in client-go's order.
Opening CommandOpening(const std::vector<std::string>& types) {
  spdy::FrameWriter writer;
  Opening o;
  uint32_t id = 1;
  for (const std::string& type : types) {
    o.frames.push_back({writer.SynStream({.stream_id = id, .headers = {{"streamtype", type}}}), id});
    o.ids[type] = id;
    id += 2;
  }
  return o;
}

// Per forwarded connection, as client-go: the error stream, half-closed at once, then
// the data stream; both name the port and the connection's requestid.
Opening ForwardOpening(uint16_t port, int connections) {
  spdy::FrameWriter writer;
  Opening o;
  uint32_t id = 1;
  for (int i = 0; i < connections; ++i) {
    spdy::Headers headers = {{"streamtype", "error"}, {"port", absl::StrCat(port)}, {"requestid", absl::StrCat(i)}};
    o.frames.push_back({writer.SynStream({.stream_id = id, .headers = headers}), id});
    o.frames.push_back({DataFrame(id, spdy::kFlagFin, {}), 0});
    o.ids[absl::StrCat("error", i)] = id;
    id += 2;
    headers[0].second = "data";
    o.frames.push_back({writer.SynStream({.stream_id = id, .headers = headers}), id});
    o.ids[absl::StrCat("data", i)] = id;
    id += 2;
  }
  return o;
}

// What the server sent on each stream, from frame headers alone (frame.h has the
// layout): header blocks stay compressed, nothing here needs their content.
class FrameScanner {
 public:
  struct Stream {
    bool replied = false, fin = false, reset = false;
    uint64_t bytes = 0;
    std::string head;  // the first kHeadBytes of its data: a status, a prompt
    bool ended() const { return fin || reset; }
  };
  static constexpr std::size_t kHeadBytes = 4096;

  void Feed(std::string_view bytes) {
    while (!bytes.empty()) {
      if (fill_ < spdy::kFrameHeaderSize) {
        const std::size_t take = std::min(bytes.size(), spdy::kFrameHeaderSize - fill_);
        std::memcpy(header_ + fill_, bytes.data(), take);
        fill_ += take;
        bytes.remove_prefix(take);
        if (fill_ < spdy::kFrameHeaderSize) return;
        remaining_ = spdy::ReadBigEndian({header_ + 5, 3});
        control_.clear();
        if (remaining_ == 0) EndFrame();
        continue;
      }
      const std::size_t take = std::min<std::size_t>(bytes.size(), remaining_);
      if (control()) {
        control_.append(bytes.data(), take);
      } else {
        Stream& s = streams_[Id(header_)];
        s.bytes += take;
        if (s.head.size() < kHeadBytes) s.head.append(bytes.data(), std::min(take, kHeadBytes - s.head.size()));
      }
      bytes.remove_prefix(take);
      remaining_ -= take;
      if (remaining_ == 0) EndFrame();
    }
  }

  Stream& stream(uint32_t id) { return streams_[id]; }

 private:
  static uint32_t Id(const char* p) { return spdy::ReadBigEndian({p, 4}) & spdy::kMaxStreamId; }
  bool control() const { return static_cast<uint8_t>(header_[0]) & 0x80; }

  void EndFrame() {
    const uint8_t flags = static_cast<uint8_t>(header_[4]);
    fill_ = 0;
    if (!control()) {
      if (flags & spdy::kFlagFin) streams_[Id(header_)].fin = true;
      return;
    }
    const auto type = static_cast<spdy::ControlType>(spdy::ReadBigEndian({header_ + 2, 2}));
    if (control_.size() < 4) return;
    if (type == spdy::ControlType::kSynReply) {
      Stream& s = streams_[Id(control_.data())];
      s.replied = true;
      if (flags & spdy::kFlagFin) s.fin = true;
    } else if (type == spdy::ControlType::kRstStream) {
      streams_[Id(control_.data())].reset = true;
    }
  }

  char header_[spdy::kFrameHeaderSize] = {};
  std::size_t fill_ = 0;
  uint32_t remaining_ = 0;
  std::string control_;
  std::map<uint32_t, Stream> streams_;
};

// A SPDY client connection driven by the calling thread.
class SpdyConn {
 public:
  static absl::StatusOr<std::unique_ptr<SpdyConn>> Connect(const std::string& url, const char* protocol) {
    ASSIGN_OR_RETURN(streamtest::Url parsed, streamtest::ParseUrl(url));
    ASSIGN_OR_RETURN(common::UniqueFd fd, streamtest::Dial(parsed));
    SetTimeouts(fd.get());
    std::string leftover;
    ASSIGN_OR_RETURN(
        streamtest::UpgradeResponse response,
        streamtest::Upgrade(fd.get(),
                            absl::StrCat("POST ", parsed.target, " HTTP/1.1\r\nHost: ", parsed.host, ":", parsed.port,
                                         "\r\nContent-Length: 0\r\nConnection: Upgrade\r\n"
                                         "Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: ",
                                         protocol, "\r\n\r\n"),
                            &leftover));
    if (response.status != 101) {
      return absl::FailedPreconditionError(absl::StrCat("upgrade refused: ", response.status, " ", response.body));
    }
    auto conn = std::unique_ptr<SpdyConn>(new SpdyConn(std::move(fd)));
    conn->scanner_.Feed(leftover);
    return conn;
  }

  absl::Status Send(std::string_view bytes) { return ::Send(fd_.get(), bytes); }

  // With `one_at_a_time` each SYN_STREAM waits for its SYN_REPLY before the next
  // frame goes, as client-go does.
  absl::Status Open(const Opening& opening, bool one_at_a_time) {
    for (const Opening::Frame& frame : opening.frames) {
      RETURN_IF_ERROR(Send(frame.bytes));
      if (one_at_a_time && frame.syn_id != 0) RETURN_IF_ERROR(AwaitReply(frame.syn_id));
    }
    return absl::OkStatus();
  }

  absl::Status AwaitReply(uint32_t id) {
    FrameScanner::Stream& s = stream(id);
    RETURN_IF_ERROR(ReadUntil([&] { return s.replied || s.reset; }));
    if (!s.replied) return absl::UnavailableError(absl::StrCat("stream ", id, " was reset"));
    return absl::OkStatus();
  }

  // Reads until `done()`; UNAVAILABLE if the server closed the connection first.
  template <typename Done>
  absl::Status ReadUntil(Done done) {
    char* buffer = RecvBuffer();
    while (!done()) {
      ASSIGN_OR_RETURN(const std::size_t n, Recv(fd_.get(), buffer));
      if (n == 0) return absl::UnavailableError("the server closed the connection");
      scanner_.Feed({buffer, n});
    }
    return absl::OkStatus();
  }

  FrameScanner::Stream& stream(uint32_t id) { return scanner_.stream(id); }

 private:
  explicit SpdyConn(common::UniqueFd fd) : fd_(std::move(fd)) {}

  common::UniqueFd fd_;
  FrameScanner scanner_;
};

// ---------------------------------------------------------------------------
// Port-forward: the runtime, the pod's port, the operations.

// Forwards to this host's own 127.0.0.1, as for a host-network pod.
class HostRuntime final : public streaming::Runtime {
 public:
  absl::StatusOr<streaming::StartedProcess> Exec(const streaming::ExecRequest&,
                                                 std::optional<streaming::TerminalSize>) override {
    return absl::UnimplementedError("port-forward only");
  }
  absl::StatusOr<streaming::StartedProcess> Attach(const streaming::AttachRequest&,
                                                   std::optional<streaming::TerminalSize>) override {
    return absl::UnimplementedError("port-forward only");
  }
  absl::StatusOr<std::string> PortForwardNetns(const std::string&) override { return std::string(); }
};

// The shim's runtime, timing what a session asks of it while `timing` is set (from the
// server's worker threads), to cut the server's part of a round trip further: Exec
// (exec create + start), the time from its return to the call of Wait (the output
// running to its end, and the server's hand-offs), and Wait (the exit code).
class TimedRuntime final : public streaming::Runtime {
 public:
  static constexpr char kExecKey[] = "exec true, shim phase 4a: runtime Exec (create + start)";
  static constexpr char kOutputKey[] = "exec true, shim phase 4b: Exec's return to Wait's call";
  static constexpr char kWaitKey[] = "exec true, shim phase 4c: runtime Wait (exit code)";

  explicit TimedRuntime(streaming::Runtime& inner) : inner_(inner) {}

  absl::StatusOr<streaming::StartedProcess> Exec(const streaming::ExecRequest& req,
                                                 std::optional<streaming::TerminalSize> size) override {
    const auto t0 = bench::Clock::now();
    ASSIGN_OR_RETURN(streaming::StartedProcess started, inner_.Exec(req, size));
    Add(kExecKey, Since(t0));
    started.process = std::make_unique<TimedProcess>(std::move(started.process), *this);
    return started;
  }
  absl::StatusOr<streaming::StartedProcess> Attach(const streaming::AttachRequest& req,
                                                   std::optional<streaming::TerminalSize> size) override {
    return inner_.Attach(req, size);
  }
  absl::StatusOr<std::string> PortForwardNetns(const std::string& pod_sandbox_id) override {
    return inner_.PortForwardNetns(pod_sandbox_id);
  }

  void set_timing(bool on) { timing_ = on; }
  // Into bench::Samples(), once no session runs.
  void MoveSamples() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [key, v] : samples_) {
      auto& all = bench::Samples()[key];
      all.insert(all.end(), v.begin(), v.end());
    }
    samples_.clear();
  }

 private:
  class TimedProcess final : public streaming::Process {
   public:
    TimedProcess(std::unique_ptr<streaming::Process> inner, TimedRuntime& runtime)
        : inner_(std::move(inner)), runtime_(runtime), started_(bench::Clock::now()) {}
    absl::Status Resize(streaming::TerminalSize size) override { return inner_->Resize(size); }
    absl::StatusOr<std::optional<int>> Wait() override {
      const auto t0 = bench::Clock::now();
      runtime_.Add(kOutputKey, Micros(started_, t0));
      absl::StatusOr<std::optional<int>> exit = inner_->Wait();
      runtime_.Add(kWaitKey, Since(t0));
      return exit;
    }
    void Abandon() override { inner_->Abandon(); }

   private:
    const std::unique_ptr<streaming::Process> inner_;
    TimedRuntime& runtime_;
    const bench::Clock::time_point started_;
  };

  void Add(const char* key, double us) {
    if (!timing_) return;
    std::lock_guard<std::mutex> lock(mu_);
    samples_[key].push_back(us);
  }

  streaming::Runtime& inner_;
  std::atomic<bool> timing_{false};
  std::mutex mu_;
  std::map<std::string, std::vector<double>> samples_;  // guarded by mu_
};

// The pod's port: a listener on 127.0.0.1 whose connections each get a thread as a
// sink (reads to EOF, counting) or a source (sends source_bytes, then closes), or are
// held open idle without a thread.
class Target {
 public:
  enum class Role { kSink, kSource, kHold };
  explicit Target(Role role) : role_(role) {}
  ~Target() {
    if (acceptor_.joinable()) {
      ::shutdown(listener_.get(), SHUT_RDWR);  // ends the blocking accept
      acceptor_.join();
    }
    for (std::thread& t : connections_) t.join();
  }

  absl::Status Start() {
    listener_.Reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (!listener_ || ::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener_.get(), SOMAXCONN) != 0 ||
        ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return absl::InternalError(absl::StrCat("port target: ", std::strerror(errno)));
    }
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { AcceptLoop(); });
    return absl::OkStatus();
  }

  uint16_t port() const { return port_; }
  uint64_t received() const { return received_; }
  void set_source_bytes(uint64_t n) { source_bytes_ = n; }
  std::size_t held() {
    std::lock_guard<std::mutex> lock(mu_);
    return held_.size();
  }
  void CloseHeld() {
    std::lock_guard<std::mutex> lock(mu_);
    held_.clear();
  }

 private:
  void AcceptLoop() {
    for (;;) {
      common::UniqueFd conn(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!conn) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (role_ == Role::kHold) {
        held_.push_back(std::move(conn));
        continue;
      }
      SetTimeouts(conn.get());
      connections_.emplace_back(
          [this, conn = std::move(conn)] { role_ == Role::kSink ? Sink(conn.get()) : Source(conn.get()); });
    }
  }

  void Sink(int fd) {
    std::unique_ptr<char[]> buffer(new char[kIoBuffer]);
    for (;;) {
      absl::StatusOr<std::size_t> n = Recv(fd, buffer.get());
      if (!n.ok() || *n == 0) return;
      received_ += *n;
    }
  }

  void Source(int fd) {
    for (uint64_t left = source_bytes_; left > 0;) {
      const std::size_t n = std::min<uint64_t>(left, kIoBuffer);
      if (!Send(fd, {Zeros().data(), n}).ok()) return;
      left -= n;
    }
  }

  const Role role_;
  common::UniqueFd listener_;
  uint16_t port_ = 0;
  std::thread acceptor_;
  std::atomic<uint64_t> received_{0}, source_bytes_{0};
  std::mutex mu_;
  std::vector<std::thread> connections_;  // guarded by mu_
  std::vector<common::UniqueFd> held_;    // guarded by mu_
};

struct Env {
  // Targets first: the port-forward server, destroyed before them, closes what reaches them.
  Target sink{Target::Role::kSink}, source{Target::Role::kSource}, hold{Target::Role::kHold};
  HostRuntime host_runtime;
  std::unique_ptr<streaming::Server> forward_server;

  std::string dir;  // the shim's root dir
  std::unique_ptr<dockerclient::DockerClient> docker;
  std::unique_ptr<network::DockerBridgeNetwork> network;
  std::unique_ptr<shim::DockerStreamingRuntime> docker_runtime;
  std::unique_ptr<TimedRuntime> exec_runtime;
  std::unique_ptr<streaming::Server> exec_server;
  std::unique_ptr<shim::CriService> service;  // last: it issues URLs from exec_server
  std::string pod, container;
};

Env* env = nullptr;

std::vector<uint32_t> Ids(const Opening& o, const char* prefix, int n) {
  std::vector<uint32_t> ids;
  for (int i = 0; i < n; ++i) ids.push_back(o.ids.at(absl::StrCat(prefix, i)));
  return ids;
}

absl::StatusOr<std::unique_ptr<SpdyConn>> ForwardSession() {
  ASSIGN_OR_RETURN(std::string url, env->forward_server->IssueUrl(streaming::PortForwardRequest{"bench-pod", {}}));
  return SpdyConn::Connect(url, kPortForwardProtocol);
}

bool AllEnded(SpdyConn& conn, const std::vector<uint32_t>& ids) {
  return std::all_of(ids.begin(), ids.end(), [&](uint32_t id) { return conn.stream(id).ended(); });
}

// What a failed forward wrote on its error streams.
std::string ForwardErrors(SpdyConn& conn, const std::vector<uint32_t>& errors) {
  std::string text;
  for (uint32_t id : errors) absl::StrAppend(&text, conn.stream(id).head);
  return text;
}

// `total` bytes split over `connections` forwarded connections of one session, as
// DATA frames interleaved round robin; over once every connection ended.
absl::Status ForwardUpload(int connections, uint64_t total) {
  ASSIGN_OR_RETURN(std::unique_ptr<SpdyConn> conn, ForwardSession());
  const Opening opening = ForwardOpening(env->sink.port(), connections);
  RETURN_IF_ERROR(conn->Open(opening, true));
  const std::vector<uint32_t> data = Ids(opening, "data", connections), errors = Ids(opening, "error", connections);
  std::string frames;
  for (std::size_t i = 0; i < kIoBuffer / kFramePayload; ++i) {
    frames += DataFrame(data[i % data.size()], 0, {Zeros().data(), kFramePayload});
  }
  const uint64_t before = env->sink.received();
  for (uint64_t sent = 0; sent < total; sent += kIoBuffer) RETURN_IF_ERROR(conn->Send(frames));
  for (uint32_t id : data) RETURN_IF_ERROR(conn->Send(DataFrame(id, spdy::kFlagFin, {})));
  // Each forward ends once the port read everything and closed: the error stream's FIN.
  RETURN_IF_ERROR(conn->ReadUntil([&] { return AllEnded(*conn, errors); }));
  if (const uint64_t got = env->sink.received() - before; got != total) {
    return absl::DataLossError(
        absl::StrCat("the port received ", got, " bytes of ", total, ForwardErrors(*conn, errors)));
  }
  return absl::OkStatus();
}

absl::Status ForwardDownload(int connections, uint64_t total) {
  env->source.set_source_bytes(total / connections);
  ASSIGN_OR_RETURN(std::unique_ptr<SpdyConn> conn, ForwardSession());
  const Opening opening = ForwardOpening(env->source.port(), connections);
  RETURN_IF_ERROR(conn->Open(opening, true));
  const std::vector<uint32_t> data = Ids(opening, "data", connections), errors = Ids(opening, "error", connections);
  RETURN_IF_ERROR(conn->ReadUntil([&] { return AllEnded(*conn, data); }));
  uint64_t got = 0;
  for (uint32_t id : data) got += conn->stream(id).bytes;
  if (got != total) {
    return absl::DataLossError(absl::StrCat("received ", got, " bytes of ", total, ForwardErrors(*conn, errors)));
  }
  // Half-closing data ends each forward; the error streams' FIN says so.
  for (uint32_t id : data) RETURN_IF_ERROR(conn->Send(DataFrame(id, spdy::kFlagFin, {})));
  return conn->ReadUntil([&] { return AllEnded(*conn, errors); });
}

absl::Status RawUpload(uint64_t bytes) {
  ASSIGN_OR_RETURN(common::UniqueFd fd, DialLoopback(env->sink.port()));
  for (uint64_t sent = 0; sent < bytes; sent += kIoBuffer) RETURN_IF_ERROR(Send(fd.get(), Zeros()));
  ::shutdown(fd.get(), SHUT_WR);
  // The sink closes once it read everything.
  ASSIGN_OR_RETURN(const std::size_t n, Recv(fd.get(), RecvBuffer()));
  if (n != 0) return absl::InternalError("the sink sent data");
  return absl::OkStatus();
}

absl::Status RawDownload(uint64_t bytes) {
  ASSIGN_OR_RETURN(common::UniqueFd fd, DialLoopback(env->source.port()));
  uint64_t got = 0;
  for (;;) {
    ASSIGN_OR_RETURN(const std::size_t n, Recv(fd.get(), RecvBuffer()));
    if (n == 0) break;
    got += n;
  }
  if (got != bytes) return absl::DataLossError(absl::StrCat("received ", got, " bytes of ", bytes));
  return absl::OkStatus();
}

// The baseline: `total` over `connections` raw connections at once, a thread each.
absl::Status RawTransfers(int connections, uint64_t total, bool upload) {
  env->source.set_source_bytes(total / connections);
  const uint64_t before = env->sink.received();
  std::vector<absl::Status> results(connections);
  std::vector<std::thread> threads;
  for (int i = 0; i < connections; ++i) {
    threads.emplace_back(
        [&, i] { results[i] = upload ? RawUpload(total / connections) : RawDownload(total / connections); });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : results) RETURN_IF_ERROR(s);
  if (upload && env->sink.received() - before != total) return absl::DataLossError("the sink did not get everything");
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Exec.

std::vector<std::string> StdoutCommand() {
  return {"sh", "-c", absl::StrCat("dd if=/dev/zero bs=1M count=", settings.exec_bytes >> 20, " 2>/dev/null")};
}

absl::StatusOr<std::string> ExecUrl(const std::vector<std::string>& cmd, bool tty, bool in, bool out, bool err) {
  v1::ExecRequest req;
  req.set_container_id(env->container);
  for (const std::string& arg : cmd) req.add_cmd(arg);
  req.set_tty(tty);
  req.set_stdin(in);
  req.set_stdout(out);
  req.set_stderr(err);
  ASSIGN_OR_RETURN(v1::ExecResponse resp, env->service->Exec(Ctx(), req));
  return resp.url();
}

absl::Status ExpectSuccess(FrameScanner::Stream& error) {
  if (error.head == kSuccessStatus) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("status: ", error.head));
}

absl::Status ShimExecStdout(bool tty) {
  ASSIGN_OR_RETURN(std::string url, ExecUrl(StdoutCommand(), tty, false, true, false));
  ASSIGN_OR_RETURN(std::unique_ptr<SpdyConn> conn, SpdyConn::Connect(url, kExecProtocol));
  const Opening opening = CommandOpening(tty ? std::vector<std::string>{"error", "stdout", "resize"}
                                             : std::vector<std::string>{"error", "stdout"});
  RETURN_IF_ERROR(conn->Open(opening, true));
  // The size kubectl sends first; without one the server waits 250 ms for it.
  if (tty) RETURN_IF_ERROR(conn->Send(DataFrame(opening.ids.at("resize"), 0, R"({"Width":80,"Height":24})")));
  FrameScanner::Stream &out = conn->stream(opening.ids.at("stdout")), &error = conn->stream(opening.ids.at("error"));
  RETURN_IF_ERROR(conn->ReadUntil([&] { return out.ended() && error.ended(); }));
  if (out.bytes != settings.exec_bytes) {
    return absl::DataLossError(absl::StrCat("stdout had ", out.bytes, " bytes of ", settings.exec_bytes));
  }
  return ExpectSuccess(error);
}

// Docker's own ceiling: the hijacked socket read directly (stdcopy headers and all).
absl::Status DockerExecStdout(bool tty) {
  dockerclient::ExecConfig config;
  config.cmd = StdoutCommand();
  config.attach_stderr = false;
  config.tty = tty;
  if (tty) config.console_size = dockerclient::ConsoleSize{24, 80};
  ASSIGN_OR_RETURN(std::string id, env->docker->CreateExec(Ctx(), env->container, config));
  ASSIGN_OR_RETURN(dockerclient::HijackedConnection conn, env->docker->StartExecAttached(Ctx(), id, tty));
  SetTimeouts(conn.fd.get());
  ::shutdown(conn.fd.get(), SHUT_WR);  // no stdin, as the server does
  uint64_t got = conn.buffered.size();
  for (;;) {
    ASSIGN_OR_RETURN(const std::size_t n, Recv(conn.fd.get(), RecvBuffer()));
    if (n == 0) break;
    got += n;
  }
  if (got < settings.exec_bytes)
    return absl::DataLossError(absl::StrCat("got ", got, " bytes of ", settings.exec_bytes));
  return absl::OkStatus();
}

// kubectl exec <pod> -- true, timed in phases.
absl::Status ShimExecTrue() {
  const auto t0 = bench::Clock::now();
  ASSIGN_OR_RETURN(std::string url, ExecUrl({"true"}, false, false, true, true));
  const auto t1 = bench::Clock::now();
  ASSIGN_OR_RETURN(std::unique_ptr<SpdyConn> conn, SpdyConn::Connect(url, kExecProtocol));
  const auto t2 = bench::Clock::now();
  const Opening opening = CommandOpening({"error", "stdout", "stderr"});
  RETURN_IF_ERROR(conn->Open(opening, true));
  const auto t3 = bench::Clock::now();
  FrameScanner::Stream& error = conn->stream(opening.ids.at("error"));
  RETURN_IF_ERROR(conn->ReadUntil([&] { return error.ended(); }));
  RETURN_IF_ERROR(ExpectSuccess(error));
  Record("exec true, shim phase 1: CRI Exec (inspect, URL)", Micros(t0, t1));
  Record("exec true, shim phase 2: connect + SPDY upgrade", Micros(t1, t2));
  Record("exec true, shim phase 3: 3 streams, one at a time", Micros(t2, t3));
  Record("exec true, shim phase 4: start to v4 status", Since(t3));
  return absl::OkStatus();
}

absl::Status DockerExecTrue() {
  dockerclient::ExecConfig config;
  config.cmd = {"true"};
  const auto t0 = bench::Clock::now();
  ASSIGN_OR_RETURN(std::string id, env->docker->CreateExec(Ctx(), env->container, config));
  ASSIGN_OR_RETURN(dockerclient::HijackedConnection conn, env->docker->StartExecAttached(Ctx(), id, false));
  const auto t1 = bench::Clock::now();
  SetTimeouts(conn.fd.get());
  ::shutdown(conn.fd.get(), SHUT_WR);
  for (;;) {
    ASSIGN_OR_RETURN(const std::size_t n, Recv(conn.fd.get(), RecvBuffer()));
    if (n == 0) break;
  }
  const auto t2 = bench::Clock::now();
  ASSIGN_OR_RETURN(dockerclient::ExecInspect inspect, env->docker->InspectExec(Ctx(), id));
  Record("exec true, bare step 1: create + start", Micros(t0, t1));
  Record("exec true, bare step 2: output to EOF", Micros(t1, t2));
  Record("exec true, bare step 3: InspectExec", Since(t2));
  if (inspect.exit_code.value_or(0) != 0) return absl::InternalError(absl::StrCat("exit code ", *inspect.exit_code));
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Idle sessions.

struct Usage {
  long rss_kib = 0;
  long fds = 0;
  std::map<std::string, long> fd_kinds;  // "socket", "eventfd", "/dev/null", ...
};

Usage CurrentUsage() {
  Usage u;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (absl::StartsWith(line, "VmRSS:")) u.rss_kib = std::atol(line.c_str() + 6);
  }
  std::error_code ec;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    std::string target = std::filesystem::read_symlink(fd.path(), ec).string();
    // "socket:[123]" -> "socket", "anon_inode:[eventfd]" -> "eventfd"
    if (absl::StartsWith(target, "anon_inode:[")) target = target.substr(12, target.size() - 13);
    if (const std::size_t colon = target.find(":["); colon != std::string::npos) target.resize(colon);
    ++u.fd_kinds[target];
    ++u.fds;
  }
  return u;
}

// "socket +3, eventfd +3": what changed between two counts.
std::string FdKindsDelta(const Usage& from, const Usage& to) {
  std::map<std::string, long> delta = to.fd_kinds;
  for (const auto& [kind, n] : from.fd_kinds) delta[kind] -= n;
  std::string out;
  for (const auto& [kind, n] : delta) {
    if (n != 0) absl::StrAppend(&out, out.empty() ? "" : ", ", kind, n > 0 ? " +" : " ", n);
  }
  return out;
}

constexpr absl::Duration kSettleTimeout = absl::Seconds(20);

// Polls `done` every 10 ms; false after `timeout`.
bool WaitFor(const std::function<bool()>& done, absl::Duration timeout = kSettleTimeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!done()) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return true;
}

// Once the fd count held still for 100 ms (the server lets some go a moment after the
// event that ends them). With `trim`, free memory goes back to the kernel first, so
// that RSS counts live memory rather than what the allocator keeps.
Usage QuietUsage(bool trim) {
  Usage u = CurrentUsage();
  for (int i = 0; i < 50; ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    Usage next = CurrentUsage();
    if (next.fds == u.fds) break;
    u = std::move(next);
  }
  if (!trim) return u;
  ::malloc_trim(0);
  return CurrentUsage();
}

// One kind of idle session: what `n` of them added to the process.
struct IdleRow {
  std::string what;
  int n = 0;
  double open_ms = 0;
  Usage base, open;
  long other_fds = 1;  // per session, the fds that are not the server's: the client's socket
};
// What was left of a group of rows once every session closed.
struct IdleClose {
  std::string what;
  double close_ms = 0;
  Usage before, closed, trimmed;  // trimmed: after malloc_trim(0)
  std::string note;
};
std::vector<IdleRow> idle_rows;
std::vector<IdleClose> idle_closes;

// Closes `conns` and waits for the server to have ended every session.
absl::Status CloseAll(std::vector<std::unique_ptr<SpdyConn>>& conns, const streaming::Server& server) {
  conns.clear();
  if (!WaitFor([&] { return server.active_connections() == 0; })) {
    return absl::DeadlineExceededError(absl::StrCat(server.active_connections(), " sessions still open"));
  }
  return absl::OkStatus();
}

void RecordClose(IdleClose c) {
  c.closed = QuietUsage(false);
  c.trimmed = QuietUsage(true);
  idle_closes.push_back(std::move(c));
}

absl::Status IdleForwardSessions() {
  const int n = settings.idle_sessions;
  IdleClose close;
  close.what = "port-forward";
  close.before = QuietUsage(true);
  auto t0 = bench::Clock::now();
  std::vector<std::unique_ptr<SpdyConn>> conns;
  for (int i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(std::unique_ptr<SpdyConn> conn, ForwardSession());
    conns.push_back(std::move(conn));
  }
  // The client may see the 101 a moment before the server made its session.
  if (!WaitFor([&] { return env->forward_server->active_connections() == static_cast<std::size_t>(n); })) {
    return absl::DeadlineExceededError("not every session came up");
  }
  IdleRow sessions{"SPDY port-forward session, no connection", n, Since(t0) / 1000, close.before, QuietUsage(true)};

  t0 = bench::Clock::now();
  const Opening opening = ForwardOpening(env->hold.port(), 1);
  for (auto& conn : conns) RETURN_IF_ERROR(conn->Open(opening, false));
  for (auto& conn : conns) {
    RETURN_IF_ERROR(conn->AwaitReply(opening.ids.at("error0")));
    RETURN_IF_ERROR(conn->AwaitReply(opening.ids.at("data0")));
  }
  if (!WaitFor([&] { return env->hold.held() == static_cast<std::size_t>(n); })) {
    return absl::DeadlineExceededError(absl::StrCat("the port accepted ", env->hold.held(), " of ", n, " connections"));
  }
  // The port's accepted end is not the server's.
  IdleRow forwards{"+ one idle forwarded connection each", n, Since(t0) / 1000, sessions.open, QuietUsage(true), 1};
  idle_rows.push_back(std::move(sessions));
  idle_rows.push_back(std::move(forwards));

  t0 = bench::Clock::now();
  RETURN_IF_ERROR(CloseAll(conns, *env->forward_server));
  env->hold.CloseHeld();
  close.close_ms = Since(t0) / 1000;
  RecordClose(std::move(close));
  return absl::OkStatus();
}

// Idle execs still running in the container.
absl::StatusOr<int> RunningIdleExecs() {
  v1::ExecSyncRequest req;
  req.set_container_id(env->container);
  for (const char* arg : {"sh", "-c", "ps -o args | grep -c '^sleep 3600$'"}) req.add_cmd(arg);
  req.set_timeout(10);
  ASSIGN_OR_RETURN(v1::ExecSyncResponse resp, env->service->ExecSync(Ctx(), req));
  return std::atoi(resp.stdout().c_str());
}

absl::Status IdleExecSessions() {
  const int n = settings.idle_sessions;
  IdleClose close;
  close.what = "exec";
  close.before = QuietUsage(true);
  const auto t0 = bench::Clock::now();
  // `echo` tells when the process runs; it then idles as `sleep 3600` with stdin open.
  const std::vector<std::string> cmd = {"sh", "-c", absl::StrCat("echo ready && exec ", kIdleExecArgs)};
  const Opening opening = CommandOpening({"error", "stdin", "stdout", "stderr"});
  std::vector<std::unique_ptr<SpdyConn>> conns;
  for (int i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(std::string url, ExecUrl(cmd, false, true, true, true));
    ASSIGN_OR_RETURN(std::unique_ptr<SpdyConn> conn, SpdyConn::Connect(url, kExecProtocol));
    // Not one at a time: the server then starts up to worker_threads execs at once.
    RETURN_IF_ERROR(conn->Open(opening, false));
    conns.push_back(std::move(conn));
  }
  for (auto& conn : conns) {
    FrameScanner::Stream &out = conn->stream(opening.ids.at("stdout")), &error = conn->stream(opening.ids.at("error"));
    RETURN_IF_ERROR(conn->ReadUntil([&] { return absl::StrContains(out.head, "ready") || error.ended(); }));
    if (error.ended()) return absl::InternalError(absl::StrCat("exec ended: ", error.head));
  }
  idle_rows.push_back({absl::StrCat("exec session (`", kIdleExecArgs, "`, stdin open)"), n, Since(t0) / 1000,
                       close.before, QuietUsage(true)});

  const auto t1 = bench::Clock::now();
  RETURN_IF_ERROR(CloseAll(conns, *env->exec_server));
  // The server kills the processes its clients left (Process::Abandon).
  absl::StatusOr<int> running;
  WaitFor([&] {
    running = RunningIdleExecs();
    return !running.ok() || *running == 0;
  });
  RETURN_IF_ERROR(running.status());
  close.close_ms = Since(t1) / 1000;
  close.note = *running == 0 ? "every exec killed"
                             : absl::StrCat(*running, " execs still running ", absl::FormatDuration(kSettleTimeout),
                                            " after close");
  RecordClose(std::move(close));
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Benchmarks.

std::string Key(const std::string& what, int connections, const char* how) {
  return absl::StrCat(what, connections > 1 ? absl::StrCat(", ", connections, " connections") : "", ": ", how);
}

void BM_PortForward(benchmark::State& state, bool upload) {
  const int c = static_cast<int>(state.range(0));
  const uint64_t bytes = settings.forward_bytes;
  const std::string what = upload ? "port-forward client->port" : "port-forward port->client";
  const std::string server = Key(what, c, "server"), raw = Key(what, c, "raw TCP");
  bench::Compare(
      state,
      {{server, WithCost(server, [=] { return Error(upload ? ForwardUpload(c, bytes) : ForwardDownload(c, bytes)); })},
       {raw, WithCost(raw, [=] { return Error(RawTransfers(c, bytes, upload)); })}});
}

std::string ExecKey(bool tty, const char* how) { return absl::StrCat("exec stdout", tty ? " (TTY)" : "", ": ", how); }

void BM_ExecStdout(benchmark::State& state) {
  const bool tty = state.range(0) != 0;
  const std::string shim = ExecKey(tty, "shim"), docker = ExecKey(tty, "Docker hijacked fd");
  bench::Compare(state, {{shim, WithCost(shim, [tty] { return Error(ShimExecStdout(tty)); })},
                         {docker, WithCost(docker, [tty] { return Error(DockerExecStdout(tty)); })}});
}

void BM_ExecRoundTrip(benchmark::State& state) {
  env->exec_runtime->set_timing(true);
  bench::Compare(state, {{kShimTrueKey, [] { return Error(ShimExecTrue()); }},
                         {kBareTrueKey, [] { return Error(DockerExecTrue()); }}});
  env->exec_runtime->set_timing(false);
  env->exec_runtime->MoveSamples();
}

void BM_IdleSessions(benchmark::State& state, absl::Status (*measure)()) {
  for (auto _ : state) {
    if (absl::Status s = measure(); !s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
}

// Wall time: the work runs on the server's and the targets' threads too.
void Timed(benchmark::internal::Benchmark* b) { b->UseRealTime()->Unit(benchmark::kMillisecond); }
BENCHMARK_CAPTURE(BM_PortForward, client_to_port, true)->ArgName("connections")->Arg(1)->Arg(4)->Apply(Timed);
BENCHMARK_CAPTURE(BM_PortForward, port_to_client, false)->ArgName("connections")->Arg(1)->Arg(4)->Apply(Timed);
BENCHMARK(BM_ExecStdout)->ArgName("tty")->Arg(0)->Arg(1)->Apply(Timed);

// ---------------------------------------------------------------------------
// Setup, cleanup, tables.

void Cleanup(Env& e) {
  if (e.service && !e.pod.empty()) {
    v1::StopPodSandboxRequest stop;
    stop.set_pod_sandbox_id(e.pod);
    v1::RemovePodSandboxRequest remove;
    remove.set_pod_sandbox_id(e.pod);
    absl::Status s = e.service->StopPodSandbox(Ctx(), stop).status();
    if (s.ok()) s = e.service->RemovePodSandbox(Ctx(), remove).status();
    if (!s.ok()) std::fprintf(stderr, "streaming_bench: cleanup: %s\n", s.ToString().c_str());
    e.pod.clear();
  }
  if (e.docker) bench::RemoveContainersNamed(*e.docker, {kInfraPrefix, kAppPrefix}, "streaming_bench");
  if (!e.dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(e.dir, ec);
    e.dir.clear();
  }
}

// "7.55 4.85 3.36": the machine's share of the figures.
std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return absl::StrCat(one, " ", five, " ", fifteen);
}

std::string Setup(Env& e) {
  for (Target* t : {&e.sink, &e.source, &e.hold}) {
    if (absl::Status s = t->Start(); !s.ok()) return s.ToString();
  }
  auto forward_server = streaming::Server::Start(settings.server, e.host_runtime);
  if (!forward_server.ok()) return "port-forward server: " + forward_server.status().ToString();
  e.forward_server = std::move(*forward_server);

  const std::string endpoint = testenv::DockerEndpoint();
  auto docker = dockerclient::DockerClientImpl::Create(endpoint);
  if (!docker.ok()) return docker.status().ToString();
  e.docker = std::move(*docker);
  auto api = e.docker->Ping(Ctx());
  if (!api.ok()) return "dockerd must run (scripts/test-env.sh): " + api.status().ToString();
  bench::RemoveContainersNamed(*e.docker, {kInfraPrefix, kAppPrefix}, "streaming_bench");  // a killed earlier run

  std::string tmpl = (std::filesystem::temp_directory_path() / "dsbench.XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return "mkdtemp failed";
  e.dir = tmpl;
  e.network = std::make_unique<network::DockerBridgeNetwork>(*e.docker);
  e.docker_runtime = std::make_unique<shim::DockerStreamingRuntime>(*e.docker, nullptr);
  e.exec_runtime = std::make_unique<TimedRuntime>(*e.docker_runtime);
  auto exec_server = streaming::Server::Start(settings.server, *e.exec_runtime);
  if (!exec_server.ok()) return "exec server: " + exec_server.status().ToString();
  e.exec_server = std::move(*exec_server);
  shim::Options options;
  options.docker_endpoint = endpoint;
  options.pod_infra_image = testenv::PauseImage();
  options.root_directory = e.dir + "/root";
  options.network_plugin = "docker";
  options.streaming = e.exec_server.get();
  e.service = std::make_unique<shim::CriService>(options, *e.docker, *e.network);
  if (absl::Status s = e.service->Init(); !s.ok()) return "CriService::Init: " + s.ToString();

  v1::RunPodSandboxRequest run;
  v1::PodSandboxConfig& pod = *run.mutable_config();
  pod.mutable_metadata()->set_name(kPodName);
  pod.mutable_metadata()->set_namespace_(kNamespace);
  pod.mutable_metadata()->set_uid(absl::StrCat("dsbench-stream-", ::getpid()));
  pod.mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_network(v1::NODE);
  auto sandbox = e.service->RunPodSandbox(Ctx(), run);
  if (!sandbox.ok()) return "RunPodSandbox: " + sandbox.status().ToString();
  e.pod = sandbox->pod_sandbox_id();
  v1::CreateContainerRequest create;
  create.set_pod_sandbox_id(e.pod);
  *create.mutable_sandbox_config() = pod;
  create.mutable_config()->mutable_metadata()->set_name(kContainerName);
  create.mutable_config()->mutable_image()->set_image(testenv::BusyboxImage());
  for (const char* arg : {"sleep", "86400"}) create.mutable_config()->add_command(arg);
  auto created = e.service->CreateContainer(Ctx(), create);
  if (!created.ok()) return "CreateContainer: " + created.status().ToString();
  e.container = created->container_id();
  v1::StartContainerRequest start;
  start.set_container_id(e.container);
  if (auto s = e.service->StartContainer(Ctx(), start); !s.ok()) return "StartContainer: " + s.status().ToString();

  // Warm every path once (first connections to dockerd, lazy allocations).
  for (auto op : {+[] { return ShimExecTrue(); }, +[] { return DockerExecTrue(); },
                  +[] { return ForwardUpload(1, kIoBuffer); }, +[] { return ForwardDownload(1, kIoBuffer); }}) {
    if (absl::Status s = op(); !s.ok()) return "warm-up: " + s.ToString();
  }
  bench::Samples().clear();
  std::printf(
      "streaming_bench: dockerd API %s; port-forward server %s, exec server %s (io_threads %d, "
      "worker_threads %d each); %llu MiB per port-forward run, %llu MiB per exec run, %d round trips, "
      "%d idle sessions of each kind; load average %s\n",
      api->c_str(), e.forward_server->base_url().c_str(), e.exec_server->base_url().c_str(), settings.server.io_threads,
      settings.server.worker_threads, static_cast<unsigned long long>(settings.forward_bytes >> 20),
      static_cast<unsigned long long>(settings.exec_bytes >> 20), settings.rounds, settings.idle_sessions,
      LoadAverage().c_str());
  return "";
}

struct ThroughputRow {
  std::string label;
  std::string key, baseline_key;  // sample keys
  uint64_t bytes = 0;
  double target_mb_s = 0;  // a floor
};

// Mean CPU seconds per GiB and context switches per MiB of the runs under `key`.
std::pair<double, double> CostPerByte(const std::string& key, uint64_t bytes) {
  double cpu = 0, switches = 0;
  const std::vector<Cost>& runs = CostSamples()[key];
  for (const Cost& c : runs) {
    cpu += c.cpu_us;
    switches += c.switches;
  }
  const double n = static_cast<double>(std::max<std::size_t>(runs.size(), 1));
  return {cpu / n / 1e6 / (static_cast<double>(bytes) / kGiB), switches / n / static_cast<double>(bytes >> 20)};
}

void PrintThroughputTable(const std::vector<ThroughputRow>& rows) {
  std::printf(
      "\nThroughput (MB/s = 10^6 bytes/s, from the p50 run time of n runs; CPU s/GiB and context switches "
      "per MiB: this process's, client and port target included; base: the baseline's)\n");
  std::printf("  %-56s %3s %7s %7s %8s %7s %8s %8s %8s %8s\n", "figure", "n", "MB/s", "target", "baseline", "vs base",
              "CPU", "base CPU", "csw/MiB", "base csw");
  const auto& s = bench::Samples();
  for (const ThroughputRow& r : rows) {
    auto it = s.find(r.key), base = s.find(r.baseline_key);
    if (it == s.end() || base == s.end() || it->second.empty() || base->second.empty()) {
      std::printf("  %-56s %s\n", r.label.c_str(), "(not run)");
      continue;
    }
    const double mb = static_cast<double>(r.bytes) / bench::Percentile(it->second, 50);
    const double base_mb = static_cast<double>(r.bytes) / bench::Percentile(base->second, 50);
    const auto [cpu, switches] = CostPerByte(r.key, r.bytes);
    const auto [base_cpu, base_switches] = CostPerByte(r.baseline_key, r.bytes);
    std::printf("  %-56s %3zu %7.0f %7.0f %8.0f %6.2fx %8.2f %8.2f %8.1f %8.1f  %s\n", r.label.c_str(),
                it->second.size(), mb, r.target_mb_s, base_mb, mb / base_mb, cpu, base_cpu, switches, base_switches,
                mb >= r.target_mb_s ? "ok" : "BELOW TARGET");
  }
}

void PrintIdleTable() {
  if (idle_rows.empty()) return;
  std::printf(
      "\nIdle sessions (per session: this process's VmRSS after malloc_trim, i.e. live memory, and its open fds; "
      "server fds leave out the client's socket and the port's end)\n");
  std::printf("  %-44s %4s %9s %9s %10s %9s\n", "session", "n", "RSS KiB", "fds", "server fds", "open ms");
  for (const IdleRow& r : idle_rows) {
    const double fds = static_cast<double>(r.open.fds - r.base.fds) / r.n;
    std::printf("  %-44s %4d %9.1f %9.2f %10.2f %9.0f\n", r.what.c_str(), r.n,
                static_cast<double>(r.open.rss_kib - r.base.rss_kib) / r.n, fds, fds - r.other_fds, r.open_ms);
  }
  for (const IdleClose& c : idle_closes) {
    std::string detail = FdKindsDelta(c.before, c.closed);
    if (!detail.empty()) detail = absl::StrCat(" (", detail, ")");
    if (!c.note.empty()) absl::StrAppend(&detail, "; ", c.note);
    std::printf("  %s, all closed (%.0f ms), against before: RSS %+ld KiB (%+ld after malloc_trim), fds %+ld%s\n",
                c.what.c_str(), c.close_ms, c.closed.rss_kib - c.before.rss_kib, c.trimmed.rss_kib - c.before.rss_kib,
                c.closed.fds - c.before.fds, detail.c_str());
  }
}

void PrintSummary() {
  bench::PrintLatencyTable("Latency (a throughput run's row is its whole transfer)");
  const auto forward = [](const std::string& what, int c) {
    return ThroughputRow{absl::StrCat(what, c > 1 ? absl::StrCat(", ", c, " connections, one session") : ""),
                         Key(what, c, "server"), Key(what, c, "raw TCP"), settings.forward_bytes, 1000};
  };
  const auto exec = [](bool tty) {
    return ThroughputRow{absl::StrCat("exec stdout", tty ? ", TTY" : ", no TTY", " (baseline: Docker's own)"),
                         ExecKey(tty, "shim"), ExecKey(tty, "Docker hijacked fd"), settings.exec_bytes, 500};
  };
  PrintThroughputTable({forward("port-forward client->port", 1), forward("port-forward port->client", 1),
                        forward("port-forward client->port", 4), forward("port-forward port->client", 4), exec(false),
                        exec(true)});
  bench::PrintRatioTable(
      {{"exec `true` round trip: shim / bare Docker exec (side by side)", kShimTrueKey, kBareTrueKey, 1.1}});
  const auto& s = bench::Samples();
  for (const char* key : {kShimTrueKey, kBareTrueKey}) {
    auto it = s.find(key);
    if (it == s.end() || it->second.empty()) continue;
    std::printf("%s: p50 %.2f ms, p99 %.2f ms\n", key, bench::Percentile(it->second, 50) / 1000,
                bench::Percentile(it->second, 99) / 1000);
  }
  if (s.count(kShimTrueKey)) {
    std::printf(
        "(latency table: shim phases 1-4 make up the shim's round trip and 4a-4c lie within 4, the rest of 4 "
        "being the server's hand-offs; bare steps 1-3 make up the bare exec)\n");
  }
  PrintIdleTable();
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  common::SetLogLevel(common::LogLevel::kWarning);  // the server logs every killed exec at INFO
  settings.forward_bytes = static_cast<uint64_t>(bench::EnvInt("DSBENCH_FORWARD_MIB", 1024)) << 20;
  settings.exec_bytes = static_cast<uint64_t>(bench::EnvInt("DSBENCH_EXEC_MIB", 256)) << 20;
  settings.rounds = bench::EnvInt("DSBENCH_ROUNDS", 40);
  settings.idle_sessions = bench::EnvInt("DSBENCH_IDLE_SESSIONS", 200);
  settings.server.io_threads = bench::EnvInt("DSBENCH_IO_THREADS", settings.server.io_threads);
  // Round trips: enough for a p99 and a verdict whatever --benchmark_min_time says.
  benchmark::RegisterBenchmark("BM_ExecRoundTrip", BM_ExecRoundTrip)->Iterations(settings.rounds)->Apply(Timed);
  // Last: the sessions' processes are killed as they close, which takes a moment.
  benchmark::RegisterBenchmark("BM_IdleSessions/port-forward", BM_IdleSessions, IdleForwardSessions)
      ->Iterations(1)
      ->Apply(Timed);
  benchmark::RegisterBenchmark("BM_IdleSessions/exec", BM_IdleSessions, IdleExecSessions)->Iterations(1)->Apply(Timed);

  Env e;
  env = &e;
  if (std::string err = Setup(e); !err.empty()) {
    std::fprintf(stderr, "streaming_bench: setup: %s\n", err.c_str());
    Cleanup(e);
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  Cleanup(e);
  PrintSummary();
  env = nullptr;
  return 0;
}
