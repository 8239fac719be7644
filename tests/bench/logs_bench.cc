// shim::logs::LogCopier on a real dockerd, each figure beside its target and Docker's
// own speed. Every copier figure is taken for both sources of a json-file container,
// side by side in alternating order: "files" (Docker's json file read directly, the
// default) and "API" (Docker's logs stream, the path of every other driver), and
// "8 live": 8 containers flooding at once into one copier (each 1/8 of the lines),
// MB/s summed. CPU per MB (copier's thread and dockerd's) is printed for each.
// The dockerd measured is the one serving DOCKERSHIM_TEST_DOCKER (by its command line).
//   - throughput (target >= 100 MB/s of CRI log with <= 1 core): a busybox container
//     (json-file driver, no TTY) writes DSBENCH_LOG_MIB MiB of 100-byte lines (or
//     DSBENCH_LINE_BYTES) as fast as it can (`yes <99 bytes> | head -n <lines>`):
//       "live": the copier follows it from its start; timed from Follow until the CRI
//         file holds every line (the container's pace and Docker's logging bound it);
//         "docker alone": the same container with no copier, from its start to its
//         exit: how fast Docker takes the output in, the live copy's ceiling;
//       "exited": the copier copies the whole log of that container once it exited,
//         side by side (rotating order) with "docker raw GET": GET
//         /containers/<id>/logs?stdout=1&stderr=1&timestamps=1 read to its end on a
//         raw socket, frames counted, nothing else done: how fast Docker serves the log;
//     MB/s of bytes delivered (the copier: CRI bytes written; Docker: its multiplexed
//     stream, about as long), lines/s, and CPU as cores (CPU seconds / wall seconds):
//     this process's (getrusage: RUSAGE_SELF minus the main thread, which only polls
//     the file, i.e. the copier's thread), and dockerd's (/proc/<pid>/stat);
//   - write-to-file latency (target p99 <= 100 ms): a container prints a line every
//     10 ms (DSBENCH_LATENCY_LINES of them); for each line, the time it is seen in the
//     CRI file (inotify) minus Docker's timestamp in it (when Docker read it from the
//     container). Side by side: the same lines through a raw follow of Docker's logs
//     API (`docker logs -f` on a socket): the floor, Docker's own delay.
// Containers are named dsbench-logs-<pid>-<n>; all dsbench-logs-* containers are removed
// at start (a killed run) and at the end, also after a failure. CRI files go to a
// temp dir (dsbench.XXXXXX). Needs a running dockerd and the test images
// (scripts/test-env.sh); no network.
//   logs_bench [--benchmark_filter=...]   DSBENCH_LOG_MIB=256 DSBENCH_LINE_BYTES=100 DSBENCH_LATENCY_LINES=500
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/unique_fd.h"
#include "dockerclient/docker_client_impl.h"
#include "dockerclient/stdcopy.h"
#include "shim/logs/cri_log.h"
#include "shim/logs/log_copier.h"
#include "tests/bench/bench_common.h"
#include "tests/integration/env.h"

namespace {

constexpr char kNamePrefix[] = "dsbench-logs-";  // every container this bench creates
// Docker splits longer lines into entries of 16 KiB: the bench counts whole lines.
constexpr int64_t kMaxLineBytes = 16 << 10;
constexpr absl::Duration kCallTimeout = absl::Seconds(60);
constexpr absl::Duration kCopyTimeout = absl::Minutes(10);
constexpr double kMB = 1e6;

struct Env {
  std::string dir;          // CRI log files
  std::string socket_path;  // dockerd's
  std::string api;          // "1.41"
  std::unique_ptr<dockerclient::DockerClient> docker;
  int dockerd_pid = 0;  // 0: not found, no dockerd CPU figures
  int64_t flood_lines = 0;
  int64_t line_bytes = 100;  // each line the flood container writes, with its '\n'
  std::string exited_flood;  // a flood container that has exited, its whole log at Docker
  int serial = 0;
};

Env* env = nullptr;

common::Context Ctx() { return common::Context::WithTimeout(kCallTimeout); }

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoll(v) : fallback;
}

double Seconds(bench::Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// --- CPU accounting. -----------------------------------------------------------------

double RusageSeconds(int who) {
  rusage ru{};
  ::getrusage(who, &ru);
  auto s = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6; };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

// utime + stime of a process, from /proc/<pid>/stat; 0 when unreadable.
double ProcessCpuSeconds(int pid) {
  if (pid <= 0) return 0;
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::vector<std::string> fields;
  for (std::string_view rest = std::string_view(stat).substr(paren + 2); !rest.empty();) {
    const std::size_t sp = rest.find(' ');
    fields.emplace_back(rest.substr(0, sp));
    rest.remove_prefix(sp == std::string_view::npos ? rest.size() : sp + 1);
  }
  if (fields.size() < 13) return 0;  // fields[0] is the 3rd field (state); utime is the 14th
  return static_cast<double>(std::atoll(fields[11].c_str()) + std::atoll(fields[12].c_str())) /
         static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// The dockerd serving `socket_path`: the one whose command line names it, else (the
// default socket) one started without -H; 0 when none is found. Several engines may
// run side by side (scripts/docker-engines.sh).
int FindDockerd(const std::string& socket_path) {
  int fallback = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::ifstream comm(e.path() / "comm");
    std::string c;
    std::getline(comm, c);
    if (c != "dockerd") continue;
    std::ifstream in(e.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (absl::StrContains(cmdline, socket_path)) return std::atoi(name.c_str());
    if (!absl::StrContains(cmdline, absl::string_view("-H\0", 3)) && !absl::StrContains(cmdline, "--host")) fallback = std::atoi(name.c_str());
  }
  return fallback;
}

// What a timed section used: wall time, this process's CPU (all threads, and the
// main thread alone) and dockerd's.
class CpuMeter {
 public:
  CpuMeter()
      : t0_(bench::Clock::now()),
        self0_(RusageSeconds(RUSAGE_SELF)),
        main0_(RusageSeconds(RUSAGE_THREAD)),
        dockerd0_(ProcessCpuSeconds(env->dockerd_pid)) {}
  struct Figures {
    double wall = 0, self = 0, main = 0, dockerd = 0;  // seconds
  };
  Figures Read() const {  // on the thread that made the meter
    return {Seconds(bench::Clock::now() - t0_), RusageSeconds(RUSAGE_SELF) - self0_,
            RusageSeconds(RUSAGE_THREAD) - main0_, ProcessCpuSeconds(env->dockerd_pid) - dockerd0_};
  }

 private:
  bench::Clock::time_point t0_;
  double self0_, main0_, dockerd0_;
};

// --- Containers. -----------------------------------------------------------------------

absl::StatusOr<std::string> CreateContainer(const std::string& script) {
  nlohmann::json body = {
      {"Image", testenv::BusyboxImage()},
      {"Cmd", {"sh", "-c", script}},
      {"Tty", false},
      {"AttachStdout", false},
      {"AttachStderr", false},
      {"HostConfig", {{"NetworkMode", "none"}, {"LogConfig", {{"Type", "json-file"}, {"Config", nlohmann::json::object()}}}}},
  };
  return env->docker->CreateContainer(Ctx(), absl::StrCat(kNamePrefix, ::getpid(), "-", env->serial++), body);
}

void Remove(const std::string& id) {
  absl::Status s = env->docker->RemoveContainer(Ctx(), id, /*force=*/true);
  if (!s.ok() && !absl::IsNotFound(s)) std::fprintf(stderr, "logs_bench: remove %s: %s\n", id.c_str(), s.ToString().c_str());
}

std::string WaitExited(const std::string& id, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    auto inspect = env->docker->InspectContainer(Ctx(), id);
    if (!inspect.ok()) return "inspect: " + inspect.status().ToString();
    if (!inspect->state.running && inspect->state.status == "exited") {
      if (inspect->state.exit_code != 0) return absl::StrCat("the container exited with ", inspect->state.exit_code);
      return "";
    }
    if (absl::Now() > deadline) return "the container did not exit in time";
    absl::SleepFor(absl::Milliseconds(50));
  }
}

// `yes <99 bytes> | head -n <lines>`: env->flood_lines lines of env->line_bytes.
std::string FloodScript() {
  std::string line = "dsbench-logs ";
  while (static_cast<int64_t>(line.size()) < env->line_bytes - 1) line += static_cast<char>('a' + line.size() % 26);
  return absl::StrCat("yes ", line, " | head -n ", env->flood_lines);
}

// --- The CRI file, as the kubelet would see it. --------------------------------------

// Counts the complete lines of a file that grows, reading only what is new.
class FileLines {
 public:
  explicit FileLines(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)), buf_(1 << 20) {}
  bool ok() const { return fd_.valid(); }
  // Reads what was appended; for each complete line, `on_line` (when given).
  void Poll(const std::function<void(std::string_view)>& on_line = nullptr) {
    for (;;) {
      const ssize_t n = ::pread(fd_.get(), buf_.data(), buf_.size(), static_cast<off_t>(offset_));
      if (n <= 0) return;
      offset_ += static_cast<uint64_t>(n);
      std::string_view data(buf_.data(), static_cast<std::size_t>(n));
      if (!on_line) {
        lines_ += std::count(data.begin(), data.end(), '\n');
      } else {
        while (!data.empty()) {
          const std::size_t nl = data.find('\n');
          if (nl == std::string_view::npos) {
            partial_.append(data);
            break;
          }
          partial_.append(data.substr(0, nl));
          on_line(partial_);
          partial_.clear();
          ++lines_;
          data.remove_prefix(nl + 1);
        }
      }
      if (static_cast<std::size_t>(n) < buf_.size()) return;
    }
  }
  int64_t lines() const { return lines_; }
  uint64_t bytes() const { return offset_; }

 private:
  common::UniqueFd fd_;
  std::vector<char> buf_;
  uint64_t offset_ = 0;
  int64_t lines_ = 0;
  std::string partial_;
};

std::string NewLogPath() {
  const std::string path = absl::StrCat(env->dir, "/", env->serial++, ".log");
  std::ofstream(path).flush();  // empty: the copier copies the whole log
  return path;
}

// --- Docker's log stream on a raw socket. ------------------------------------------------

// One GET on a new connection to dockerd; the body goes to `on_body` piece by piece as
// it arrives (chunked, or to the end of the connection). "" or what went wrong.
std::string RawGetStream(const std::string& target, const std::function<void(std::string_view)>& on_body) {
  common::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return absl::StrCat("socket: ", std::strerror(errno));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", env->socket_path.c_str());
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return absl::StrCat("connect: ", std::strerror(errno));
  timeval timeout{60, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  const std::string request =
      absl::StrCat("GET ", target, " HTTP/1.1\r\nHost: docker\r\nUser-Agent: dsbench-raw\r\nConnection: close\r\n\r\n");
  if (::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size()))
    return "send failed";

  std::string buf;
  std::size_t pos = 0;
  std::vector<char> chunk(256 << 10);
  auto fill = [&]() -> bool {  // appends at least one byte; false at the end
    if (pos == buf.size()) {
      buf.clear();
      pos = 0;
    } else if (pos > (1 << 20)) {
      buf.erase(0, pos);
      pos = 0;
    }
    for (;;) {
      const ssize_t n = ::recv(fd.get(), chunk.data(), chunk.size(), 0);
      if (n > 0) {
        buf.append(chunk.data(), static_cast<std::size_t>(n));
        return true;
      }
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
  };
  std::size_t end;
  while ((end = buf.find("\r\n\r\n")) == std::string::npos)
    if (!fill()) return "no response header";
  const std::string head = absl::AsciiStrToLower(buf.substr(0, end));
  pos = end + 4;
  if (head.size() < 12 || std::atoi(head.c_str() + 9) != 200) {
    while (fill()) {
    }
    return absl::StrCat("GET ", target, ": ", buf.substr(0, 200));
  }
  if (!absl::StrContains(head, "transfer-encoding: chunked")) {
    do {
      if (pos < buf.size()) on_body(std::string_view(buf).substr(pos));
      pos = buf.size();
    } while (fill());
    return "";
  }
  for (;;) {
    std::size_t eol;
    while ((eol = buf.find("\r\n", pos)) == std::string::npos)
      if (!fill()) return "the chunked body was cut";
    std::size_t size = std::strtoull(buf.c_str() + pos, nullptr, 16);
    pos = eol + 2;
    if (size == 0) return "";
    while (size > 0) {
      if (pos == buf.size() && !fill()) return "the chunked body was cut";
      const std::size_t take = std::min(size, buf.size() - pos);
      on_body(std::string_view(buf.data() + pos, take));
      pos += take;
      size -= take;
    }
    while (buf.size() - pos < 2)
      if (!fill()) return "the chunked body was cut";
    pos += 2;
  }
}

std::string LogsTarget(const std::string& id, bool follow) {
  return absl::StrCat("/v", env->api, "/containers/", id, "/logs?stdout=1&stderr=1&timestamps=1",
                      follow ? "&follow=1" : "");
}

// --- Throughput. ---------------------------------------------------------------------------

struct Run {
  double wall = 0, cores = 0, dockerd_cores = 0, reader_cores = 0;
  uint64_t bytes = 0;
  int64_t lines = 0;
  // The copier's CPU is this process's but the main thread's (which only polls the file).
  void TakeCpu(const CpuMeter::Figures& f) {
    wall = f.wall;
    cores = (f.self - f.main) / f.wall;
    dockerd_cores = f.dockerd / f.wall;
    reader_cores = f.main / f.wall;
  }
};
std::map<std::string, std::vector<Run>>& Runs() {
  static std::map<std::string, std::vector<Run>> runs;
  return runs;
}

// Follows `id` into a new CRI file until it holds `want` lines, polling every 1 ms;
// `before_follow` runs first (untimed: starting the container).
// Docker's json log of a container (its LogPath), "" when it cannot be inspected.
std::string JsonLogOf(const std::string& id) {
  auto inspect = env->docker->InspectContainer(Ctx(), id);
  return inspect.ok() ? inspect->log_path : "";
}

// The copier's two sources for json-file containers.
enum class Source { kFiles, kApi };
const char* Name(Source s) { return s == Source::kFiles ? "files" : "API"; }
shim::logs::CopierOptions CopierOptionsFor(Source source) {
  shim::logs::CopierOptions options;
  options.docker_socket_path = env->socket_path;
  options.read_json_files = source == Source::kFiles;
  return options;
}

std::string CopierRun(const std::string& id, int64_t want, const std::function<std::string()>& before_follow,
                      Run* run, Source source) {
  shim::logs::LogCopier copier(*env->docker, CopierOptionsFor(source));
  const std::string path = NewLogPath();
  FileLines file(path);
  if (!file.ok()) return "cannot open " + path;
  if (before_follow)
    if (std::string err = before_follow(); !err.empty()) return err;
  const std::string json_log = JsonLogOf(id);
  const CpuMeter meter;
  copier.Follow(id, path, /*tty=*/false, json_log);
  const absl::Time deadline = absl::Now() + kCopyTimeout;
  while (file.Poll(), file.lines() < want) {
    if (absl::Now() > deadline)
      return absl::StrCat("the CRI file holds ", file.lines(), " of ", want, " lines after ", absl::FormatDuration(kCopyTimeout));
    ::usleep(1000);
  }
  run->TakeCpu(meter.Read());
  run->bytes = file.bytes();
  run->lines = file.lines();
  const uint64_t counted = copier.Stats().bytes_written;
  const uint64_t fallbacks = copier.Stats().fallbacks;
  copier.Stop();
  if (fallbacks != 0) return absl::StrCat(fallbacks, " fallback(s) from the json file to the API");
  file.Poll();
  if (file.lines() != want) return absl::StrCat("the CRI file holds ", file.lines(), " lines, want ", want);
  if (counted != file.bytes()) return absl::StrCat("Stats().bytes_written ", counted, " != file size ", file.bytes());
  std::error_code ec;
  std::filesystem::remove(path, ec);
  return "";
}

std::string DockerRawRun(const std::string& id, int64_t want, Run* run) {
  int64_t frames = 0;
  uint64_t bytes = 0;
  dockerclient::StdFrameReader reader([&frames](dockerclient::StdStream, std::string_view) { ++frames; }, 64 << 10);
  const CpuMeter meter;
  std::string err = RawGetStream(LogsTarget(id, false), [&](std::string_view piece) {
    bytes += piece.size();
    reader.Feed(piece);
  });
  const CpuMeter::Figures f = meter.Read();
  if (!err.empty()) return err;
  if (frames != want) return absl::StrCat("Docker sent ", frames, " messages, want ", want);
  run->TakeCpu(f);
  run->bytes = bytes;
  run->lines = frames;
  return "";
}

void Report(benchmark::State& state, const std::string& key, const Run& r) {
  Runs()[key].push_back(r);
  state.counters[key + "_MBps"] = static_cast<double>(r.bytes) / kMB / r.wall;
}

void BM_Throughput_Live(benchmark::State& state) {
  int round = 0;
  uint64_t copied_bytes = 0;
  for (auto _ : state) {
    for (int k = 0; k < 2; ++k) {
      const Source source = (round + k) % 2 == 0 ? Source::kFiles : Source::kApi;
      auto id = CreateContainer(FloodScript());
      if (!id.ok()) return state.SkipWithError(("create: " + id.status().ToString()).c_str());
      Run run;
      std::string err = CopierRun(
          *id, env->flood_lines,
          [&] {
            absl::Status s = env->docker->StartContainer(Ctx(), *id);
            return s.ok() ? "" : "start: " + s.ToString();
          },
          &run, source);
      if (err.empty()) err = WaitExited(*id, absl::Minutes(1));
      if (!err.empty()) {
        Remove(*id);
        return state.SkipWithError((std::string(Name(source)) + ": " + err).c_str());
      }
      state.SetIterationTime(run.wall);
      Report(state, absl::StrCat("copier (", Name(source), "), live"), run);
      // The last one stays for BM_Throughput_Exited.
      if (!env->exited_flood.empty()) Remove(env->exited_flood);
      env->exited_flood = *id;
      copied_bytes = run.bytes;
    }
    // Docker alone, no copier: how fast it takes in the container's output (the live
    // copy's ceiling), counted as the same CRI bytes.
    auto id = CreateContainer(FloodScript());
    if (!id.ok()) return state.SkipWithError(("create: " + id.status().ToString()).c_str());
    absl::Status started = env->docker->StartContainer(Ctx(), *id);
    const CpuMeter meter;
    std::string err = started.ok() ? WaitExited(*id, absl::Minutes(1)) : "start: " + started.ToString();
    Run alone;
    alone.TakeCpu(meter.Read());
    Remove(*id);
    if (!err.empty()) return state.SkipWithError(("docker alone: " + err).c_str());
    alone.bytes = copied_bytes;
    alone.lines = env->flood_lines;
    Report(state, "docker alone (no copier), live", alone);
    ++round;
  }
}

// 8 containers flooding at once, one copier: summed MB/s until every CRI file holds
// all its lines (each container writes 1/8 of DSBENCH_LOG_MIB).
std::string EightRun(Source source, Run* run) {
  constexpr int kContainers = 8;
  const int64_t lines = env->flood_lines / kContainers;
  const int64_t saved = env->flood_lines;
  env->flood_lines = lines;
  std::vector<std::string> ids;
  std::string err;
  for (int i = 0; i < kContainers && err.empty(); ++i) {
    auto id = CreateContainer(FloodScript());
    if (!id.ok()) err = "create: " + id.status().ToString();
    else ids.push_back(*id);
  }
  env->flood_lines = saved;
  auto cleanup = [&] {
    for (const auto& id : ids) Remove(id);
  };
  if (!err.empty()) return cleanup(), err;
  shim::logs::LogCopier copier(*env->docker, CopierOptionsFor(source));
  std::vector<std::string> paths;
  std::vector<std::unique_ptr<FileLines>> files;
  for (int i = 0; i < kContainers; ++i) {
    paths.push_back(NewLogPath());
    files.push_back(std::make_unique<FileLines>(paths.back()));
  }
  for (const auto& id : ids)
    if (absl::Status s = env->docker->StartContainer(Ctx(), id); !s.ok()) return cleanup(), "start: " + s.ToString();
  const CpuMeter meter;
  for (int i = 0; i < kContainers; ++i) copier.Follow(ids[i], paths[i], false, JsonLogOf(ids[i]));
  const absl::Time deadline = absl::Now() + kCopyTimeout;
  for (;;) {
    bool all = true;
    for (auto& f : files) {
      f->Poll();
      all = all && f->lines() >= lines;
    }
    if (all) break;
    if (absl::Now() > deadline) return cleanup(), "the CRI files did not fill in time";
    ::usleep(1000);
  }
  run->TakeCpu(meter.Read());
  for (auto& file : files) {
    run->bytes += file->bytes();
    run->lines += file->lines();
  }
  const uint64_t fallbacks = copier.Stats().fallbacks;
  copier.Stop();
  cleanup();
  for (const auto& p : paths) std::filesystem::remove(p);
  if (fallbacks != 0) return absl::StrCat(fallbacks, " fallback(s) from the json file to the API");
  return "";
}

void BM_Throughput_Live8(benchmark::State& state) {
  int round = 0;
  for (auto _ : state) {
    for (int k = 0; k < 2; ++k) {
      const Source source = (round + k) % 2 == 0 ? Source::kFiles : Source::kApi;
      Run run;
      if (std::string err = EightRun(source, &run); !err.empty())
        return state.SkipWithError((std::string(Name(source)) + ": " + err).c_str());
      state.SetIterationTime(run.wall);
      Report(state, absl::StrCat("copier (", Name(source), "), 8 live"), run);
    }
    ++round;
  }
}

std::string EnsureExitedFlood() {
  if (!env->exited_flood.empty()) return "";
  auto id = CreateContainer(FloodScript());
  if (!id.ok()) return "create: " + id.status().ToString();
  env->exited_flood = *id;
  if (absl::Status s = env->docker->StartContainer(Ctx(), *id); !s.ok()) return "start: " + s.ToString();
  return WaitExited(*id, absl::Minutes(5));
}

void BM_Throughput_Exited(benchmark::State& state) {
  if (std::string err = EnsureExitedFlood(); !err.empty()) return state.SkipWithError(err.c_str());
  int round = 0;
  for (auto _ : state) {
    Run files, api, docker;
    for (int k = 0; k < 3; ++k) {
      const int turn = (round + k) % 3;
      std::string err = turn == 0   ? CopierRun(env->exited_flood, env->flood_lines, nullptr, &files, Source::kFiles)
                        : turn == 1 ? CopierRun(env->exited_flood, env->flood_lines, nullptr, &api, Source::kApi)
                                    : DockerRawRun(env->exited_flood, env->flood_lines, &docker);
      if (!err.empty()) return state.SkipWithError(absl::StrCat(turn == 0 ? "files: " : turn == 1 ? "API: " : "docker: ", err).c_str());
    }
    ++round;
    state.SetIterationTime(files.wall);
    Report(state, "copier (files), exited", files);
    Report(state, "copier (API), exited", api);
    Report(state, "docker raw GET, exited", docker);
  }
}

// --- Latency. --------------------------------------------------------------------------------

// Docker's timestamp at the start of `line` ("<RFC 3339> ..."); 0 when it has none.
int64_t LeadingNanos(std::string_view line) {
  const std::size_t sp = line.find(' ');
  if (sp == std::string_view::npos) return 0;
  auto nanos = shim::logs::TimestampNanos(line.substr(0, sp));
  return nanos.ok() ? *nanos : 0;
}

void Record(const std::string& key, int64_t seen_nanos, int64_t stamped_nanos) {
  bench::Samples()[key].push_back(static_cast<double>(seen_nanos - stamped_nanos) / 1e3);
}

constexpr char kLatencyCopier[] = "write-to-file latency: copier (files)";
constexpr char kLatencyCopierApi[] = "write-to-file latency: copier (API)";
constexpr char kLatencyDocker[] = "write-to-file latency: docker raw follow (floor)";

void BM_Latency(benchmark::State& state) {
  const int64_t lines = EnvInt("DSBENCH_LATENCY_LINES", 500);
  int round = 0;
  for (auto _ : state) {
   for (int k = 0; k < 2; ++k) {
    const Source source = (round + k) % 2 == 0 ? Source::kFiles : Source::kApi;
    // A second of quiet first: both followers are attached before the first line.
    auto id = CreateContainer(absl::StrCat("sleep 1; i=0; while [ $i -lt ", lines,
                                           " ]; do echo \"tick $i\"; i=$((i+1)); usleep 10000; done"));
    if (!id.ok()) return state.SkipWithError(("create: " + id.status().ToString()).c_str());
    auto fail = [&](const std::string& err) {
      Remove(*id);
      state.SkipWithError(err.c_str());
    };
    shim::logs::LogCopier copier(*env->docker, CopierOptionsFor(source));
    const std::string path = NewLogPath();
    FileLines file(path);
    common::UniqueFd inotify(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
    if (!file.ok() || !inotify || ::inotify_add_watch(inotify.get(), path.c_str(), IN_MODIFY) < 0)
      return fail("cannot watch " + path);
    if (absl::Status s = env->docker->StartContainer(Ctx(), *id); !s.ok()) return fail("start: " + s.ToString());
    copier.Follow(*id, path, /*tty=*/false, JsonLogOf(*id));

    std::vector<std::pair<int64_t, int64_t>> raw_samples;  // (seen, stamped)
    std::string raw_err;
    std::thread raw([&] {
      dockerclient::StdFrameReader reader(
          [&](dockerclient::StdStream, std::string_view m) {
            raw_samples.emplace_back(absl::ToUnixNanos(absl::Now()), LeadingNanos(m));
          },
          64 << 10);
      raw_err = RawGetStream(LogsTarget(*id, true), [&](std::string_view piece) { reader.Feed(piece); });
    });

    std::vector<std::pair<int64_t, int64_t>> samples;
    const absl::Time deadline = absl::Now() + absl::Seconds(30) + absl::Milliseconds(50 * lines);
    while (file.lines() < lines && absl::Now() < deadline) {
      pollfd p{inotify.get(), POLLIN, 0};
      ::poll(&p, 1, 100);
      char events[4096];
      while (::read(inotify.get(), events, sizeof events) > 0) {
      }
      const int64_t now = absl::ToUnixNanos(absl::Now());
      file.Poll([&](std::string_view line) { samples.emplace_back(now, LeadingNanos(line)); });
    }
    raw.join();  // Docker ends the follow once the container exited
    copier.Stop();
    Remove(*id);
    if (file.lines() != lines) return state.SkipWithError(absl::StrCat("the CRI file holds ", file.lines(), " of ", lines, " lines").c_str());
    if (!raw_err.empty()) return state.SkipWithError(("docker raw follow: " + raw_err).c_str());
    if (static_cast<int64_t>(raw_samples.size()) != lines)
      return state.SkipWithError(absl::StrCat("docker raw follow: ", raw_samples.size(), " of ", lines, " lines").c_str());
    std::vector<double> copier_us;
    for (auto [seen, stamped] : samples) {
      if (stamped == 0) return state.SkipWithError("a CRI line without a timestamp");
      Record(source == Source::kFiles ? kLatencyCopier : kLatencyCopierApi, seen, stamped);
      copier_us.push_back(static_cast<double>(seen - stamped) / 1e3);
    }
    for (auto [seen, stamped] : raw_samples) Record(kLatencyDocker, seen, stamped);
    state.SetIterationTime(static_cast<double>(lines) * 0.01);
    if (source == Source::kFiles) bench::SetPercentileCounters(state, copier_us);
   }
   ++round;
  }
}

#define BENCH(fn) BENCHMARK(fn)->UseManualTime()->Unit(benchmark::kMillisecond)
BENCH(BM_Throughput_Live)->Iterations(2);
BENCH(BM_Throughput_Live8)->Iterations(1);
BENCH(BM_Throughput_Exited)->Iterations(3);
BENCH(BM_Latency)->Iterations(1);

// --- Setup, cleanup, tables. -------------------------------------------------------------

void RemoveBenchContainers(dockerclient::DockerClient& docker) {
  bench::RemoveContainersNamed(docker, {kNamePrefix}, "logs_bench");
}

void Cleanup(Env& e) {
  if (e.docker) RemoveBenchContainers(*e.docker);
  e.exited_flood.clear();
  if (!e.dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(e.dir, ec);
    e.dir.clear();
  }
}

std::string Setup(Env& e) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "dsbench.XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return "mkdtemp failed";
  e.dir = tmpl;
  const std::string endpoint = testenv::DockerEndpoint();
  if (!absl::StartsWith(endpoint, "unix://")) return "the raw reads need a unix socket endpoint, not " + endpoint;
  e.socket_path = endpoint.substr(7);
  auto docker = dockerclient::DockerClientImpl::Create(endpoint);
  if (!docker.ok()) return docker.status().ToString();
  e.docker = std::move(*docker);
  auto api = e.docker->Ping(Ctx());
  if (!api.ok()) return "dockerd must run (scripts/test-env.sh): " + api.status().ToString();
  e.api = *api;
  RemoveBenchContainers(*e.docker);  // a killed earlier run
  auto image = e.docker->InspectImage(Ctx(), testenv::BusyboxImage());
  if (!image.ok()) return "the test image " + testenv::BusyboxImage() + " (scripts/test-env.sh): " + image.status().ToString();
  e.dockerd_pid = FindDockerd(e.socket_path);
  e.line_bytes = EnvInt("DSBENCH_LINE_BYTES", 100);
  if (e.line_bytes < 20 || e.line_bytes > kMaxLineBytes) {
    return absl::StrCat("DSBENCH_LINE_BYTES: ", e.line_bytes, " is outside 20..", kMaxLineBytes);
  }
  e.flood_lines = EnvInt("DSBENCH_LOG_MIB", 256) * (1 << 20) / e.line_bytes;
  std::printf("logs_bench: dockerd API %s (pid %d), flood %lld lines of %lld bytes (%.0f MiB)\n", e.api.c_str(),
              e.dockerd_pid, static_cast<long long>(e.flood_lines), static_cast<long long>(e.line_bytes),
              static_cast<double>(e.flood_lines * e.line_bytes) / (1 << 20));
  return "";
}

double Median(std::vector<double> v) { return bench::Percentile(std::move(v), 50); }

void PrintThroughputTable() {
  std::printf("\nThroughput (%lld lines of %lld bytes; MB = 10^6 bytes; medians over runs; cores = CPU s / wall s)\n",
              static_cast<long long>(env->flood_lines), static_cast<long long>(env->line_bytes));
  std::printf("  %-40s %4s %9s %10s %8s %12s %13s %12s\n", "measurement", "runs", "MB/s", "Mlines/s", "wall s",
              "shim cores", "dockerd cores", "poll cores");
  for (const char* key : {"docker alone (no copier), live", "copier (files), live", "copier (API), live",
                          "copier (files), 8 live", "copier (API), 8 live", "copier (files), exited",
                          "copier (API), exited", "docker raw GET, exited"}) {
    auto it = Runs().find(key);
    if (it == Runs().end() || it->second.empty()) {
      std::printf("  %-40s %4s\n", key, "(not run)");
      continue;
    }
    std::vector<double> mbps, lps, wall, cores, dcores, rcores;
    for (const Run& r : it->second) {
      mbps.push_back(static_cast<double>(r.bytes) / kMB / r.wall);
      lps.push_back(static_cast<double>(r.lines) / 1e6 / r.wall);
      wall.push_back(r.wall);
      cores.push_back(r.cores);
      dcores.push_back(r.dockerd_cores);
      rcores.push_back(r.reader_cores);
    }
    std::printf("  %-40s %4zu %9.1f %10.3f %8.2f %12.3f %13.3f %12.3f\n", key, it->second.size(), Median(mbps),
                Median(lps), Median(wall), Median(cores), Median(dcores), Median(rcores));
  }
  std::printf("  (shim cores: this process minus its main thread = the copier's thread; poll cores: the main\n"
              "   thread, which polls the CRI file or, for docker raw GET, reads the socket and counts frames;\n"
              "   docker alone: from the start to the container's exit, no copier, the CRI bytes of a copy)\n");
  auto copier = Runs().find("copier (API), exited"), docker = Runs().find("docker raw GET, exited");
  if (copier != Runs().end() && docker != Runs().end()) {
    std::vector<double> ratio;
    for (std::size_t i = 0; i < std::min(copier->second.size(), docker->second.size()); ++i)
      ratio.push_back(static_cast<double>(copier->second[i].lines) / copier->second[i].wall /
                      (static_cast<double>(docker->second[i].lines) / docker->second[i].wall));
    std::printf("  copier (API) / docker lines per second, exited container, side by side: %.3fx (median)\n", Median(ratio));
  }
  // CPU per MB: the copier's thread, and dockerd's, seconds of CPU per MB of CRI log.
  std::printf("\n  %-40s %14s %14s\n", "CPU per MB (medians)", "copier ms/MB", "dockerd ms/MB");
  for (const char* key : {"copier (files), live", "copier (API), live", "copier (files), 8 live", "copier (API), 8 live",
                          "copier (files), exited", "copier (API), exited"}) {
    auto it = Runs().find(key);
    if (it == Runs().end() || it->second.empty()) continue;
    std::vector<double> copier_ms, dockerd_ms;
    for (const Run& r : it->second) {
      const double mb = static_cast<double>(r.bytes) / kMB;
      copier_ms.push_back(r.cores * r.wall / mb * 1e3);
      dockerd_ms.push_back(r.dockerd_cores * r.wall / mb * 1e3);
    }
    std::printf("  %-40s %14.3f %14.3f\n", key, Median(copier_ms), Median(dockerd_ms));
  }
  for (const auto& [key, target] : std::vector<std::pair<const char*, double>>{
           {"copier (files), live", 100}, {"copier (files), exited", 100}, {"copier (files), 8 live", 200}}) {
    auto it = Runs().find(key);
    if (it == Runs().end() || it->second.empty()) continue;
    std::vector<double> mbps, cores;
    for (const Run& r : it->second) {
      mbps.push_back(static_cast<double>(r.bytes) / kMB / r.wall);
      cores.push_back(r.cores);
    }
    const bool ok = Median(mbps) >= target;
    std::printf("Target (%s): >= %.0f MB/s: %.1f MB/s at %.3f copier cores  %s\n", key, target, Median(mbps),
                Median(cores), ok ? "ok" : "MISSED");
  }
  std::fflush(stdout);
}

void PrintLatencyTargets() {
  auto it = bench::Samples().find(kLatencyCopier);
  auto floor = bench::Samples().find(kLatencyDocker);
  if (it == bench::Samples().end() || it->second.empty()) return;
  const double p99_ms = bench::Percentile(it->second, 99) / 1e3;
  std::printf("Target: write-to-file latency p99 <= 50 ms: copier (files) p50 %.2f ms, p99 %.2f ms, max %.2f ms  %s",
              bench::Percentile(it->second, 50) / 1e3, p99_ms, bench::Percentile(it->second, 100) / 1e3,
              p99_ms <= 50 ? "ok" : "MISSED");
  if (auto api = bench::Samples().find(kLatencyCopierApi); api != bench::Samples().end() && !api->second.empty())
    std::printf(" (copier (API): p50 %.2f ms, p99 %.2f ms)", bench::Percentile(api->second, 50) / 1e3,
                bench::Percentile(api->second, 99) / 1e3);
  if (floor != bench::Samples().end() && !floor->second.empty())
    std::printf(" (Docker's own: p50 %.2f ms, p99 %.2f ms)", bench::Percentile(floor->second, 50) / 1e3,
                bench::Percentile(floor->second, 99) / 1e3);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  common::SetLogLevel(common::LogLevel::kWarning);
  Env e;
  env = &e;
  if (std::string err = Setup(e); !err.empty()) {
    std::fprintf(stderr, "logs_bench: setup: %s\n", err.c_str());
    Cleanup(e);
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  Cleanup(e);

  PrintThroughputTable();
  bench::PrintLatencyTable("Write-to-file latency (now - Docker's timestamp of the line)");
  PrintLatencyTargets();
  return 0;
}
