#pragma once
// Shared by the *_bench.cc files (header only; tests/bench/CMakeLists.txt builds
// each *_bench.cc into its own executable):
//   - RawUnixHttp: a minimal blocking HTTP/1.1 client on one keep-alive unix-socket
//     connection, the floor our transport (dockerclient/http_transport.cc) is
//     compared against, and UrlEscape for its query strings;
//   - Measure()/Compare(): per-iteration latency samples kept by name, so that the
//     final table can print p50/p99 and ratios (Google Benchmark itself reports means);
//   - PrintLatencyTable()/PrintRatioTable(): the figures printed after the run;
//   - RemoveContainersNamed(): the cleanup of a bench's containers by name, at start
//     (leftovers of a killed run) and at the end;
//   - RunConcurrent(): n operations by a number of client threads, timed to the last;
//   - KubeletLikePodConfig()/SleeperContainerConfig(): the pod and container of the
//     start-up benches; EnvInt(), RpcContext(): settings and gRPC deadlines.
// Benchmarks print figures; nothing here fails a build or a test.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <string_view>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "absl/time/time.h"
#include "api/cri.h"
#include "common/context.h"
#include "dockerclient/docker_client.h"
#include "shim/naming.h"

namespace bench {

// ---------------------------------------------------------------------------
// Raw HTTP over a unix socket.

class RawUnixHttp {
 public:
  explicit RawUnixHttp(std::string socket_path) : path_(std::move(socket_path)) {}
  ~RawUnixHttp() { Close(); }
  RawUnixHttp(const RawUnixHttp&) = delete;
  RawUnixHttp& operator=(const RawUnixHttp&) = delete;

  // GET `target`; returns the HTTP status (or -1 on a transport error, with *error
  // set) and the body in *body. Reconnects once when the kept-alive connection was
  // closed by the peer.
  int Get(const std::string& target, std::string* body, std::string* error = nullptr) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (fd_ < 0 && !Connect(error)) return -1;
      const bool fresh = just_connected_;
      just_connected_ = false;
      int status = Exchange(target, body, error);
      if (status >= 0) return status;
      Close();
      if (fresh) return -1;  // a new connection failed: no point retrying
    }
    return -1;
  }

  // GET `target` as a benchmark operation: "" on HTTP 200, else what went wrong.
  // With `parse`, the body is also decoded as JSON (the client's share of the work).
  std::string GetOk(const std::string& target, bool parse) {
    std::string body, error;
    const int status = Get(target, &body, &error);
    if (status != 200) return "GET " + target + ": " + (status < 0 ? error : "HTTP " + std::to_string(status));
    if (parse) {
      nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
      if (j.is_discarded()) return "GET " + target + ": malformed JSON";
      benchmark::DoNotOptimize(j.size());
    }
    benchmark::DoNotOptimize(body.data());
    return "";
  }

 private:
  bool Connect(std::string* error) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return Fail(error, "socket");
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path_.size() >= sizeof addr.sun_path) return Fail(error, "socket path too long");
    std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      Fail(error, "connect");
      Close();
      return false;
    }
    just_connected_ = true;
    buf_.clear();
    pos_ = 0;
    return true;
  }

  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  bool Fail(std::string* error, const char* what) {
    if (error) *error = std::string(what) + ": " + std::strerror(errno);
    return false;
  }

  // Appends whatever the socket has (blocking until at least one byte).
  bool Fill(std::string* error) {
    if (pos_ > 0 && pos_ == buf_.size()) {
      buf_.clear();
      pos_ = 0;
    }
    char chunk[64 * 1024];
    for (;;) {
      ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n > 0) {
        buf_.append(chunk, static_cast<size_t>(n));
        return true;
      }
      if (n == 0) {
        if (error) *error = "connection closed by peer";
        return false;
      }
      if (errno != EINTR) return Fail(error, "recv");
    }
  }

  // A CRLF-terminated line starting at pos_ (without the CRLF).
  bool Line(std::string* line, std::string* error) {
    for (;;) {
      size_t eol = buf_.find("\r\n", pos_);
      if (eol != std::string::npos) {
        line->assign(buf_, pos_, eol - pos_);
        pos_ = eol + 2;
        return true;
      }
      if (!Fill(error)) return false;
    }
  }

  bool Take(size_t n, std::string* out, std::string* error) {
    while (buf_.size() - pos_ < n)
      if (!Fill(error)) return false;
    if (out) out->append(buf_, pos_, n);
    pos_ += n;
    return true;
  }

  int Exchange(const std::string& target, std::string* body, std::string* error) {
    const std::string request = "GET " + target + " HTTP/1.1\r\nHost: docker\r\nUser-Agent: dsbench-raw\r\n\r\n";
    for (size_t sent = 0; sent < request.size();) {
      ssize_t n = ::send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Fail(error, "send"), -1;
      }
      sent += static_cast<size_t>(n);
    }
    std::string line;
    if (!Line(&line, error)) return -1;
    // "HTTP/1.1 200 OK"
    if (line.size() < 12 || line.compare(0, 5, "HTTP/") != 0) {
      if (error) *error = "bad status line: " + line;
      return -1;
    }
    const int status = std::atoi(line.c_str() + 9);
    long long content_length = -1;
    bool chunked = false, close_after = false;
    for (;;) {
      if (!Line(&line, error)) return -1;
      if (line.empty()) break;
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      size_t v = colon + 1;
      while (v < line.size() && line[v] == ' ') ++v;
      const std::string value = line.substr(v);
      if (name == "content-length") content_length = std::atoll(value.c_str());
      if (name == "transfer-encoding" && value.find("chunked") != std::string::npos) chunked = true;
      if (name == "connection" && value.find("close") != std::string::npos) close_after = true;
    }
    body->clear();
    if (chunked) {
      for (;;) {
        if (!Line(&line, error)) return -1;
        const size_t size = std::strtoull(line.c_str(), nullptr, 16);
        if (size == 0) {
          do {  // trailers until the empty line
            if (!Line(&line, error)) return -1;
          } while (!line.empty());
          break;
        }
        if (!Take(size, body, error) || !Take(2, nullptr, error)) return -1;
      }
    } else if (content_length > 0) {
      if (!Take(static_cast<size_t>(content_length), body, error)) return -1;
    } else if (content_length < 0 && status != 204 && status != 304) {
      // No length: the body runs to the end of the connection.
      std::string e;
      while (Fill(&e)) {
      }
      body->append(buf_, pos_, std::string::npos);
      pos_ = buf_.size();
      close_after = true;
    }
    if (close_after) Close();
    return status;
  }

  std::string path_;
  int fd_ = -1;
  bool just_connected_ = false;
  std::string buf_;
  size_t pos_ = 0;
};

// Percent-encodes all but RFC 3986's unreserved characters (Docker's filters= query).
inline std::string UrlEscape(const std::string& s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Latency samples, kept by name for the final tables.

using Clock = std::chrono::steady_clock;

// A positive integer from the environment; `fallback` when unset or not one.
inline int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && std::atoi(v) > 0 ? std::atoi(v) : fallback;
}

// A gRPC client call's context, with a deadline `timeout` from now.
inline std::unique_ptr<grpc::ClientContext> RpcContext(std::chrono::seconds timeout) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
  return ctx;
}

inline double MsSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Runs op(0..n-1) on `clients` threads, each taking the next index; returns the time
// from the start to the last op's return (ms), or -1 with *error set (the first error).
inline double RunConcurrent(int n, int clients, const std::function<std::string(int)>& op, std::string* error) {
  std::atomic<int> next{0};
  std::mutex mu;
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&] {
      for (int i; (i = next.fetch_add(1)) < n;) {
        std::string err = op(i);
        if (!err.empty()) {
          std::lock_guard lock(mu);
          if (error->empty()) *error = err;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  const double ms = MsSince(t0);
  return error->empty() ? ms : -1;
}

inline std::map<std::string, std::vector<double>>& Samples() {
  static std::map<std::string, std::vector<double>> samples;  // microseconds
  return samples;
}

inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double rank = p / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(rank);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
}

inline double Mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

inline void SetPercentileCounters(benchmark::State& state, const std::vector<double>& us) {
  if (us.empty()) return;
  state.counters["p50_us"] = Percentile(us, 50);
  state.counters["p99_us"] = Percentile(us, 99);
}

// Times each call of `op` (which returns an empty string on success, else the
// error) and records it under `key`. The first call of every run is a warm-up and
// is not recorded by the table (Google Benchmark times it like the rest).
inline void Measure(benchmark::State& state, const std::string& key, const std::function<std::string()>& op) {
  std::vector<double> local;
  local.reserve(1024);
  for (auto _ : state) {
    const auto t0 = Clock::now();
    std::string err = op();
    const auto t1 = Clock::now();
    if (!err.empty()) {
      state.SkipWithError(err.c_str());
      break;
    }
    local.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  SetPercentileCounters(state, local);
  auto& all = Samples()[key];
  if (local.size() > 1) all.insert(all.end(), local.begin() + 1, local.end());
}

struct Variant {
  std::string key;
  std::function<std::string()> op;
};

// Runs every variant once per iteration, in rotating order, and records each under
// its key: dockerd's speed drifts (other load on the machine), so ratios between
// variants measured side by side are much steadier than ratios between separate runs.
inline void Compare(benchmark::State& state, const std::vector<Variant>& variants) {
  std::vector<std::vector<double>> local(variants.size());
  size_t round = 0;
  for (auto _ : state) {
    for (size_t k = 0; k < variants.size(); ++k) {
      const size_t i = (round + k) % variants.size();
      const auto t0 = Clock::now();
      std::string err = variants[i].op();
      const auto t1 = Clock::now();
      if (!err.empty()) {
        state.SkipWithError((variants[i].key + ": " + err).c_str());
        return;
      }
      local[i].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    ++round;
  }
  for (size_t i = 0; i < variants.size(); ++i) {
    if (local[i].empty()) continue;
    state.counters[variants[i].key + "_p50_us"] = Percentile(local[i], 50);
    auto& all = Samples()[variants[i].key];
    all.insert(all.end(), local[i].begin() + (local[i].size() > 1 ? 1 : 0), local[i].end());
  }
}

// ---------------------------------------------------------------------------
// Final tables.

inline void PrintLatencyTable(const std::string& title) {
  std::printf("\n%s (microseconds; all timed iterations of all runs)\n", title.c_str());
  std::printf("  %-56s %7s %10s %10s %10s %10s %10s\n", "measurement", "n", "mean", "p50", "p90", "p99", "max");
  for (const auto& [key, v] : Samples()) {
    if (v.empty()) continue;
    std::printf("  %-56s %7zu %10.1f %10.1f %10.1f %10.1f %10.1f\n", key.c_str(), v.size(), Mean(v),
                Percentile(v, 50), Percentile(v, 90), Percentile(v, 99), Percentile(v, 100));
  }
}

struct Ratio {
  std::string label;
  std::string numerator, denominator;  // sample keys
  double target = 0;                   // 0: informational
};

inline void PrintRatioTable(const std::vector<Ratio>& ratios) {
  std::printf("\nRatios (p50 / p50, mean / mean; a target applies to p50; side-by-side figures are the ones to trust)\n");
  std::printf("  %-70s %8s %8s %8s\n", "ratio", "p50", "mean", "target");
  for (const Ratio& r : ratios) {
    const auto& s = Samples();
    auto n = s.find(r.numerator), d = s.find(r.denominator);
    if (n == s.end() || d == s.end() || n->second.empty() || d->second.empty()) {
      std::printf("  %-70s %8s\n", r.label.c_str(), "(not run)");
      continue;
    }
    const double p50 = Percentile(n->second, 50) / Percentile(d->second, 50);
    const double mean = Mean(n->second) / Mean(d->second);
    if (r.target > 0) {
      // Fewer samples than this (e.g. --benchmark_min_time=0.05) are not worth a verdict.
      constexpr size_t kMinSamples = 30;
      const bool enough = std::min(n->second.size(), d->second.size()) >= kMinSamples;
      std::printf("  %-70s %7.3fx %7.3fx %7.2fx  %s\n", r.label.c_str(), p50, mean, r.target,
                  !enough ? "(too few samples to judge)" : p50 <= r.target ? "ok" : "OVER TARGET");
    } else {
      std::printf("  %-70s %7.3fx %7.3fx %8s\n", r.label.c_str(), p50, mean, "-");
    }
  }
  std::fflush(stdout);
}

// ---------------------------------------------------------------------------
// Cleanup of a bench's containers.

// Force-removes every container, running or not, whose name (without Docker's leading
// '/') `match` accepts, whoever left it; problems go to stderr under `bench_name`.
inline void RemoveContainersNamed(dockerclient::DockerClient& docker,
                                  const std::function<bool(std::string_view name)>& match,
                                  const std::string& bench_name) {
  const auto ctx = [] { return common::Context::WithTimeout(absl::Seconds(60)); };
  dockerclient::ListContainersOptions all;
  all.all = true;
  auto list = docker.ListContainers(ctx(), all);
  if (!list.ok()) {
    std::fprintf(stderr, "%s: cleanup: %s\n", bench_name.c_str(), list.status().ToString().c_str());
    return;
  }
  for (const auto& c : *list) {
    for (std::string_view name : c.names) {
      if (!name.empty() && name.front() == '/') name.remove_prefix(1);
      if (!match(name)) continue;
      absl::Status s = docker.RemoveContainer(ctx(), c.id, /*force=*/true);
      if (!s.ok() && !absl::IsNotFound(s))
        std::fprintf(stderr, "%s: cleanup: remove %.*s: %s\n", bench_name.c_str(), static_cast<int>(name.size()),
                     name.data(), s.ToString().c_str());
      break;
    }
  }
}

// The same for names that start with one of `prefixes`.
inline void RemoveContainersNamed(dockerclient::DockerClient& docker, const std::vector<std::string>& prefixes,
                                  const std::string& bench_name) {
  RemoveContainersNamed(
      docker,
      [&prefixes](std::string_view name) {
        return std::any_of(prefixes.begin(), prefixes.end(),
                           [name](const std::string& p) { return name.substr(0, p.size()) == p; });
      },
      bench_name);
}

// A pod as the kubelet sends it (metadata, hostname, the pod labels it adds), with
// `bench_label`=1 so that a bench's own pods can be told apart.
inline runtime::v1::PodSandboxConfig KubeletLikePodConfig(const std::string& name, const std::string& namespace_,
                                                        const std::string& uid, const std::string& bench_label) {
  runtime::v1::PodSandboxConfig config;
  config.mutable_metadata()->set_name(name);
  config.mutable_metadata()->set_namespace_(namespace_);
  config.mutable_metadata()->set_uid(uid);
  config.mutable_metadata()->set_attempt(0);
  config.set_hostname(name);
  (*config.mutable_labels())[bench_label] = "1";
  (*config.mutable_labels())[shim::kPodNameLabel] = name;
  (*config.mutable_labels())[shim::kPodNamespaceLabel] = namespace_;
  (*config.mutable_labels())[shim::kPodUidLabel] = uid;
  // The kubelet always sends the Linux section (cri-dockerd 0.4.3 leaves a pod without
  // one on Docker's default bridge, where the CNI plugin then finds eth0 taken).
  runtime::v1::NamespaceOption& namespaces = *config.mutable_linux()->mutable_security_context()->mutable_namespace_options();
  namespaces.set_network(runtime::v1::NamespaceMode::POD);
  namespaces.set_pid(runtime::v1::NamespaceMode::CONTAINER);
  namespaces.set_ipc(runtime::v1::NamespaceMode::POD);
  return config;
}

// The one container of the pod start-up benches: `image` running `sleep 3600`, its log
// at <name>/0.log in the pod's log directory, with `bench_label`=1.
inline runtime::v1::ContainerConfig SleeperContainerConfig(const std::string& name, const std::string& image,
                                                          const std::string& bench_label) {
  runtime::v1::ContainerConfig c;
  c.mutable_metadata()->set_name(name);
  c.mutable_image()->set_image(image);
  c.add_command("sleep");
  c.add_args("3600");
  c.set_log_path(name + "/0.log");
  (*c.mutable_labels())[bench_label] = "1";
  return c;
}

}  // namespace bench
