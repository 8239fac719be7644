// The transport alone, without dockerd's own time and noise: dockerclient::HttpTransport
// against bench::RawUnixHttp (blocking send/recv on one keep-alive connection), both
// talking to an in-process server on a unix socket that answers every GET with a
// canned body, the way dockerd does (Content-Length for small bodies, chunked for
// larger ones). The difference is what our transport itself costs per request.
// Needs nothing but a temp dir.
//
//   transport_bench [--benchmark_min_time=0.5] [--benchmark_filter=...]
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "dockerclient/http_transport.h"
#include "tests/bench/bench_common.h"

namespace {

// Serves GET /<bytes>/<cl|chunked> with a JSON body of that many bytes, one thread
// per connection, keep-alive.
class CannedServer {
 public:
  bool Start(const std::string& path) {
    path_ = path;
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (listen_fd_ < 0 || path.size() >= sizeof addr.sun_path) return false;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return false;
    if (::listen(listen_fd_, 16) != 0) return false;
    acceptor_ = std::thread([this] { AcceptLoop(); });
    return true;
  }

  ~CannedServer() {
    stop_ = true;
    if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);
    if (acceptor_.joinable()) acceptor_.join();
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int fd : conns_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : workers_) t.join();
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }

 private:
  void AcceptLoop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      std::lock_guard<std::mutex> lock(mu_);
      conns_.push_back(fd);
      workers_.emplace_back([this, fd] { Serve(fd); });
    }
  }

  static std::string Body(size_t n) {
    // ["xxxx…","xxxx…",…] padded to exactly n bytes.
    std::string body = "[";
    while (body.size() + 70 < n) body += "\"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdef\",";
    body += "\"";
    while (body.size() + 2 < n) body += 'z';
    body += "\"]";
    return body;
  }

  static std::string Response(size_t n, bool chunked) {
    const std::string body = Body(n);
    std::string r = "HTTP/1.1 200 OK\r\nApi-Version: 1.41\r\nContent-Type: application/json\r\n"
                    "Docker-Experimental: false\r\nOstype: linux\r\nServer: Docker/20.10.24 (linux)\r\n"
                    "Date: Mon, 30 Nov 2026 02:45:17 GMT\r\n";
    if (!chunked) return absl::StrCat(r, "Content-Length: ", body.size(), "\r\n\r\n", body);
    r += "Transfer-Encoding: chunked\r\n\r\n";
    for (size_t at = 0; at < body.size(); at += 4096) {  // Go flushes its 4 KiB buffer as a chunk
      const size_t len = std::min<size_t>(4096, body.size() - at);
      char size[32];
      std::snprintf(size, sizeof size, "%zx\r\n", len);
      absl::StrAppend(&r, size, body.substr(at, len), "\r\n");
    }
    return r + "0\r\n\r\n";
  }

  void Serve(int fd) {
    std::string in;
    char buf[8192];
    std::map<std::string, std::string> cache;
    for (;;) {
      size_t end;
      while ((end = in.find("\r\n\r\n")) == std::string::npos) {
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return;
        in.append(buf, static_cast<size_t>(n));
      }
      // "GET /<bytes>/<cl|chunked> HTTP/1.1"
      const std::string line = in.substr(0, in.find("\r\n"));
      in.erase(0, end + 4);
      const size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
      const std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
      auto it = cache.find(target);
      if (it == cache.end()) {
        size_t bytes = std::strtoull(target.c_str() + 1, nullptr, 10);
        it = cache.emplace(target, Response(bytes, target.find("chunked") != std::string::npos)).first;
      }
      const std::string& out = it->second;
      for (size_t sent = 0; sent < out.size();) {
        ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) return;
        sent += static_cast<size_t>(n);
      }
    }
  }

  std::string path_;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<int> conns_;
  std::vector<std::thread> workers_;
};

dockerclient::HttpTransport* transport = nullptr;
bench::RawUnixHttp* raw = nullptr;

std::string Target(int64_t bytes, bool chunked) { return absl::StrCat("/", bytes, chunked ? "/chunked" : "/cl"); }

std::string ViaTransport(const std::string& target, size_t want) {
  auto resp = transport->Request(common::Context::WithTimeout(absl::Seconds(10)), "GET", target);
  if (!resp.ok()) return resp.status().ToString();
  if (resp->status != 200 || resp->body.size() != want)
    return absl::StrCat("HttpTransport: HTTP ", resp->status, ", ", resp->body.size(), " bytes");
  return "";
}

std::string ViaRaw(const std::string& target, size_t want) {
  std::string body, error;
  const int status = raw->Get(target, &body, &error);
  if (status != 200 || body.size() != want) return absl::StrCat("raw: HTTP ", status, " ", error, body.size(), " bytes");
  return "";
}

std::string Label(size_t bytes, bool chunked) {
  return absl::StrCat(bytes, " B ", chunked ? "chunked" : "content-length");
}

struct Case {
  int64_t bytes;
  bool chunked;
};
// What dockerd sends: an image inspect (Content-Length), a pod infra container
// inspect, ListContainers of 20 pods, a long list (chunked).
constexpr Case kCases[] = {{1500, false}, {6000, true}, {25000, true}, {250000, true}};

// Arguments: body size, chunked (0/1).
void BM_Transport(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const bool chunked = state.range(1) != 0;
  const std::string target = Target(state.range(0), chunked);
  const std::string label = Label(bytes, chunked);
  bench::Compare(state, {{"HttpTransport " + label, [&] { return ViaTransport(target, bytes); }},
                         {"raw           " + label, [&] { return ViaRaw(target, bytes); }}});
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  auto* b = benchmark::RegisterBenchmark("BM_Transport", BM_Transport);
  b->ArgNames({"bytes", "chunked"})->UseRealTime()->Unit(benchmark::kMicrosecond);
  for (const Case& c : kCases) b->Args({c.bytes, c.chunked ? 1 : 0});
  common::SetLogLevel(common::LogLevel::kWarning);
  std::string tmpl = (std::filesystem::temp_directory_path() / "dsbench-transport.XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) {
    std::perror("transport_bench: mkdtemp");
    return 1;
  }
  const std::string sock = tmpl + "/canned.sock";
  int rc = 0;
  {
    CannedServer server;
    if (!server.Start(sock)) {
      std::perror("transport_bench: canned server");
      rc = 1;
    } else {
      dockerclient::HttpTransport t(sock, "unix://" + sock);
      bench::RawUnixHttp r(sock);
      transport = &t;
      raw = &r;
      benchmark::RunSpecifiedBenchmarks();
      transport = nullptr;
      raw = nullptr;
    }
  }
  benchmark::Shutdown();
  std::filesystem::remove_all(tmpl);
  if (rc != 0) return rc;

  bench::PrintLatencyTable("Transport latency against a canned in-process server");
  std::vector<bench::Ratio> ratios;
  for (const Case& c : kCases) {
    const std::string label = Label(static_cast<size_t>(c.bytes), c.chunked);
    ratios.push_back({absl::StrCat("HttpTransport / raw, ", label), absl::StrCat("HttpTransport ", label),
                      absl::StrCat("raw           ", label), 0});
  }
  bench::PrintRatioTable(ratios);
  std::printf("\nExtra per request = HttpTransport p50 - raw p50:\n");
  const auto& s = bench::Samples();
  for (const auto& r : ratios) {
    auto a = s.find(r.numerator), b = s.find(r.denominator);
    if (a == s.end() || b == s.end()) continue;
    std::printf("  %-40s %8.1f us\n", r.numerator.c_str(),
                bench::Percentile(a->second, 50) - bench::Percentile(b->second, 50));
  }
  return 0;
}
